"""A correct file that prints a lot still passes (issue #13): output is for the learner's
eyes and only its tail is kept, so its volume must not change a verdict.

Every function of the reference solutions prints 5 MB a call, as debugging output can: the
leakage step calls causal_attention a dozen times (~60 MB through the child's pipe), lab-02's
output step ~100 MB. Read only at the worker's 50 ms ticks, that took the leakage step past
its time limit every time. This worker has the default time limit (the CLI's and the app's),
not the reliability workers' short one, and is new: no run before has flooded, so each
lesson's run starts with the output read at ticks, as a learner's first save does.
"""

from __future__ import annotations

import ast

import pytest
from reliability_kit import CHECKED, REFERENCE, STEP_TIMEOUT, LiveWorker, summary, with_code

from tutor.engine.client import DEFAULT_TIMEOUT
from tutor.engine.output_capture import (
    DRAIN_CAP,
    FLOOD_BUDGET,
    OUTPUT_PIPE,
    OUTPUT_TAIL,
    READ_SIZE,
)
from tutor.engine.supervisor import TICK

# The module's worker (or graded class) is made once: its tests run in one xdist process.
pytestmark = pytest.mark.xdist_group("test_big_output")

PER_CALL = 5_000_000


def with_prints(source: str, nbytes: int) -> str:
    """The source with `print("x" * nbytes)` as the first line of every function and method."""
    lines = source.splitlines(keepends=True)
    firsts = sorted(
        (
            (node.body[0].lineno, node.body[0].col_offset)
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef)
        ),
        reverse=True,
    )
    for lineno, col in firsts:
        lines.insert(lineno - 1, " " * col + f'print("x" * {nbytes})\n')
    return "".join(lines)


@pytest.fixture(scope="module")
def default_live():
    lw = LiveWorker(DEFAULT_TIMEOUT, warm=True)
    lw.start()
    try:
        yield lw
    finally:
        lw.close()


def test_every_function_of_the_test_files_prints():
    source = with_prints(REFERENCE["lm3-l3"], PER_CALL)
    assert (
        source.count(f'print("x" * {PER_CALL})') == 4
    )  # causal_attention, __init__, forward, expected_shapes
    # the four functions and the three exercises
    assert with_prints(REFERENCE["lab-02"], PER_CALL).count("print(") == 7


# kv-cache's generate calls the learner's forward_cached once per token, hundreds of times a step:
# 5 MB each is a flood (the flood cases below), not a correct file that prints a lot.
# lab-02's output step now calls attention 18 times (the training story, inputs 1,000 times
# larger): 360 MB at 5 MB a call, 6.4 s against the 3 s limit. A known regression of issue 25's
# checks, to be won back under issue 31; strict, so the test says when it is fixed.
SLOWER_NOW = pytest.mark.xfail(
    strict=True, reason="lab-02 output: 18 calls x 20 MB of prints, 6.4 s > 3 s (issue 31)"
)


@pytest.mark.parametrize(
    "lesson",
    [
        pytest.param(lesson, marks=[SLOWER_NOW] if lesson == "lab-02" else [])
        for lesson in CHECKED
        if lesson != "kv-cache"
    ],
)
def test_a_correct_file_that_prints_5_mb_a_call_passes_every_checked_step(default_live, lesson):
    run = default_live.run(lesson, with_prints(REFERENCE[lesson], PER_CALL))
    report = summary(run.results)
    assert set(run.results) == set(CHECKED[lesson]), report
    for step in CHECKED[lesson]:
        r = run.results[step]
        assert r.status == "pass", f"{step}: {r.status} after {r.ms} ms\n{report}"
        # Each step shows the tail of its own output and says how much came before it.
        assert len(r.output) == OUTPUT_TAIL and set(r.output) == {"x", "\n"}, report
        assert (
            r.output_dropped >= PER_CALL - OUTPUT_TAIL
            and (r.output_dropped + OUTPUT_TAIL) % (PER_CALL + 1) == 0
        ), (step, r.output_dropped)


def test_a_writer_that_never_stops_is_read_at_pipe_speed_only_up_to_the_steps_budget(live):
    # A thread writing for ever, started by each step's import; the shapes step lasts ~1.2 s.
    # Past FLOOD_BUDGET the worker reads at ticks again, at most a drain (DRAIN_CAP, plus what
    # the child wrote meanwhile) each: without the budget it read ~1.5 GB a step here, a core's work.
    run = live.run(
        "lm3-l3",
        with_code("""
        import os, threading, time

        def _flood():
            while True:
                os.write(1, b"x" * (1 << 20))

        threading.Thread(target=_flood, daemon=True).start()
        _original = expected_shapes

        def expected_shapes(B, T, H, hd):
            time.sleep(0.4)
            return _original(B, T, H, hd)
        """),
    )
    assert all(r.status == "pass" for r in run.results.values()), summary(run.results)
    per_tick = DRAIN_CAP + READ_SIZE
    for r in run.results.values():
        assert (
            r.output_dropped + len(r.output)
            <= FLOOD_BUDGET + (STEP_TIMEOUT / TICK + 2) * per_tick + OUTPUT_PIPE
        ), (r.id, r.output_dropped)
