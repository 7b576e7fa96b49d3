"""A function called again: once right, the same function called once more at the lab's sizes
on new values must still be right, and what its first call returned must not have changed.

The probe half (probe_calls_again, or call_kept and again_of for a probe of its own shape)
runs in the child; the judge half (judge_called_again) in the judge. What it catches: a cache
keyed on the shape or on nothing, a tensor on the function or a module global filled by the
first call and read by the next, one output buffer handed out twice and refilled in place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from tutor.kit.judge_tools import (
    Verdict,
    judge_other_sizes,
    judged,
    msg,
    nest_likely,
    state_explanation,
)
from tutor.kit.probe_tools import ProbeContext, clone_args


def snapshot(value: Any) -> Any:
    """A copy of a returned tensor (or tuple of tensors), taken at once: a function that hands
    out one buffer and refills it on its next call must be judged on what each call gave."""
    if type(value) is torch.Tensor:
        return clone_args(value)
    if type(value) is tuple and all(type(x) is torch.Tensor for x in value):
        return tuple(clone_args(x) for x in value)
    return value


def trimmed(call: dict, *, args: bool = False) -> dict:
    """A ctx.call record without the last softmax's output (for a step that judges the weights
    its function returns) and, unless args, without the arguments (a call made only to
    diagnose or to draw): less for the child to encode and the judge to decode."""
    call.pop("softmax", None)
    if not args:
        call.pop("args", None)
    return call


def call_kept(
    ctx: ProbeContext, fn: Callable, *args: Any, primary: bool = False
) -> tuple[dict, Any]:
    """ctx.call with the value snapshot, its arguments kept (the inputs-unchanged check reads
    them); and the returned object itself, to be sent again after a later call (again_of)."""
    call = trimmed(ctx.call(fn, *args, primary=primary), args=True)
    if "value" not in call:
        return call, None
    value = call["value"]
    call["value"] = snapshot(value)
    return call, value


def again_of(first_returned: Any, call: dict) -> dict:
    """What judge_called_again reads: the second call, and the first call's returned object as
    it is after it (a buffer refilled by the second call shows it here)."""
    return {"call": call, "first_now": first_returned}


def probe_calls_again(
    ctx: ProbeContext, fn: Callable, arg_lists: Sequence[tuple], again_args: tuple
) -> dict:
    """fn on each of arg_lists (the first is the lab's own, the primary call), then once more on
    again_args (the lab's sizes, new values): {"calls": [...], "again": again_of(...)}. The
    second call comes last, after the other sizes, so that anything they left behind shows."""
    calls, first = [], None
    for i, args in enumerate(arg_lists):
        call, value = call_kept(ctx, fn, *args, primary=i == 0)
        calls.append(call)
        first = value if i == 0 else first
    return {"calls": calls, "again": again_of(first, call_kept(ctx, fn, *again_args)[0])}


def probe_named_calls_again(
    ctx: ProbeContext,
    fn: Callable,
    arg_sets: Sequence[Mapping[str, tuple]],
    again_args: Mapping[str, tuple],
) -> dict:
    """probe_calls_again for a function called several ways on each case (a causal mask and
    another, say): each of arg_sets is {name: args}, called in that order (the first case's
    calls are primary), then again_args the same way: {"calls": [{name: call}], "again":
    again_of(...)}, whose "call" is {name: call} and whose first returned object is the first
    case's first name's."""
    calls, first = [], None
    for i, named in enumerate(arg_sets):
        kept = {n: call_kept(ctx, fn, *args, primary=i == 0) for n, args in named.items()}
        calls.append({n: call for n, (call, _) in kept.items()})
        first = next(iter(kept.values()))[1] if i == 0 else first
    again = {n: call_kept(ctx, fn, *args)[0] for n, args in again_args.items()}
    return {"calls": calls, "again": again_of(first, again)}


def same_value(a: Any, b: Any) -> bool:
    """a and b the same tensors (or tuples of tensors): shape, dtype and every value. Anything
    else counts as the same: nothing a later call could have refilled."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))
    return True


def judge_called_again(
    v: Verdict,
    fn: str,
    again: dict,
    first: Any,
    judge_case: Callable,
    *case: Any,
    defs: Sequence[str] = (),
    blame: Callable[[], dict | None] | None = None,
    reused_key: str = "check.first_result_changed",
    reused_likely: dict | None = None,
    source: str | None = None,
) -> None:
    """The second call judged like the first (judge_case(sub, again["call"], *case)), as the
    check call-again: check.called_again {fn} {reason} {likely}. Its likely: blame() where
    given (a lesson's own culprit, a helper say), else the line of defs that keeps state,
    else likely.kept_state. Then, where the probe sent "first_now", the first call's result
    (first: its snapshot) must be as it came: reused_key {fn} {likely}, the likely the line
    that keeps state, else reused_likely or likely.first_result_refilled. source: what the
    case judge reads for its diagnoses (v.source unless given)."""
    sub = judged(v.source if source is None else source, judge_case, again["call"], *case)
    if not sub.passed():
        culprit = (
            (blame() if blame else None)
            or state_explanation(v.source, defs)
            or msg("likely.kept_state")
        )
        reason, likely = nest_likely(sub.failed_message() or msg(""), culprit)
        v.require("call-again", False, "check.called_again", fn=fn, reason=reason, likely=likely)
    if "first_now" not in again:
        v.expect("call-again", True)
        return
    v.require(
        "call-again",
        same_value(again["first_now"], first),
        reused_key,
        fn=fn,
        likely=lambda: (
            state_explanation(v.source, defs)
            or reused_likely
            or msg("likely.first_result_refilled")
        ),
    )


def judge_sizes_and_again(
    v: Verdict,
    fn: str,
    outputs: dict,
    cases: Sequence[Any],
    labels: Sequence[Any],
    judge_case: Callable,
    again_case: Any,
    *,
    explain: Callable | None = None,
    first_name: str | None = None,
    then: Callable[[], None] | None = None,
) -> None:
    """The judge of a function probed by probe_calls_again or probe_named_calls_again
    (outputs: {"calls", "again"}, a call per case of cases), in the usual order: judge_case on
    the lab's case (the first), the other sizes as one check (judge_other_sizes, with labels
    and explain), then() where given (a check of its own, large scores say), then the call
    again on again_case (judge_called_again, defs=(fn,)); its first result is the first call's
    value, or with named calls its first_name's."""
    calls = outputs["calls"]
    judge_case(v, calls[0], cases[0])
    judge_other_sizes(v, calls, list(cases), list(labels), judge_case, explain=explain)
    if then is not None:
        then()
    first = (calls[0] if first_name is None else calls[0][first_name]).get("value")
    judge_called_again(v, fn, outputs["again"], first, judge_case, again_case, defs=(fn,))
