"""The kit's generation-loop property (tutor.kit.generation_loop): a learner's loop feeding an
object's step method token by token. The step keeps every token so far (a pair: the tokens and
twice them) and outputs their sum, the full pass is cumsum: the property knows nothing of
attention. A right loop passes; a loop that feeds its step wrongly fails with the lesson's word
for the fault; a right loop on a wrong step is blamed on the step."""

from __future__ import annotations

import types

import torch

from tutor.kit import (
    GENERATION_KEYS,
    Verdict,
    judge_generation_call,
    judge_loop_again,
    judged,
    msg,
    probe_generation,
)
from tutor.kit.probe_tools import ProbeContext

XS = [torch.arange(1.0, 13.0).reshape(2, 6, 1), torch.arange(1.0, 4.0).reshape(1, 3, 1)]
AGAIN = -XS[0]
KEYS = {role: f"check.{role}" for role in GENERATION_KEYS}
WORDS = {
    f: f"likely.{f}"
    for f in (
        "recompute_full",
        "recompute",
        "call_count",
        "first_not_empty",
        "state_not_passed",
        "state_not_passed_back",
        "token_shape",
        "token_order",
    )
}


def right(x_t, state=None):
    s = x_t if state is None else torch.cat([state[0], x_t], dim=1)
    return s.sum(1, keepdim=True), (s, 2 * s)


def wrong_step(x_t, state=None):
    out, s = right(x_t, state)
    return out + 1, s


class Obj:
    """The step is a method of the class, as a layer's forward_cached is: the recorder wraps it."""

    def step(self, x_t, state=None):
        return right(x_t, state)

    def forward(self, x):
        return x.cumsum(1)


class WrongObj(Obj):
    def step(self, x_t, state=None):
        return wrong_step(x_t, state)


def good_loop(obj, x):
    outs, state = [], None
    for t in range(x.shape[1]):
        out, state = obj.step(x[:, t : t + 1], state)
        outs.append(out)
    return torch.cat(outs, dim=1), state


def no_state_loop(obj, x):
    outs, state = [], None
    for t in range(x.shape[1]):
        out, state = obj.step(x[:, t : t + 1], None)
        outs.append(out)
    return torch.cat(outs, dim=1), state


def judge(loop, cls=Obj, keys: dict | None = KEYS, words: dict | None = WORDS) -> Verdict:
    ctx = ProbeContext(types.ModuleType("learner"), "learner.py", "", None)
    out = probe_generation(
        ctx,
        loop,
        lambda i, primary: (cls(), {}),
        XS,
        step="step",
        reference_step=lambda obj: right,
        alone_up_to=6,
        again=AGAIN,
    )

    def one(v, got, x, alone=True):
        judge_generation_call(
            v,
            got,
            x.cumsum(1),
            (x, 2 * x),
            fn="loop",
            step="step",
            keys=keys,
            likely={
                "returns": msg("likely.returns"),
                "out_shape": msg("likely.out_shape"),
                "out_values": lambda o: msg("likely.out_values"),
                "state": lambda shapes: msg("likely.state"),
                "state_values": msg("likely.state_values"),
                "step_first": msg("likely.step_first"),
            },
            words=words,
            names="ab",
            alone=alone,
        )

    def case(v):
        for got, x in zip(out, XS, strict=True):
            one(v, got, x)
        again = out[0].get("again")
        judge_loop_again(
            v,
            again,
            lambda sub, got: one(sub, got, AGAIN, False),
            fn="loop",
            key="check.again",
            culprit=lambda: None,
        )

    return judged("", case)


def test_a_right_loop_passes_at_every_size_and_again():
    v = judge(good_loop)
    assert v.passed()
    assert {c.id for c in v.checks} >= {"implemented", "matches-pytorch", "values", "call-again"}


def test_a_loop_that_drops_the_state_is_named_by_the_lessons_word():
    v = judge(no_state_loop)
    assert not v.passed()
    assert v.failed_message()["params"]["likely"]["key"] == "likely.state_not_passed"


def test_a_right_loop_on_a_wrong_step_is_the_steps_fault():
    v = judge(good_loop, WrongObj)
    check = next(c for c in v.checks if c.status != "pass")
    assert check.id == "matches-pytorch"
    assert v.failed_message()["params"]["likely"]["key"] == "likely.step_first"


def test_a_loop_that_keeps_state_fails_the_new_sequence():
    kept = {}

    def remembering(obj, x):
        kept.setdefault("first", good_loop(obj, x))
        return kept["first"]

    v = judge(remembering)
    check = next(c for c in v.checks if c.status != "pass")
    assert check.id in {"shape", "call-again"}


def test_without_keys_the_engine_words_it_with_the_loops_names():
    v = judge(no_state_loop, keys=None)
    message = v.failed_message()
    assert message["key"] == "check.generation_protocol"
    assert (message["params"]["fn"], message["params"]["step"]) == ("loop", "step")
    v = judge(good_loop, WrongObj, keys=None)
    assert v.failed_message()["key"] == "check.generation_values"


def test_the_engine_words_are_in_both_catalogs():
    from tutor.kit.generation_loop import GENERATION_WORDS
    from tutor.text.i18n import engine_catalog

    assert set(GENERATION_WORDS) == set(GENERATION_KEYS)
    for lang in ("en", "zh"):
        assert set(GENERATION_WORDS.values()) <= set(engine_catalog(lang))


def test_without_words_the_engine_names_the_protocol_fault_with_the_loops_names():
    v = judge(no_state_loop, keys=None, words=None)
    likely = v.failed_message()["params"]["likely"]
    assert likely == msg("likely.loop_state_not_passed", fn="loop", step="step")


def test_the_engine_has_words_for_every_decoding_fault():
    from tutor.kit.generation_loop import DECODING_FAULT_WORDS
    from tutor.text.i18n import engine_catalog

    faults = {"recompute_full", "recompute", "call_count", "first_not_empty"}
    faults |= {"state_not_passed", "state_not_passed_back", "token_shape", "token_order"}
    assert set(DECODING_FAULT_WORDS) == faults
    for lang in ("en", "zh"):
        assert set(DECODING_FAULT_WORDS.values()) <= set(engine_catalog(lang))
