"""The worker with each Linux-only protection turned off (ATTN_TUTOR_DISABLE), and with all of
them off at once: the code paths a platform without them takes (macOS, an old kernel, another
architecture). Every case still judges: a correct file passes, a wrong one fails, a loop times
out, and the ready event names what is off."""

from __future__ import annotations

import pytest
from reliability_kit import (
    CHECKED,
    STEP_TIMEOUT,
    UNMASKED,
    LiveWorker,
    first_message,
    summary,
    with_code,
)

from tutor.engine.confine.platform_probe import DISABLE_ENV, NAMES

LM3 = "lm3-l3"
# A case's four tests in one xdist process: each process would start its own worker for it.
CASES = [
    pytest.param(c, id="all" if "," in c else c, marks=pytest.mark.xdist_group(f"off-{c}"))
    for c in [*NAMES, ",".join(NAMES)]
]


@pytest.fixture(scope="module", params=CASES)
def without(request):
    lw = LiveWorker(STEP_TIMEOUT, env={DISABLE_ENV: request.param}, warm=True)
    lw.start()
    try:
        yield request.param.split(","), lw
    finally:
        lw.close()


def test_the_ready_event_names_what_is_off(without):
    off, lw = without
    with lw.lock:
        ready = next(e for e in lw.events if e.type == "ready")
    assert set(off) <= set(ready.off), ready


def test_a_correct_file_passes(without):
    _, lw = without
    run = lw.run(LM3, with_code(""))
    assert [run.results[s].status for s in CHECKED[LM3]] == ["pass"] * 4, summary(run.results)


def test_a_wrong_file_fails(without):
    _, lw = without
    run = lw.run(LM3, with_code(UNMASKED), steps=["single-head", "leakage"])
    assert all(r.status == "fail" for r in run.results.values()), summary(run.results)


def test_a_loop_times_out(without):
    _, lw = without
    run = lw.run(LM3, with_code("while True:\n    pass"), steps=["shapes"])
    r = run.results["shapes"]
    assert r.status == "timeout" and first_message(r).key == "failure.timeout", summary(run.results)
    assert run.arrived["shapes"] <= STEP_TIMEOUT + 1.0, run.arrived
