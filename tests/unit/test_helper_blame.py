"""The kit's helper blame: a composed function that calls the learner's own helpers is run with
the reference's helpers in place; when it is right so, the first wrong helper is the step to
fix, and a function right only with the learner's wrong helper is caught."""

from __future__ import annotations

import contextlib
import types

import torch

from tutor.kit import (
    Stop,
    Verdict,
    blame_helpers,
    first_wrong_helper,
    helper_verdicts,
    judge_helpers_replaced,
    judged,
    msg,
    probe_helper_calls,
    probe_helpers_replaced,
    require_close,
    with_args,
)
from tutor.kit.probe_tools import ProbeContext

SOURCE = """
def double(value):
    return value * 3  # wrong: the reference doubles


def compose(x):
    return double(value=x) + 1  # right with a right double


def compensate(x):
    return double(x) - x + 1  # right only with this double
"""

STAND_INS = {"double": (lambda x: x * 2, ("x",))}
X = torch.arange(4.0)


def context() -> ProbeContext:
    module = types.ModuleType("learner")
    exec(compile(SOURCE, "learner.py", "exec"), module.__dict__)
    return ProbeContext(module, "learner.py", SOURCE, None)


def judge_compose(v: Verdict, call: dict, x: torch.Tensor) -> None:
    require_close(v, "values", "compose(x)", call["value"], 2 * x + 1, likely=msg("likely.unknown"))


def judge_double(v: Verdict, call: dict, x: torch.Tensor) -> None:
    require_close(v, "values", "double(x)", call["value"], 2 * x)


def probe(name: str) -> tuple[Verdict | None, dict]:
    ctx = context()
    (alone,) = probe_helpers_replaced(ctx, ctx.get(name), [(X,)], STAND_INS)
    (parts,) = probe_helper_calls(ctx, [{"double": (X,)}])
    replaced = judged(SOURCE, judge_compose, with_args(alone, X), X) if alone else None
    return replaced, parts


JUDGES = {"double": lambda c: judged(SOURCE, judge_double, c, X)}


def test_a_right_function_over_a_wrong_helper_blames_the_helper():
    replaced, parts = probe("compose")
    assert replaced is not None and replaced.passed()  # the keyword call reached the stand-in
    assert first_wrong_helper(replaced, parts, JUDGES) == msg(
        "likely.helper_first_fix", fn="double"
    )
    v = Verdict(SOURCE)
    with contextlib.suppress(Stop):
        judge_compose(v, context().call(context().get("compose"), X), X)
    blame_helpers(v, 0, lambda: first_wrong_helper(replaced, parts, JUDGES))
    assert v.checks[0].message.params["likely"]["key"] == "likely.helper_first_fix"
    v = Verdict(SOURCE)
    judge_helpers_replaced(v, replaced)
    assert [(c.id, c.status) for c in v.checks] == [("helpers-replaced", "pass")]


def test_a_function_that_makes_up_for_its_helper_fails_with_correct_helpers():
    replaced, parts = probe("compensate")
    assert replaced is not None and not replaced.passed()
    assert first_wrong_helper(replaced, parts, JUDGES) is None  # the function itself is at fault
    v = Verdict(SOURCE)
    judge_helpers_replaced(v, replaced)
    (check,) = v.checks
    assert check.status == "fail" and check.message.key == "check.helpers_replaced"
    assert check.message.params["reason"]["params"]["likely"] == msg("likely.compensates_helper")


def test_the_learners_helpers_are_back_after_the_calls():
    ctx = context()
    before = ctx.module.double
    probe_helpers_replaced(ctx, ctx.get("compose"), [(X,)], STAND_INS)
    assert ctx.module.double is before
    assert probe_helpers_replaced(
        ctx, ctx.get("compose"), [(X,)], {"absent": STAND_INS["double"]}
    ) == [None]
    v = Verdict(SOURCE)
    judge_helpers_replaced(v, None)
    assert v.checks == []


def test_helper_blame_gives_each_cases_verdict_and_culprit_once():
    ctx = context()
    alone, parts = [], []
    for name in ("compose", "compensate"):
        alone += probe_helpers_replaced(ctx, ctx.get(name), [(X,)], STAND_INS)
        parts += probe_helper_calls(ctx, [{"double": (X,)}])
    asked = []

    def judges_of(x):
        asked.append(x)
        return JUDGES

    replaced, blame = helper_verdicts(
        SOURCE, alone + [None], parts + [{}], [X, X, X], judge_compose, lambda x: (x,), judges_of
    )
    assert blame(0) == msg("likely.helper_first_fix", fn="double") and replaced(0).passed()
    assert blame(0) is blame(0) and len(asked) == 1  # computed once
    assert blame(1) is None and not replaced(1).passed()  # the function itself is at fault
    assert replaced(2) is None and blame(2) is None  # no helper to replace
