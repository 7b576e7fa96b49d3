"""One call of a step function with state, as a property: `step(x_t, state) -> (out, state)`
given the token at position t and the state of the t before it (None at 0), judged against a
reference step on the same token and state. Probed over a grid of sizes and past lengths
(probe_step_grid), judged call by call (judge_step_call): it ran, returned (out, state), the
state as many tensors as asked, out the expected shape, each state tensor the reference's
shape, out finite and close, each state tensor close (require_states_near).

The texts are the engine's (STEP_CALL_WORDS), true for any step; `keys` maps any role of
STEP_CALL_KEYS to a lesson's own message key instead. `likely` maps each diagnosis role to a
message or a function giving one (called on a failure only).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from tutor.kit.call_again import trimmed
from tutor.kit.finite import require_finite
from tutor.kit.judge_tools import (
    Verdict,
    describe,
    likely_for_value,
    msg,
    require_call_ran,
    require_tensor,
    shape_str,
)
from tutor.kit.magnitude import require_near
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.state_faults import state_fault_likely, state_shape_fault, state_value_fault

# The roles of judge_step_call's `keys`, and their parameters.
STEP_CALL_KEYS = (
    "raised",  # {fn} {t} {kind} {detail} {line} {code} {likely}: the call raised
    "returns",  # {fn} {state} {got} {likely}: no (out, state) pair, or a wrong-sized state
    "state_got",  # {got}: a value label, what came as the state
    "out",  # {t}: a value label, the output of the call at t
    "state_shape",  # {name} {t} {expected} {got} {likely}
    "out_values",  # {t} {err} {where} {likely}
    "state_values",  # {name} {t} {err} {where} {likely}
)

# The engine's text for each role (with {fn}, and {state}: the state's names); a lesson's `keys`
# override them role by role.
STEP_CALL_WORDS: dict[str, str] = {
    "raised": "check.step_call_raised",
    "returns": "check.step_call_returns",
    "state_got": "value.step_call_state",
    "out": "value.step_call_out",
    "state_shape": "check.step_call_state_shape",
    "out_values": "check.step_call_values",
    "state_values": "check.step_call_state_values",
}


# The engine's likely mistake where no (out, state) pair came ("returns") and where the state is
# not its tensors' tuple ("state_pair"), with {tuple}: the state as Python writes it, "(k, v)".
STEP_RETURN_LIKELY: dict[str, str] = {
    "returns": "likely.step_output_only",
    "state_pair": "likely.step_state_tuple",
}


def step_return_likely(names: Sequence[str]) -> dict[str, dict]:
    """STEP_RETURN_LIKELY's messages for a state of the tensors names ("(h,)" for one)."""
    literal = f"({', '.join(names)}{',' if len(names) == 1 else ''})"
    return {role: msg(key, tuple=literal) for role, key in STEP_RETURN_LIKELY.items()}


def step_call_words(keys: Mapping[str, str] | None = None) -> dict[str, str]:
    """STEP_CALL_WORDS with a lesson's own keys (role -> its key) put over them."""
    return {**STEP_CALL_WORDS, **(keys or {})}


def probe_step_grid(
    ctx: ProbeContext,
    make: Callable[[int], tuple[Any, dict]],
    call: Callable[[Any, int, int, bool], dict | None],
    pasts: Sequence[Sequence[int]],
) -> list[dict]:
    """For each size i: make(i) -> (obj, failed) (obj None: it could not be made, failed says
    why), then call(obj, i, t, primary) for each past length t of pasts[i] (the first call of
    the first size is primary): [failed or {"calls": [...]}]."""
    out = []
    for i, lengths in enumerate(pasts):
        obj, failed = make(i)
        calls = [call(obj, i, t, i == j == 0) for j, t in enumerate(lengths)]
        out.append(failed or {"calls": calls})
    return out


def step_call(
    ctx: ProbeContext,
    step: Callable | None,
    x: torch.Tensor,
    state: Sequence[torch.Tensor],
    t: int,
    *,
    scale: float | None = None,
    primary: bool = False,
    axis: int = 1,
    state_axis: int = 2,
) -> dict | None:
    """step on x's token at position t with the state of the t before it (each tensor of
    state cut to t along state_axis; None at 0), the token and the state's last tensor times
    scale where given; None where there is no step (its object was not made)."""
    if step is None:
        return None
    x_t = x.narrow(axis, t, 1)
    past = [s.narrow(state_axis, 0, t) for s in state]
    if scale is not None:
        x_t, past[-1] = x_t * scale, past[-1] * scale
    return trimmed(ctx.call(step, x_t, None if t == 0 else tuple(past), primary=primary))


