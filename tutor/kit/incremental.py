"""Incremental decoding, as a property: a step function `step(x_t, state) -> (out, state)`
(a layer's forward with a KV cache, a recurrent cell) run token by token, each call given the
state the one before handed back, and every output judged against the full pass of the same
sequence. The probe half runs in the child: step_through, branches, run_steps, and
record_decoding under a learner's own generation loop. The judge half in the judge:
judge_steps, changed_argument and changed_later (said by require_arguments_kept and
require_states_kept), state_lengths and growth_fault, decoding_fault,
weights_map and stepped_weights_view. state_snapshot and same_tensors are what both compare with; recompute_each is the
baseline without a state. The kit gives facts and fault names; the lesson says them in its
own catalog."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch

from tutor.kit.call_recorder import CallRecorder, argument
from tutor.kit.judge_tools import (
    Verdict,
    close,
    describe,
    max_error,
    msg,
    round_matrix,
    shape_str,
)
from tutor.kit.probe_tools import ProbeContext
from tutor.model.view_items import Item, heatmap, note, row, weights


def state_snapshot(value: Any) -> Any:
    """A copy taken at once of what a step returned (tensors detached and cloned, tuples and
    lists as tuples, nested ones too): a later call may change the originals in place, which is
    the fault a judge looks for by comparing the two. Unlike call_again.snapshot, for a
    function's result, it goes into nested states and takes a list for the same state."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (tuple, list)):
        return tuple(state_snapshot(x) for x in value)
    return value


def same_tensors(a: Any, b: Any) -> bool:
    """Whether a and b are the same state: the same object, or tuples of as many tensors of
    the same shapes and values (an identical object inside counts as equal). Anything that
    cannot be compared is not the same."""
    if a is b:
        return True
    try:
        return all(
            x is y or (x.shape == y.shape and torch.equal(x, y)) for x, y in zip(a, b, strict=False)
        ) and len(a) == len(b)
    except Exception:
        return False


def pair_state(value: Any) -> Any:
    """The state of a step's (out, state), or None when the step returned something else."""
    return value[1] if _is_pair(value) else None


