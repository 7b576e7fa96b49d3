"""The kit's step-discipline property (tutor.kit.step_discipline): a step whose state grows by
one token a call, used as a caller uses it. The step here keeps every token so far (a pair of
tensors, the second twice the first) and outputs their sum, whose full pass is cumsum: the
property knows nothing of attention. A right step passes; each wrong one fails its check."""

from __future__ import annotations

import types

import torch
from verdict_kit import failed

from tutor.kit import (
    DISCIPLINE_KEYS,
    Verdict,
    judge_step_discipline,
    judged,
    msg,
    probe_step_discipline,
    state_growth_fault,
)
from tutor.kit.probe_tools import ProbeContext

X = torch.arange(1.0, 13.0).reshape(2, 6, 1)
OTHER = -torch.arange(1.0, 13.0).reshape(2, 6, 1)
BRANCH = [torch.full((2, 1, 1), 100.0), torch.full((2, 1, 1), 200.0)]
KEYS = {role: f"check.{role}" for role in (*DISCIPLINE_KEYS, "raised", "returns", "state_got")}


def context() -> ProbeContext:
    return ProbeContext(types.ModuleType("learner"), "learner.py", "", None)


def right(x_t, state=None):
    s = x_t if state is None else torch.cat([state[0], x_t], dim=1)
    return s.sum(1, keepdim=True), (s, 2 * s)


def no_concat(x_t, state=None):
    return x_t.clone(), (x_t, 2 * x_t)


class Kept:
    """Keeps its own tokens and ignores the state it is given: right for one sequence alone."""

    def __init__(self):
        self.s = None

    def __call__(self, x_t, state=None):
        self.s = x_t if self.s is None or state is None else torch.cat([self.s, x_t], dim=1)
        return self.s.sum(1, keepdim=True), (self.s.clone(), 2 * self.s)


def into_state(x_t, state=None):
    """Right, but scales the second tensor of the state it was given in place."""
    out = right(x_t, state)
    if state is not None:
        state[1].mul_(0.5)
    return out


def judge(step, keys: dict | None = KEYS, state_shape=None) -> Verdict:
    out = probe_step_discipline(context(), step, X, OTHER, BRANCH, branch_from=3)

    def case(v):
        judge_step_discipline(
            v,
            out,
            X,
            OTHER,
            BRANCH,
            lambda x: x.cumsum(1),
            branch_from=3,
            keys=keys,
            likely={
                "raised": lambda e: msg("likely.raised"),
                "state_pair": msg("likely.pair"),
                "growth": lambda fault, steps, t: msg(f"likely.{fault}"),
                "mutated": lambda i: msg("likely.mutated"),
                "reused": lambda: msg("likely.reused"),
                "loop_values": msg("likely.loop"),
                "kept": lambda call: msg("likely.kept"),
            },
            names=("x", "a", "b"),
            fn="step",
            state_axis=1,
            state_rank=3,
            state_shape=state_shape,
        )

    return judged("", case)


def test_a_right_step_passes_every_check():
    v = judge(right)
    assert v.passed()
    assert {c.id for c in v.checks} >= {"shape", "inputs-unchanged", "call-again", "dropout"}


def test_a_state_that_does_not_grow_fails_growth_with_its_fault():
    v = judge(no_concat)
    assert failed(v) == ("shape", "check.growth")
    assert v.failed_message()["params"]["likely"]["key"] == "likely.not_appended"


def test_a_state_kept_on_the_object_fails_the_new_sequence():
    assert failed(judge(Kept())) == ("call-again", "check.branch")


def test_a_step_writing_into_its_state_fails_inputs_unchanged():
    v = judge(into_state)
    assert failed(v) == ("inputs-unchanged", "check.mutated")
    assert v.failed_message()["params"]["name"] == "b"


def test_a_step_that_raises_or_returns_no_state_stops_the_step():
    def raises(x_t, state=None):
        if state is not None:
            raise RuntimeError("no")
        return right(x_t)

    assert failed(judge(raises)) == ("runs", "check.raised")
    assert failed(judge(lambda x_t, state=None: (x_t, None))) == ("returns", "check.returns")


def test_growth_fault_names_the_last_tensor_left_behind():
    steps = [{"value": right(X[:, :1])}]
    assert state_growth_fault(steps, 0, [1], 0) == "last_behind"
    assert state_growth_fault(steps, 0, [1, 1], 1) == "not_appended"


def test_without_keys_the_engine_words_it_with_the_states_names():
    v = judge(no_concat, keys=None)
    assert failed(v) == ("shape", "check.steps_growth")
    params = v.failed_message()["params"]
    assert (params["first"], params["final"]) == ("a", "b")
    assert failed(judge(Kept(), keys=None)) == ("call-again", "check.steps_branch")
    v = judge(into_state, keys=None)
    assert failed(v) == ("inputs-unchanged", "check.steps_mutated")
    assert v.failed_message()["params"]["fn"] == "step"


def test_the_engine_words_are_in_both_catalogs():
    from tutor.kit.step_discipline import DISCIPLINE_WORDS
    from tutor.text.i18n import engine_catalog

    assert set(DISCIPLINE_WORDS) == set(DISCIPLINE_KEYS)
    for lang in ("en", "zh"):
        assert set(DISCIPLINE_WORDS.values()) <= set(engine_catalog(lang))


def test_given_the_states_shape_the_kit_names_the_growth_fault():
    def shape(n):
        return (2, n, 1)

    likely = judge(no_concat, state_shape=shape).failed_message()["params"]["likely"]
    assert likely == msg("likely.state_not_appended", axis=1, first="a", final="b", state="a, b")

    def sideways(x_t, state=None):  # the tokens kept on the last axis: (B, 1, t + 1)
        s = x_t.transpose(1, 2) if state is None else torch.cat([state[0], x_t.mT], dim=2)
        return s.sum(2, keepdim=True).mT, (s, 2 * s)

    likely = judge(sideways, state_shape=shape).failed_message()["params"]["likely"]
    assert likely["key"] == "likely.state_layout"
    # Without it, the lesson's likely for each fault.
    assert judge(no_concat).failed_message()["params"]["likely"] == msg("likely.not_appended")