def _said(found: Any, *args: Any) -> Any:
    return found(*args) if callable(found) else found


def require_states_near(
    v: Verdict,
    state: Sequence[Any],
    want: Sequence[torch.Tensor],
    t: int,
    *,
    key: str,
    names: Sequence[str],
    likely: object,
) -> None:
    """Each tensor of state close to want's (check values): key {name} {t} {err} {where}
    {likely}, likely a message or a function giving one."""
    for name, got, ref in zip(names, state, want, strict=True):
        require_near(v, "values", key, got, ref, name=name, t=t, likely=likely)
    v.expect("values", True)


def require_out_state(
    v: Verdict,
    value: Any,
    *,
    key: str,
    fn: str,
    likely: Mapping[str, Any],
    state: str = "",
) -> tuple:
    """value as (out, state), or the step stops: returns with key {fn} {state} {got}
    {likely}, the likely the engine's for what came (None, a bare tensor...), else
    likely["returns"]. state: the state's names, as the message writes them ("k, v")."""
    if not (isinstance(value, tuple) and len(value) == 2):
        said = likely_for_value(value)
        if said["key"] == "likely.unknown":
            said = likely["returns"]
        v.require("returns", False, key, fn=fn, state=state, got=describe(value), likely=said)
    return value


def judge_step_call(
    v: Verdict,
    call: dict,
    t: int,
    want_out: torch.Tensor,
    want_state: Sequence[torch.Tensor],
    *,
    fn: str,
    keys: Mapping[str, str] | None = None,
    likely: Mapping[str, Any],
    names: Sequence[str],
    state_axis: int = 2,
) -> None:
    """One call of the step at position t against the reference's (want_out, want_state),
    in the words of step_call_words(keys). A wrong state is first said by its fault
    (state_shape_fault, state_value_fault along state_axis: state_fault_likely), else by
    likely["state_shape"] / likely["state_values"].
    Checks, in order: runs (keys["raised"], likely["raised"](error)), returns (a pair, its
    likely the engine's for what came, else likely["returns"]; then a state of len(want_state)
    tensors, likely["state_pair"]; both by default step_return_likely's), shape of out
    (likely["out_shape"](out)) and of each state tensor (likely["state_shape"]()), finite,
    matches-pytorch (likely["out_values"](out)) and values (likely["state_values"]()).
    names: the state tensors' names in the messages."""
    keys, error, names_said = step_call_words(keys), call.get("error"), ", ".join(names)

    def _default(role: str) -> Callable[[], dict]:  # made on a failure only
        return lambda: step_return_likely(names)[role]

    likely = {"returns": _default("returns"), "state_pair": _default("state_pair"), **likely}

    def _state_likely(find: Callable, got: Any, want: Any, role: str = "state_shape") -> Any:
        fault = find(list(got), want, t, axis=state_axis)  # on a failure only
        return state_fault_likely(fault, axis=state_axis, names=names) or _said(likely[role])

    raised = likely["raised"]
    require_call_ran(v, call, keys["raised"], fn=fn, t=t, likely=lambda: raised(error))
    out, state = require_out_state(
        v, call["value"], key=keys["returns"], fn=fn, likely=likely, state=names_said
    )
    got = msg(keys["state_got"], got=describe(state))
    ok = isinstance(state, tuple) and len(state) == len(want_state)
    v.require(
        "returns",
        ok,
        keys["returns"],
        fn=fn,
        state=names_said,
        got=got,
        likely=likely["state_pair"],
    )
    v.expect("returns", True)
    what: Any = msg(keys["out"], t=t)  # a value label, as lessons pass it
    out_likely = _said(likely["out_shape"], out)
    out = require_tensor(v, "shape", what, out, tuple(want_out.shape), out_likely)
    for name, s, want in zip(names, state, want_state, strict=True):
        v.require(
            "shape",
            torch.is_tensor(s) and s.shape == want.shape,
            keys["state_shape"],
            name=name,
            t=t,
            expected=shape_str(want.shape),
            got=shape_str(s.shape) if torch.is_tensor(s) else describe(s),
            likely=lambda: _state_likely(state_shape_fault, state, want_state[0].shape),
        )
    require_finite(v, what, out, likely=msg("likely.unknown"))
    said = likely["out_values"]
    require_near(
        v, "matches-pytorch", keys["out_values"], out, want_out, t=t, likely=lambda: said(out)
    )
    v.expect("matches-pytorch", True)
    require_states_near(
        v,
        state,
        want_state,
        t,
        key=keys["state_values"],
        names=names,
        likely=lambda: _state_likely(state_value_fault, state, want_state, "state_values"),
    )
