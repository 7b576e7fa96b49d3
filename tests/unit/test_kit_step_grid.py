"""The kit's step-call property (tutor.kit.step_grid): one call of a step with state, given the
token at t and the state of the t before it, against the reference's output and state, over a
grid of sizes and past lengths. The step keeps every token so far (a pair: the tokens and twice
them) and outputs their sum: the property knows nothing of attention."""

from __future__ import annotations

import types

import torch
from verdict_kit import failed

from tutor.kit import (
    STEP_CALL_KEYS,
    Verdict,
    judge_step_call,
    judged,
    msg,
    probe_step_grid,
    step_call,
)
from tutor.kit.probe_tools import ProbeContext

XS = [torch.arange(1.0, 13.0).reshape(2, 6, 1), torch.arange(1.0, 4.0).reshape(1, 3, 1)]
KEYS = {role: f"check.{role}" for role in STEP_CALL_KEYS}


def context() -> ProbeContext:
    return ProbeContext(types.ModuleType("learner"), "learner.py", "", None)


def right(x_t, state=None):
    s = x_t if state is None else torch.cat([state[0], x_t], dim=1)
    return s.sum(1, keepdim=True), (s, 2 * s)


def no_concat(x_t, state=None):
    return right(x_t, state)[0], (x_t, 2 * x_t)


def state_only_first(x_t, state=None):
    out, s = right(x_t, state)
    return out, s[:1]


def prepended(x_t, state=None):
    s = x_t if state is None else torch.cat([x_t, state[0]], dim=1)
    return s.sum(1, keepdim=True), (s, 2 * s)


def off_by_one(x_t, state=None):
    out, s = right(x_t, state)
    return out + 1, s


def raises(x_t, state=None):
    if state is not None:
        raise RuntimeError("no cache")
    return right(x_t)


def judge(step, keys: dict | None = KEYS, state_axis: int = 1) -> Verdict:
    """The step over every past length of each size, judged until the first failure."""
    ctx = context()

    def call(_obj, i, t, primary):
        x = XS[i]
        return step_call(ctx, step, x, (x, 2 * x), t, primary=primary, state_axis=1)

    out = probe_step_grid(ctx, lambda i: (step, {}), call, [range(6), range(3)])

    def case(v):
        for got, x in zip(out, XS, strict=True):
            for t, c in enumerate(got["calls"]):
                want = (x[:, : t + 1], 2 * x[:, : t + 1])
                judge_step_call(
                    v,
                    c,
                    t,
                    x.cumsum(1)[:, t : t + 1],
                    want,
                    fn="step",
                    keys=keys,
                    likely={
                        "raised": lambda e: msg("likely.raised"),
                        "returns": msg("likely.returns"),
                        "state_pair": msg("likely.pair"),
                        "out_shape": lambda o: msg("likely.out_shape"),
                        "state_shape": msg("likely.state_shape"),
                        "out_values": lambda o: msg("likely.out_values"),
                        "state_values": msg("likely.state_values"),
                    },
                    names=("a", "b"),
                    state_axis=state_axis,
                )

    return judged("", case)


def test_a_right_step_passes():
    v = judge(right)
    assert v.passed()
    assert {c.id for c in v.checks} == {
        "returns",
        "shape",
        "dtype",
        "finite",
        "matches-pytorch",
        "values",
    }


def test_each_wrong_step_fails_its_own_check():
    assert failed(judge(no_concat)) == ("shape", "check.state_shape")
    assert failed(judge(state_only_first)) == ("returns", "check.returns")
    assert failed(judge(off_by_one)) == ("matches-pytorch", "check.out_values")
    assert failed(judge(prepended)) == ("values", "check.state_values")
    assert failed(judge(raises)) == ("runs", "check.raised")


def test_the_state_is_cut_to_t_and_the_first_call_has_none():
    seen = []

    def spy(x_t, state=None):
        seen.append(None if state is None else tuple(s.shape[1] for s in state))
        return right(x_t, state)

    x = XS[0]
    for t in range(3):
        step_call(context(), spy, x, (x, 2 * x), t, state_axis=1)
    assert seen == [None, (1, 1), (2, 2)]
    assert step_call(context(), None, x, (x,), 1) is None


def test_without_keys_the_engine_words_it_with_the_steps_names():
    v = judge(no_concat, keys=None)
    assert failed(v) == ("shape", "check.step_call_state_shape")
    v = judge(state_only_first, keys=None)
    assert failed(v) == ("returns", "check.step_call_returns")
    assert v.failed_message()["params"]["fn"] == "step"
    assert v.failed_message()["params"]["state"] == "a, b"
    v = judge(raises, keys=None)
    assert failed(v) == ("runs", "check.step_call_raised")
    assert v.failed_message()["params"]["fn"] == "step"
    assert failed(judge(off_by_one, keys=None)) == ("matches-pytorch", "check.step_call_values")


def test_the_engine_words_are_in_both_catalogs():
    from tutor.kit.step_grid import STEP_CALL_WORDS
    from tutor.text.i18n import engine_catalog

    assert set(STEP_CALL_WORDS) == set(STEP_CALL_KEYS)
    for lang in ("en", "zh"):
        assert set(STEP_CALL_WORDS.values()) <= set(engine_catalog(lang))


def test_a_wrong_state_is_said_by_its_fault_along_the_state_axis():
    likely = judge(no_concat).failed_message()["params"]["likely"]
    assert likely == msg("likely.state_not_appended", axis=1, first="a", final="b", state="a, b")
    likely = judge(prepended).failed_message()["params"]["likely"]
    assert likely["key"] == "likely.state_prepended"
    # Along another axis the faults do not hold: the lesson's own likely says it.
    assert judge(no_concat, state_axis=2).failed_message()["params"]["likely"] == msg(
        "likely.state_shape"
    )