def _is_pair(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2


def _bare(call: dict) -> dict:
    """A call without what is never judged: its arguments and the last softmax output."""
    call.pop("softmax", None)
    call.pop("args", None)
    return call


def _token(x: torch.Tensor, t: int, axis: int) -> torch.Tensor:
    return x.narrow(axis, t, 1)


def step_through(
    ctx: ProbeContext,
    step: Callable,
    x: torch.Tensor,
    *,
    primary: bool = False,
    axis: int = 1,
    softmax: bool = False,
) -> tuple[list[dict], list[Any]]:
    """step on each token of x in turn (along axis), each given the state the call before
    returned (None first): (calls, held). calls[t] is {"value": snapshot, "args"} or the failed
    call; the loop stops at the first call that raises or returns no (out, state) pair. held[t]
    is what the call returned, the very objects, for changed_later. The first call is primary
    (a `todo` step stops there). softmax: each call keeps the last softmax it ran (None when
    there was none), for a view of the weights row by row (weights_map)."""
    calls: list[dict] = []
    held: list[Any] = []
    state = None
    for t in range(x.shape[axis]):
        call = ctx.call(step, _token(x, t, axis), state, primary=primary and t == 0)
        soft = call.get("softmax")
        if "error" in call:
            entry = _bare(call)
        else:
            value = call["value"]
            entry = {"value": state_snapshot(value), "args": call["args"]}
            held.append(value)
        if softmax:
            entry["softmax"] = soft if isinstance(soft, torch.Tensor) else None
        calls.append(entry)
        if "error" in call or not _is_pair(value):
            break
        state = value[1]
    return calls, held


def weights_map(rows: list, lead: tuple[int, ...]) -> torch.Tensor | None:
    """The (*lead, T, T) attention map of a step-by-step run over T tokens, row t the weights
    step t gave its one query over the t + 1 keys so far, zero over the future: the full pass's
    map, to draw beside it. None unless every row is a tensor of shape (*lead, 1, t + 1)."""
    T = len(rows)
    if not all(
        isinstance(r, torch.Tensor) and tuple(r.shape) == (*lead, 1, t + 1)
        for t, r in enumerate(rows)
    ):
        return None
    out = torch.zeros(*lead, T, T)
    for t, r in enumerate(rows):
        out[..., t, : t + 1] = r[..., 0, :]
    return out


def stepped_weights_view(
    rows: list, reference: torch.Tensor, label: Callable[[int], Any]
) -> tuple[list[dict], list[Item]]:
    """A step function's softmax rows (step_through's softmax=True on one sequence) beside the
    full pass's weights reference (H, T, T): each head's pair of maps, for v.visuals["heatmaps"]
    (label(h) names head h), and the view items that show them: the stepped maps side by side,
    then whether they equal the reference (visual.stepped_same, visual.stepped_differ {err}).
    No items while the rows are not all there: the lesson's waiting line says what they need."""
    H, T = reference.shape[0], reference.shape[-1]
    stacked = weights_map(rows, (1, H)) if len(rows) == T else None
    learner = None if stacked is None else stacked[0]
    maps = [
        weights(
            label(h),
            None if learner is None else round_matrix(learner[h]),
            round_matrix(reference[h]),
        )
        for h in range(H)
    ]
    if learner is None:
        return maps, []
    if close(learner, reference):
        said = msg("visual.stepped_same")
    else:
        said = msg("visual.stepped_differ", err=max_error(learner, reference)[0])
    return maps, [row(*(heatmap(m["learner"], label(h)) for h, m in enumerate(maps))), note(said)]


def branches(ctx: ProbeContext, step: Callable, state: Any, tokens) -> tuple[list[dict], list[Any]]:
    """step on each of tokens from the one state (as beam search tries several next tokens
    from one cache): (calls, kept). calls[j] is the call, its value a snapshot when it is an
    (out, state) pair; kept are those pairs as returned, for changed_later: a step that
    writes into the state it was given gives the next branch the first one's token."""
    calls: list[dict] = []
    kept: list[Any] = []
    for tok in tokens:
        call = _bare(ctx.call(step, tok, state))
        value = call.get("value")
        if _is_pair(value):
            kept.append(value)
            call["value"] = state_snapshot(value)
        calls.append(call)
    return calls, kept


def state_lengths(value: Any, *, axis: int, rank: int) -> list[int] | None:
    """The length along axis of each tensor of the state in a step's (out, state), -1 for one
    that is not a tensor of that rank; None when there is no tuple state to measure."""
    state = pair_state(value)
    if not isinstance(state, tuple):
        return None
    return [
        int(s.shape[axis]) if isinstance(s, torch.Tensor) and s.dim() == rank else -1 for s in state
    ]


def growth_fault(lengths: list[int], start: int = 1) -> str | None:
    """How the lengths a state had after each call fail to grow by one a call from start (a
    KV cache holds one more token each step): None when they do; else "not_appended" (they
    never grew), "twice" (by two a call), "given_back" (start - 1 first: the empty state
    returned as it came), or "other"."""
    if lengths == list(range(start, start + len(lengths))):
        return None
    if lengths and all(n == lengths[0] for n in lengths):
        return "not_appended"
    if len(lengths) > 1 and all(b - a == 2 for a, b in zip(lengths, lengths[1:], strict=False)):
        return "twice"
    if lengths and lengths[0] == start - 1:
        return "given_back"
    return "other"


def changed_later(now: list[Any], then) -> tuple[int, int] | None:
    """(call, index) of the first state a later call changed: now are the states as they are
    after the loop (snapshots of what the calls returned, taken at the end), then the
    snapshots taken as each call returned; a state is a tuple of tensors."""
    for t, (a_state, b_state) in enumerate(zip(now, then, strict=False)):
        for i, (a, b) in enumerate(zip(a_state, b_state, strict=False)):
            if not (
                isinstance(a, torch.Tensor)
                and isinstance(b, torch.Tensor)
                and a.shape == b.shape
                and torch.equal(a, b)
            ):
                return t, i
    return None


def changed_argument(
    calls: list[dict], x: torch.Tensor, *, axis: int = 1
) -> tuple[int, int, Any, torch.Tensor] | None:
    """(t, i, after, passed) of the first argument a step changed in place, over step_through's
    calls (their "args" as the call left them): at call t, i = 0 is x's token t, i = 1, 2, …
    the tensors of the state the call before returned, which the caller may use again (a
    branch, a retry). after is what the argument became (any value), passed what it was."""
    for t in range(1, len(calls)):
        token_after, state_after = calls[t]["args"]
        passed = (_token(x, t, axis), *calls[t - 1]["value"][1])
        for i, (a, p) in enumerate(zip((token_after, *state_after), passed, strict=False)):
            if not (
                isinstance(a, torch.Tensor)
                and a.shape == p.shape
                and bool(torch.equal(a.to(p.dtype), p))
            ):
                return t, i, a, p
    return None


def require_arguments_kept(
    v: Verdict,
    calls: list[dict],
    x: torch.Tensor,
    *,
    key: str,
    names: Sequence[str],
    likely: Callable[[int], dict],
    axis: int = 1,
    check_id: str = "inputs-unchanged",
    **params: object,
) -> None:
    """No step changed an argument in place (changed_argument over step_through's calls), or
    the step stops with key {params…} {name} {t} {err} {likely}: name is names[i] (x's token,
    then the state's tensors), err how it changed (value.changed_by {err}, value.resized
    {shape}, or what it became), likely(i) the mistake. A pass records nothing (the check goes
    on)."""
    changed = changed_argument(calls, x, axis=axis)
    if changed is None:
        return
    t, i, after, passed = changed
    if isinstance(after, torch.Tensor) and after.shape == passed.shape:
        err = msg("value.changed_by", err=max_error(after, passed)[0])
    elif isinstance(after, torch.Tensor):
        err = msg("value.resized", shape=shape_str(after.shape))
    else:
        err = describe(after)
    v.require(check_id, False, key, **params, name=names[i], t=t, err=err, likely=likely(i))


def require_states_kept(
    v: Verdict,
    now: list[Any],
    then: Iterable[Any],
    *,
    key: str,
    params: Callable[[int, int], dict],
    likely: object,
    check_id: str = "inputs-unchanged",
) -> None:
    """No state handed out was changed by a later call (changed_later(now, then)), or the step
    stops with key {params(call, index)…} {likely}: call the state's, index its tensor's. A
    pass records nothing."""
    changed = changed_later(now, then)
    if changed is not None:
        v.require(check_id, False, key, **params(*changed), likely=likely)


def recompute_each(full: Callable, x: torch.Tensor, *, axis: int = 1) -> torch.Tensor:
    """Generation without a state: the full pass over every prefix of x, the last output of
    each kept. What a cache saves, and so what a cost experiment times beside it."""
    outs = [full(x.narrow(axis, 0, t + 1)).narrow(axis, t, 1) for t in range(x.shape[axis])]
    return torch.cat(outs, dim=axis)


def run_steps(
    ctx: ProbeContext,
    step: Callable,
    sequences: list[torch.Tensor],
    *,
    axis: int = 1,
    dropout: bool = True,
) -> list[dict]:
    """step on each sequence in turn, token by token, each with its own state (as a server
    serves two users from one layer: a layer that keeps a state of its own gives one sequence
    the other's past): per call {"seq", "t", "value": out, "fired": dropouts that fired} or
    the failed call with its "seq" and "t". Stops at the first call that raises or returns no
    (out, state) pair. dropout: torch's dropout is fixed_dropout (ctx.call's dropout=True)."""
    states: list[Any] = [None] * len(sequences)
    calls: list[dict] = []
    for t in range(sequences[0].shape[axis]):
        for n, x in enumerate(sequences):
            call = _bare(ctx.call(step, _token(x, t, axis), states[n], dropout=dropout))
            value = call.get("value")
            if "error" in call or not _is_pair(value):
                calls.append({"seq": n, "t": t, **call})
                return calls
            value = state_snapshot(value)
            states[n] = value[1]
            fired = [d for d in call.get("dropouts", []) if d["training"] and d["p"] > 0]
            calls.append({"seq": n, "t": t, "value": value[0], "fired": len(fired)})
    return calls


def judge_steps(
    v: Verdict,
    calls: list[dict],
    refs: list[torch.Tensor],
    check_id: str,
    key: str,
    likely: Callable[[dict], dict],
    *,
    axis: int = 1,
    numbered: bool = True,
) -> None:
    """Each call of run_steps against refs[seq], the full pass of its own sequence, at its
    token. Failure: key with {t} {n} (the sequence, from 1; left out when not numbered) {err}
    (nan when no tensor of the right shape came) and likely(call)."""
    for call in calls:
        n, t = call["seq"], call["t"]
        want = _token(refs[n], t, axis)
        got = call.get("value")
        if "error" in call or not isinstance(got, torch.Tensor) or not close(got, want):
            err = (
                max_error(got, want)[0]
                if isinstance(got, torch.Tensor) and got.shape == want.shape
                else float("nan")
            )
            where = {"t": t, "n": n + 1} if numbered else {"t": t}
            v.require(check_id, False, key, **where, err=err, likely=likely(call))
    v.expect(check_id, True)


def record_decoding(
    obj: object,
    x: torch.Tensor,
    *,
    step: str,
    full: str = "forward",
    names: tuple[str, str] = ("x", "state"),
    axis: int = 1,
) -> CallRecorder:
    """Put on obj before a learner's generation loop runs on x: how the loop uses obj, for
    decoding_fault. Per call of obj.<step>: [tokens given (x_t's size along axis, -1 when it is
    not a tensor of x's rank), state given (-1: None, 1: one), whether that state is the one
    the call before handed back (or None first), whether the token is x's next]. Per call of
    obj.<full>, the full pass (a loop that recomputes the prefix): [tokens given]. names: the
    step's parameters, as a call by keyword names them."""
    x = x.clone()

    def note_step(args, kwargs, rec):
        x_t, state = argument(args, kwargs, 0, names[0]), argument(args, kwargs, 1, names[1])
        n, last = rec.count(step), pair_state(rec.last[step])
        ok = isinstance(x_t, torch.Tensor) and x_t.dim() == x.dim()
        tokens = int(x_t.shape[axis]) if ok else -1
        if state is None:
            given, back = -1, int(last is None)
        else:
            given, back = 1, int(last is not None and same_tensors(state, last))
        right = tokens == 1 and n < x.shape[axis] and torch.equal(x_t, _token(x, n, axis))
        return [tokens, given, back, int(right)]

    def note_full(args, kwargs, rec):
        x_t = argument(args, kwargs, 0, names[0])
        ok = isinstance(x_t, torch.Tensor) and x_t.dim() == x.dim()
        return [int(x_t.shape[axis])] if ok else None

    return CallRecorder(obj, {step: note_step, full: note_full}, {step: 4, full: 1})


def decoding_fault(
    log: dict[str, torch.Tensor], T: int, *, step: str, full: str = "forward", raised: bool = False
) -> tuple[str, dict] | None:
    """What a generation loop did wrong, from record_decoding's log of a run over T tokens, as
    (fault, params), the first of: "recompute_full" (the full pass on more than one token),
    "recompute" (the step given more than one), "call_count" ({n} calls for {T} tokens; not
    when the run raised, which ends the loop early), "first_not_empty" (a state on the first
    call), "state_not_passed" (None after the first), "state_not_passed_back" (a state the step
    did not return), "token_shape" (not a tensor of x's rank), "token_order" (not x's next
    token); None when the loop is right."""
    rows, fulls = log[step], log[full][:, 0].tolist()
    if any(n > 1 for n in fulls):
        return "recompute_full", {}
    if len(rows) and int(rows[:, 0].max()) > 1:
        return "recompute", {}
    if len(rows) != T and not raised:
        return "call_count", {"n": len(rows), "T": T}
    if len(rows) and int(rows[0, 1]) != -1:
        return "first_not_empty", {}
    if len(rows) > 1 and bool((rows[1:, 1] == -1).any()):
        return "state_not_passed", {}
    if len(rows) and not bool(rows[:, 2].all()):
        return "state_not_passed_back", {}
    if len(rows) and bool((rows[:, 0] == -1).any()):
        return "token_shape", {}
    if len(rows) and not bool(rows[:, 3].all()):
        return "token_order", {}
    return None
