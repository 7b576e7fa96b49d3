"""The kit's named shapes over a grid of sizes (probe_named_shapes, judge_named_shapes_at), on a
function of the test's own: {stage: shape} for a linear layer's input and output."""

from __future__ import annotations

import contextlib
import types

from tutor.kit import (
    Stop,
    Verdict,
    judge_named_shapes_at,
    msg,
    probe_named_shapes,
)
from tutor.kit.probe_tools import ProbeContext

SOURCE = """
def shapes(B, T, d):
    return {"x": (B, T, d), "y": (B, T, 2 * d)}


def lab_only(B, T, d):
    return {"x": (B, T, d), "y": (2, 6, 16)}


def swapped(B, T, d):
    return {"x": (T, B, d), "y": (B, T, 2 * d)}
"""
SIZES = [(2, 6, 8), (3, 5, 4)]


def truth(B, T, d):
    return {"x": (B, T, d), "y": (B, T, 2 * d)}


def judged(name: str) -> Verdict:
    module = types.ModuleType("learner")
    exec(compile(SOURCE, "learner.py", "exec"), module.__dict__)
    outputs = probe_named_shapes(ProbeContext(module, "learner.py", SOURCE, None), name, SIZES)
    v = Verdict(SOURCE)
    with contextlib.suppress(Stop):
        judge_named_shapes_at(
            v,
            outputs,
            fn=name,
            sizes=SIZES,
            names=("B", "T", "d"),
            truth=truth,
            likely=lambda key, got, size: msg("lesson.shape", stage=key, B=size[0]),
        )
    return v


def first_failure(v: Verdict):
    bad = [c for c in v.checks if c.status == "fail"]
    return (bad[0].id, bad[0].message.key) if bad else None


def test_shapes_right_at_every_size_pass():
    v = judged("shapes")
    assert v.passed() and {c.id for c in v.checks} >= {"values", "other-sizes"}


def test_the_labs_shapes_written_in_fail_at_the_next_size():
    assert first_failure(judged("lab_only")) == ("other-sizes", "check.other_sizes")


def test_a_wrong_shape_at_the_labs_size_is_said_with_the_lessons_likely():
    v = judged("swapped")
    assert first_failure(v) == ("values", "check.shapes_value")
    assert v.failed_message()["params"]["likely"] == msg("lesson.shape", stage="x", B=2)
