"""A generation loop, as a property: the learner's `loop(obj, x) -> (out, state)` runs a step
method of obj (`obj.<step>(x_t, state) -> (out, state)`) token by token over x, and must give
the full pass's outputs and the state after the last token. The probe (probe_generation) runs
the loop twice a size: first with the tutor's own step put on a second object (is the loop
right when its step is? then a fault of the learner's run is the step's, said in the step's
own step), then on the learner's step under record_decoding (how the loop feeds its step);
at the first size once more on a new sequence. The judge (judge_generation_call) names a
protocol fault (decoding_fault); judge_loop_again the new sequence.

The texts are the engine's (GENERATION_WORDS, true for any loop); `keys` maps any role of
GENERATION_KEYS to a lesson's own message key instead. `likely` maps each diagnosis role to a
message or a function giving one. A protocol fault of decoding_fault is said in the
engine's words (DECODING_FAULT_WORDS, with {fn} {step} and the fault's own parameters), or
in `words`: a lesson's likely key for any fault.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from tutor.kit.call_again import trimmed
from tutor.kit.finite import require_finite
from tutor.kit.incremental import decoding_fault, record_decoding
from tutor.kit.judge_tools import (
    Verdict,
    describe,
    judged,
    msg,
    nest_likely,
    require_call_ran,
    require_tensor,
    shape_str,
)
from tutor.kit.magnitude import require_near
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.step_grid import STEP_CALL_WORDS, require_out_state, require_states_near

# The roles of judge_generation_call's `keys`, and their parameters.
GENERATION_KEYS = (
    "raised",  # {fn} {kind} {detail} {line} {code} {likely}: the loop raised
    "returns",  # {fn} {state} {got} {likely}: no (out, state) pair
    "out",  # {fn}: a value label, the loop's output
    "protocol",  # {fn} {step} {likely}: the loop did not feed its step as it should
    "out_values",  # {fn} {err} {where} {likely}
    "state",  # {fn} {state} {expected} {got} {likely}: the final state's shapes
    "state_values",  # {name} {t} {err} {where} {likely}
)

# The engine's text for each role (with {fn}, {step}, {state}: the state's names); a lesson's
# `keys` override them role by role.
GENERATION_WORDS: dict[str, str] = {
    "raised": "check.generation_raised",
    "returns": STEP_CALL_WORDS["returns"],
    "out": "value.generation_out",
    "protocol": "check.generation_protocol",
    "out_values": "check.generation_values",
    "state": "check.generation_state",
    "state_values": STEP_CALL_WORDS["state_values"],
}

# The engine's likely mistake for each fault of decoding_fault.
DECODING_FAULT_WORDS: dict[str, str] = {
    "recompute_full": "likely.loop_recompute_full",
    "recompute": "likely.loop_recompute",
    "call_count": "likely.loop_call_count",
    "first_not_empty": "likely.loop_first_not_empty",
    "state_not_passed": "likely.loop_state_not_passed",
    "state_not_passed_back": "likely.loop_state_not_passed_back",
    "token_shape": "likely.loop_token_shape",
    "token_order": "likely.loop_token_order",
}


def probe_generation(
    ctx: ProbeContext,
    loop: Callable[[Any, torch.Tensor], Any],
    make: Callable[[int, bool], tuple[Any, dict]],
    xs: Sequence[torch.Tensor],
    *,
    step: str,
    reference_step: Callable[[Any], Callable],
    alone_up_to: int,
    again: torch.Tensor | None = None,
    names: tuple[str, str] = ("x", "state"),
    axis: int = 1,
) -> list[dict]:
    """For each sequence x of xs: make(i, primary) -> (obj, failed) (obj None: failed says why);
    up to alone_up_to tokens, loop on a second object whose step is reference_step(obj)
    ("alone"); then loop on obj under record_decoding ("call", "log"; primary at the first size
    while the loop may be `todo`); at the first, loop on again too ("again"). Every object is
    kept alive to the end: a state keyed on id(obj) then never meets a freed object's address
    again, so what it makes fail does not depend on the allocator."""
    out: list[dict] = []
    alive: list[Any] = []
    for i, x in enumerate(xs):
        obj, failed = make(i, i == 0)
        alive.append(obj)
        if obj is None:
            out.append(failed)
            continue
        got: dict[str, Any] = {}
        own, _ = make(i, False) if x.shape[axis] <= alone_up_to else (None, None)
        alive.append(own)
        if own is not None:
            setattr(own, step, reference_step(own))
            got["alone"] = trimmed(ctx.call(lambda x, own=own: loop(own, x), x))
        todo = own is None or (got["alone"].get("error") or {}).get("kind") == "NotImplementedError"
        rec = record_decoding(obj, x, step=step, names=names, axis=axis)
        got["call"] = trimmed(ctx.call(lambda x, obj=obj: loop(obj, x), x, primary=i == 0 and todo))
        got["log"] = rec.log()
        if i == 0 and again is not None:
            got["again"] = trimmed(ctx.call(lambda x, obj=obj: loop(obj, x), again))
        out.append(got)
    return out


def judge_generation_call(
    v: Verdict,
    got: dict,
    want_out: torch.Tensor,
    want_state: Sequence[torch.Tensor],
    *,
    fn: str,
    step: str,
    keys: Mapping[str, str] | None = None,
    likely: Mapping[str, Any],
    words: Mapping[str, str] | None = None,
    names: Sequence[str],
    alone: bool = True,
    axis: int = 1,
) -> None:
    """probe_generation's run of one sequence ("call", with its "log" and "alone" where the
    probe made them) against the full pass's want_out and the state after the last token,
    want_state, in the words of GENERATION_WORDS and keys. Checks, in order: runs, returns (a
    pair; likely the engine's for what came, else likely["returns"]), shape, dtype, finite,
    implemented (the protocol fault, in DECODING_FAULT_WORDS' or words' key), matches-pytorch
    (likely["out_values"](out)), values (the state's shapes, likely["state"](shapes), then each
    tensor close, likely["state_values"]). Where the loop with the tutor's step passed (alone),
    each later likely is likely["step_first"]: the step is at fault."""
    call, T = got["call"], want_out.shape[axis]
    keys, state_names = {**GENERATION_WORDS, **(keys or {})}, ", ".join(names)

    @functools.cache
    def blame() -> dict | None:
        if not (alone and "alone" in got):
            return None
        # The same judge on the run with the tutor's step, which has no alone run of its own.
        again = functools.partial(
            judge_generation_call,
            fn=fn,
            step=step,
            keys=keys,
            likely=likely,
            words=words,
            names=names,
            alone=False,
            axis=axis,
        )
        sub = judged("", again, {"call": got["alone"]}, want_out, want_state)
        return likely["step_first"] if sub.passed() else None

    log = got.get("log")
    fault = decoding_fault(log, T, step=step, raised="error" in call) if log else None
    said = {**DECODING_FAULT_WORDS, **(words or {})}
    protocol = msg(said[fault[0]], fn=fn, step=step, **fault[1]) if fault else None
    unknown = msg("likely.unknown")
    require_call_ran(v, call, keys["raised"], fn=fn, likely=lambda: protocol or blame() or unknown)
    out, state = require_out_state(
        v, call["value"], key=keys["returns"], fn=fn, likely=likely, state=state_names
    )
    what: Any = msg(keys["out"], fn=fn)  # a value label, as lessons pass it
    shape_likely = likely["out_shape"] if isinstance(out, torch.Tensor) else None
    out = require_tensor(v, "shape", what, out, tuple(want_out.shape), shape_likely)
    require_finite(v, what, out, likely=lambda: blame() or unknown)
    if protocol is not None:
        v.require("implemented", False, keys["protocol"], fn=fn, step=step, likely=protocol)
    v.expect("implemented", True)
    said = likely["out_values"]
    require_near(
        v,
        "matches-pytorch",
        keys["out_values"],
        out,
        want_out,
        fn=fn,
        likely=lambda: blame() or said(out),
    )
    v.expect("matches-pytorch", True)
    want = [tuple(s.shape) for s in want_state]
    ok = isinstance(state, tuple) and len(state) == len(want_state)
    shapes = [tuple(s.shape) for s in state] if ok and all(map(torch.is_tensor, state)) else []
    v.require(
        "values",
        shapes == want,
        keys["state"],
        fn=fn,
        state=state_names,
        expected=shape_str(want[0]),
        got=" / ".join(map(shape_str, shapes)) if shapes else describe(state),
        likely=likely["state"](shapes),
    )
    state_likely = likely["state_values"]
    require_states_near(
        v,
        state,
        want_state,
        T - 1,
        key=keys["state_values"],
        names=names,
        likely=lambda: blame() or state_likely,
    )


def judge_loop_again(
    v: Verdict,
    call: dict | None,
    judge_case: Callable[[Verdict, dict], None],
    *,
    fn: str,
    key: str,
    culprit: Callable[[], dict | None],
) -> None:
    """The loop called again on a new sequence with the same object (probe_generation's
    "again"), judged by judge_case(sub, {"call": call}) on a verdict of its own: a failure is
    call-again's, key {fn} {reason} {likely}, its likely culprit() (the line that keeps state)
    or likely.kept_state. Nothing where the probe made no such call."""
    if call is None:
        return
    sub = judged("", judge_case, {"call": call})
    if not sub.passed():
        found = culprit() or msg("likely.kept_state")
        reason, said = nest_likely(sub.failed_message() or msg(""), found)
        v.require("call-again", False, key, fn=fn, reason=reason, likely=said)
    v.expect("call-again", True)
