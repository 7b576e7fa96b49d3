"""A step function kept to its state's discipline, as a property: a step `(x_t, state) ->
(out, state)` whose state grows by one token a call (a KV cache) run over a sequence from an
empty state, then used as a caller uses it: branches tried from one state (beam search), a new
sequence, two sequences in turn on one object (a server), and the same object built with
dropout in eval mode. The judge says, in this order: each call ran and grew the state by one;
no argument was changed in place and no state handed out changed later; each output is the
full pass's; the branches, the new sequence, the two in turn and the eval-mode run too.

The probe half (probe_step_discipline) runs in the child, the judge half
(judge_step_discipline) in the judge. The texts are the engine's (DISCIPLINE_WORDS, true for
any step); `keys` maps any role below to a lesson's own message key instead, `likely` each
diagnosis role to a message (or a function giving one).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from tutor.kit.incremental import (
    branches,
    growth_fault,
    judge_steps,
    pair_state,
    require_arguments_kept,
    require_states_kept,
    run_steps,
    same_tensors,
    state_lengths,
    state_snapshot,
    step_through,
)
from tutor.kit.judge_tools import Verdict, close, describe, msg, require_call_ran
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.state_faults import state_fault_likely, tokens_elsewhere
from tutor.kit.step_grid import step_call_words, step_return_likely

# The roles of judge_step_discipline's `keys` (check keys) and their parameters; with
# step_call's "raised", "returns" and "state_got".
DISCIPLINE_KEYS = (
    "growth",  # {n} {first} {final} {lengths} {last} {likely}: not n tokens after n calls
    "mutated",  # {fn} {name} {t} {err} {likely}: an argument changed in place
    "reused",  # {name} {t} {later} {likely}: a state handed out changed by a later call
    "branch_reused",  # {n} {likely}: a branch's state changed by the next branch
    "loop_values",  # {t} {likely}: the run's output at t is not the full pass's
    "branch",  # {t} {n} {err} {likely}: branch n wrong
    "new_sequence",  # {t} {err} {likely}: a new sequence on the same object wrong
    "interleaved",  # {t} {n} {err} {likely}: two sequences in turn: sequence n wrong
    "eval_dropout",  # {t} {n} {err} {likely}: built with dropout, in eval mode, wrong
)

# The engine's text for each role; a lesson's `keys` override them role by role.
DISCIPLINE_WORDS: dict[str, str] = {
    "growth": "check.steps_growth",
    "mutated": "check.steps_mutated",
    "reused": "check.steps_reused",
    "branch_reused": "check.steps_branch_reused",
    "loop_values": "check.steps_loop_values",
    "branch": "check.steps_branch",
    "new_sequence": "check.steps_new_sequence",
    "interleaved": "check.steps_interleaved",
    "eval_dropout": "check.steps_eval_dropout",
}


def probe_step_discipline(
    ctx: ProbeContext,
    step: Callable,
    x: torch.Tensor,
    other: torch.Tensor,
    branch_tokens: Sequence[torch.Tensor],
    *,
    branch_from: int,
    state: Callable[[], Any] | None = None,
    eval_step: Callable[[], Callable | None] | None = None,
    axis: int = 1,
) -> dict:
    """step over x token by token (step_through: the first call is primary), then branch_tokens
    each from the state after branch_from tokens (branches), other as a new sequence, state()
    where given (what the object holds, read before sequences share it: state_dict_copy say),
    x and other in turn (run_steps), and over x the step eval_step() makes (an object built
    with dropout, in eval mode; None: it could not be built): what judge_step_discipline reads."""
    steps, held = step_through(ctx, step, x, primary=True, axis=axis)
    out: dict[str, Any] = {"steps": steps, "held": [state_snapshot(h) for h in held]}
    if len(held) >= branch_from and isinstance(held[branch_from - 1], tuple):
        start = state_snapshot(held[branch_from - 1])[1]
        out["branch"], kept = branches(ctx, step, start, branch_tokens)
        out["branch_held"] = [state_snapshot(h) for h in kept]
    out["fresh"] = run_steps(ctx, step, [other], dropout=False, axis=axis)
    if state is not None:
        out["state"] = ctx.call(state).get("value")
    out["interleaved"] = run_steps(ctx, step, [x, other], axis=axis)
    dropped = None if eval_step is None else eval_step()
    if dropped is not None:
        out["eval_dropout"] = run_steps(ctx, dropped, [x], axis=axis)
    return out


def state_growth_fault(steps: list[dict], t: int, lengths: list[int], last: int) -> str:
    """Why the state after call t is not t + 1 tokens long (lengths: its first tensor's after
    each call so far, last: its last tensor's now): "last_behind" (the first grew, the last
    did not), "given_back" (the state the call before returned, as it was), else growth_fault's
    ("not_appended", "twice", "given_back", or "other")."""
    if lengths[-1] == t + 1 and last != t + 1:
        return "last_behind"
    if t and same_tensors(pair_state(steps[t - 1]["value"]), pair_state(steps[t]["value"])):
        return "given_back"
    return growth_fault(lengths) or "other"


def _growth_likely(
    fault: str,
    steps: list[dict],
    t: int,
    state_shape: Callable[[int], Sequence[int]] | None,
    axis: int,
    names: Sequence[str],
) -> dict | None:
    """The kit's words for a state that did not grow by one at call t, where state_shape says
    the shape it should have: laid out with its tokens on another axis, or the growth fault."""
    if state_shape is None:
        return None
    first = (pair_state(steps[t]["value"]) or [None])[0]
    want = state_shape(t + 1)
    if (
        fault != "last_behind"
        and torch.is_tensor(first)
        and tokens_elsewhere(first.shape, want, axis)
    ):
        fault = "layout"
    return state_fault_likely(fault, axis=axis, names=names)


def _said(likely: Mapping[str, Any], role: str, *args: Any) -> dict:
    found = likely.get(role)
    if callable(found):
        return found(*args)
    return found if found is not None else msg("likely.unknown")


def _output(value: Any) -> Any:
    return value[0] if isinstance(value, tuple) and len(value) == 2 else value


def judge_step_discipline(
    v: Verdict,
    outputs: dict,
    x: torch.Tensor,
    other: torch.Tensor,
    branch_tokens: Sequence[torch.Tensor],
    reference: Callable[[torch.Tensor], torch.Tensor],
    *,
    branch_from: int,
    keys: Mapping[str, str] | None = None,
    likely: Mapping[str, Any],
    names: Sequence[str],
    fn: str,
    axis: int = 1,
    state_size: int = 2,
    state_axis: int = 2,
    state_rank: int = 4,
    state_shape: Callable[[int], Sequence[int]] | None = None,
) -> None:
    """probe_step_discipline's outputs against reference(seq), the full pass's outputs over a
    sequence, in the words of DISCIPLINE_WORDS and step_call_words(keys). A call that raised
    stops the step as judge_step_call says it (keys["raised"], likely["raised"](error)); one
    that returned no state to measure, keys["returns"] {fn} {got} (keys["state_got"]),
    likely["state_pair"] (by default step_return_likely's).
    Checks: returns and shape (keys["growth"], its likely likely["growth"](fault, steps, t),
    fault from state_growth_fault), inputs-unchanged
    ("mutated": names[i] the i-th argument, likely["mutated"](i); "reused" and
    "branch_reused", likely["reused"]()), matches-pytorch ("loop_values", likely["loop_values"]),
    call-again ("branch", "new_sequence", "interleaved"; likely["kept"](call)) and dropout
    ("eval_dropout"; likely.story_dropout_eval where a dropout fired). state_size: how many
    tensors the state holds; state_axis, state_rank: where they grow. Given state_shape(n), a
    state tensor's shape after n tokens, a state that did not grow is first said by its fault
    (its tokens on another axis: "layout"; else state_growth_fault's, state_fault_likely),
    before likely["growth"]."""
    keys = {**step_call_words(), **DISCIPLINE_WORDS, **(keys or {})}
    steps, state = outputs["steps"], ", ".join(names[1:])
    lengths: list[int] = []
    for t, step in enumerate(steps):
        raised = functools.partial(likely["raised"], step.get("error"))  # on a failure only
        require_call_ran(v, step, keys["raised"], fn=fn, t=t, likely=raised)
        lens = state_lengths(step["value"], axis=state_axis, rank=state_rank)
        if lens is None or len(lens) != state_size or lens[0] == -1:
            got = msg(keys["state_got"], got=describe(pair_state(step["value"])))
            said = likely.get("state_pair") or step_return_likely(names[1:])["state_pair"]
            v.require("returns", False, keys["returns"], fn=fn, state=state, got=got, likely=said)
            lens = lens or [-1]
        lengths.append(lens[0])
        if lens != [t + 1] * len(lens):
            fault = state_growth_fault(steps, t, lengths, lens[-1])
            v.require(
                "shape",
                False,
                keys["growth"],
                n=t + 1,
                first=names[1],
                final=names[-1],
                lengths=lengths,
                last=lens[-1],
                likely=_growth_likely(fault, steps, t, state_shape, state_axis, names[1:])
                or _said(likely, "growth", fault, steps, t),
            )
    v.expect("returns", True)
    v.expect("shape", True)
    require_arguments_kept(
        v, steps, x, key=keys["mutated"], names=names, likely=likely["mutated"], axis=axis, fn=fn
    )

    def reused() -> dict:  # on a failure only: it may read the source
        return _said(likely, "reused")

    require_states_kept(
        v,
        [h[1] for h in outputs["held"]],
        (s["value"][1] for s in steps),
        key=keys["reused"],
        params=lambda t, i: {"name": names[1 + i], "t": t, "later": len(steps) - 1},
        likely=reused,
    )
    tried = [pair_state(c.get("value")) for c in outputs.get("branch", [])]
    require_states_kept(
        v,
        [h[1] for h in outputs.get("branch_held", [])],
        [s for s in tried if s is not None],
        key=keys["branch_reused"],
        params=lambda t, i: {"n": t + 1},
        likely=reused,
    )
    v.expect("inputs-unchanged", True)
    # The run's own outputs: a wrong one is the step's fault, said in the lesson's words.
    ref = reference(x)
    for t, step in enumerate(steps):
        out = step["value"][0]
        want = ref.narrow(axis, t, 1)
        if not (isinstance(out, torch.Tensor) and close(out, want)):
            v.require(
                "matches-pytorch", False, keys["loop_values"], t=t, likely=likely["loop_values"]
            )
    v.expect("matches-pytorch", True)
    _judge_called_again(
        v, outputs, (x, other, branch_tokens), reference, branch_from, keys, likely, axis
    )


def _judge_called_again(
    v: Verdict,
    outputs: dict,
    inputs: tuple,
    reference: Callable[[torch.Tensor], torch.Tensor],
    branch_from: int,
    keys: Mapping[str, str],
    likely: Mapping[str, Any],
    axis: int,
) -> None:
    """The branches, the new sequence and the two in turn (call-again), then the eval run."""
    x, other, branch_tokens = inputs
    kept = likely["kept"]
    tried = [
        {**call, "seq": j, "t": branch_from, "value": _output(call.get("value"))}
        for j, call in enumerate(outputs.get("branch", []))
    ]
    prefix = x.narrow(axis, 0, branch_from)
    refs = [reference(torch.cat([prefix, tok], dim=axis)) for tok in branch_tokens[: len(tried)]]
    judge_steps(v, tried, refs, "call-again", keys["branch"], kept, axis=axis)
    refs = [reference(x), reference(other)]
    fresh = outputs["fresh"]
    judge_steps(
        v, fresh, refs[1:], "call-again", keys["new_sequence"], kept, axis=axis, numbered=False
    )
    judge_steps(
        v, outputs.get("interleaved", []), refs, "call-again", keys["interleaved"], kept, axis=axis
    )

    def dropped(call: dict) -> dict:
        return msg("likely.story_dropout_eval" if call.get("fired") else "likely.unknown")

    evals = outputs.get("eval_dropout", [])
    judge_steps(v, evals, refs[:1], "dropout", keys["eval_dropout"], dropped, axis=axis)
