"""A learner function that, each time it is called, takes the lesson's reference from the
checks module (through the frames above it) and returns what that computes: the step must
fail, whichever way the lesson's probe was written (a function of checks.py or a kit
property's; kit/borrowed.py watches the checks' file, not the probe's)."""

from __future__ import annotations

import pytest
from reliability_kit import summary, with_code

FIND = """
import sys as _sys

def _checks():
    _f = _sys._getframe(1)
    while _f is not None and "checks_module" not in _f.f_locals:  # the child's _run
        _f = _f.f_back
    return vars(_f.f_locals["checks_module"])
"""

BORROWING = {
    "lab-02": (
        FIND
        + """
def scaled_scores(q, k):
    return _checks()["ref_scores"](q, k)
""",
        "scores",
    ),
    "lm3-l3": (
        FIND
        + """
def causal_attention(x, Wq, Wk, Wv):
    return _checks()["reference_single"](x, Wq, Wk, Wv)
""",
        "single-head",
    ),
}


@pytest.mark.parametrize("lesson", list(BORROWING))
def test_a_function_that_calls_the_checks_reference_fails(live, lesson):
    code, step = BORROWING[lesson]
    run = live.run(lesson, with_code(code, lesson), steps=[step])
    r = run.results[step]
    failing = [c.id for c in r.checks if c.status != "pass"]
    assert r.status == "fail" and failing, summary(run.results)
    assert {"own-formula", "own-code"} & set(failing), summary(run.results)
