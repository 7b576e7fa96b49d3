"""The kit's SizedFunction: a function judged on cases of several sizes, its inputs left
unchanged, called again on new values, its code its own; right code passes, each kind of
wrong code fails the check that names it."""

from __future__ import annotations

import contextlib
import types

import pytest
import torch

from tutor.kit import Helpers, SizedFunction, Verdict, require_close, require_tensor
from tutor.kit.judge_tools import Stop
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.spec import JudgeContext

RIGHT = """
def double(x):
    return x * 2
"""
WRONG_PAST_FOUR = """
def double(x):
    return x * 2 if x.shape[-1] <= 4 else x * 3
"""
IN_PLACE = """
def double(x):
    return x.mul_(2)
"""
KEEPS_FIRST = """
KEPT = {}


def double(x):
    if x.shape not in KEPT:
        KEPT[x.shape] = x * 2
    return KEPT[x.shape]
"""


def doubled(v, y, x):
    y = require_tensor(v, "shape", DOUBLE.what, y, x.shape)
    require_close(v, "values", DOUBLE.what, y, x * 2)


DOUBLE = SizedFunction(
    "double", ("x",), lambda case: (case,), doubled, lambda c: f"n={c.shape[-1]}"
)
CASES = [torch.arange(4.0), torch.arange(7.0), torch.ones(2, 9)]
AGAIN = torch.arange(4.0) + 10


def verdict(source: str, function: SizedFunction = DOUBLE) -> Verdict:
    module = types.ModuleType("learner")
    exec(compile(source, "learner.py", "exec"), module.__dict__)
    step = function.step(lambda i: i["cases"], lambda i: i["again"])
    inputs = {"cases": [c.clone() for c in CASES], "again": AGAIN.clone()}
    outputs = step.probe(ProbeContext(module, "learner.py", source, None), inputs)
    v = Verdict(source)
    with contextlib.suppress(Stop):
        step.judge(v, outputs, {"cases": CASES, "again": AGAIN}, JudgeContext(source, []))
    return v


def failed(v: Verdict) -> list[str]:
    return [c.id for c in v.checks if c.status != "pass"]


def test_right_code_passes_every_check():
    v = verdict(RIGHT)
    checks = {c.id for c in v.checks}
    assert v.passed() and {"values", "inputs-unchanged", "other-sizes", "call-again"} <= checks
    assert "own-formula" in checks


@pytest.mark.parametrize(
    ("source", "check"),
    [(WRONG_PAST_FOUR, "other-sizes"), (IN_PLACE, "inputs-unchanged"), (KEEPS_FIRST, "call-again")],
)
def test_each_wrong_code_fails_its_check(source, check):
    assert check in failed(verdict(source))


def test_named_calls_are_judged_each_and_the_step_declares_its_function():
    def judged_by_name(v, y, x, name="plain"):
        seen.append(name)
        doubled(v, y, x)

    seen: list[str] = []
    named = SizedFunction(
        "double",
        ("x",),
        lambda case: {"plain": (case,), "negated": (-case,)},
        judged_by_name,
        str,
        own_formula=False,
    )
    v = verdict(RIGHT, named)
    assert v.passed() and seen[:2] == ["plain", "negated"]
    assert "own-formula" not in {c.id for c in v.checks}
    step = named.step(list, list)
    assert step.functions == ("double",) and step.own_formula is None
    assert not verdict(WRONG_PAST_FOUR, named).passed()


def test_a_helpers_judge_takes_the_arguments_the_call_was_sent_without():
    judge = DOUBLE.helper_judge("", (torch.ones(3),))
    assert judge({"value": torch.full((3,), 2.0)}).passed()
    assert not judge({"value": torch.full((3,), 3.0)}).passed()


COMPOSED = """
def inc(x):
    return x + {step}


def twice_inc(x):
    return {body}
"""


def inc_right(v, y, x):
    require_close(v, "values", "inc(x)", require_tensor(v, "shape", "inc(x)", y, x.shape), x + 1)


def twice_inc_right(v, y, x):
    y = require_tensor(v, "shape", "twice_inc(x)", y, x.shape)
    require_close(v, "values", "twice_inc(x)", y, (x + 1) * 2)


INC = SizedFunction("inc", ("x",), lambda case: (case,), inc_right, str)
TWICE = SizedFunction("twice_inc", ("x",), lambda case: (case,), twice_inc_right, str)


def composed_verdict(step: int, body: str) -> Verdict:
    source = COMPOSED.format(step=step, body=body)
    module = types.ModuleType("learner")
    exec(compile(source, "learner.py", "exec"), module.__dict__)
    ctx = ProbeContext(module, "learner.py", source, None)
    helpers = Helpers((INC,), {"inc": (lambda x: x + 1, ("x",))}, lambda case: {"inc": (case,)})
    outputs = TWICE.probe_composed(ctx, CASES, AGAIN, helpers)
    v = Verdict(source)
    with contextlib.suppress(Stop):
        jctx = JudgeContext(source, [])
        TWICE.judge_composed(v, outputs, CASES, AGAIN, jctx, helpers)
    return v


def test_a_composed_function_is_right_with_right_helpers_and_blames_a_wrong_one():
    assert composed_verdict(1, "inc(x) * 2").passed()
    blamed = composed_verdict(2, "inc(x) * 2")
    assert failed(blamed)[0] == "values"
    assert blamed.failed_message()["params"]["likely"] == {
        "key": "likely.helper_first_fix",
        "params": {"fn": "inc"},
    }
    # Right only because it makes up for its wrong helper: wrong with the reference's.
    assert failed(composed_verdict(2, "(inc(x) - 1) * 2")) == ["helpers-replaced"]


def test_the_other_sizes_of_a_composed_function_name_the_wrong_helper_through_explain():
    source = COMPOSED.format(step="(1 if x.shape[-1] <= 4 else 2)", body="inc(x) * 2")
    module = types.ModuleType("learner")
    exec(compile(source, "learner.py", "exec"), module.__dict__)
    ctx = ProbeContext(module, "learner.py", source, None)
    helpers = Helpers((INC,), {"inc": (lambda x: x + 1, ("x",))}, lambda case: {"inc": (case,)})
    naming = lambda fn, outputs, first=None: lambda i, sub, src: first(i)  # noqa: E731
    twice = SizedFunction("twice_inc", ("x",), lambda case: (case,), twice_inc_right, str, naming)
    outputs = twice.probe_composed(ctx, CASES, AGAIN, helpers)
    v = Verdict(source)
    with contextlib.suppress(Stop):
        twice.judge_composed(v, outputs, CASES, AGAIN, JudgeContext(source, []), helpers)
    assert failed(v) == ["other-sizes"]
    said = v.failed_message()["params"]
    blamed = {"key": "likely.helper_first_fix", "params": {"fn": "inc"}}
    assert blamed in (said["likely"], said["reason"]["params"].get("likely"))
