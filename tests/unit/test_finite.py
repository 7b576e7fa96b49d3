"""The kit's finite checks: a NaN fails finite (at its index), a wrong value fails values, and on
the large-scores call both are said inside the lesson's large-scores key."""

from __future__ import annotations

import torch

from tutor.kit import Stop, Verdict, judge_large_output, msg, require_finite, require_finite_close


def run(judge, *args, **how) -> Verdict:
    v = Verdict()
    try:
        judge(v, *args, **how)
    except Stop:
        pass
    return v


def test_a_nan_fails_finite_at_its_index():
    t = torch.zeros(2, 3)
    assert run(require_finite, "out", t, likely=msg("likely.x")).passed()
    t[1, 2] = float("nan")
    v = run(require_finite, "out", t, likely=msg("likely.x"))
    assert v.failed_message()["key"] == "check.not_finite"
    assert v.failed_message()["params"]["where"] == "(1, 2)"


def test_finite_then_close():
    want = torch.ones(2, 3)
    assert run(require_finite_close, "y", want.clone(), want).passed()
    assert run(require_finite_close, "y", want * 2, want).failed_message()["key"] == "check.values"


def test_the_large_scores_call_is_said_inside_the_lessons_key():
    want = torch.ones(2, 3)
    how = dict(fn="forward", what="forward(x)", key="lesson.large")
    assert run(judge_large_output, {"value": want.clone()}, want, **how).passed()
    v = run(judge_large_output, {"value": want * float("nan")}, want, **how)
    assert v.failed_message()["key"] == "lesson.large"
    assert v.failed_message()["params"]["reason"]["key"] == "check.not_finite"
