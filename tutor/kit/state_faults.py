"""What a wrong state says about the step that made it: a state of tensors that should hold
t + 1 tokens along one axis after the token at position t (a KV cache, a running history),
compared with the reference's. The faults are names, said in the engine's words by
state_fault_likely (STATE_FAULT_WORDS), or in a lesson's own for any fault. For
judge_step_call's and judge_step_discipline's diagnoses."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from tutor.kit.judge_tools import close, msg

# The engine's likely mistake for each fault (state_shape_fault, state_value_fault and
# step_discipline's state_growth_fault), with {axis} {first} {final} {state}.
STATE_FAULT_WORDS: dict[str, str] = {
    "last_behind": "likely.state_last_behind",
    "not_appended": "likely.state_not_appended",
    "given_back": "likely.state_given_back",
    "layout": "likely.state_layout",
    "twice": "likely.state_twice",
    "axis": "likely.state_axis",
    "prepended": "likely.state_prepended",
    "swapped": "likely.state_swapped",
}


def state_fault_likely(
    fault: str | None,
    *,
    axis: int,
    names: Sequence[str],
    keys: Mapping[str, str] | None = None,
) -> dict | None:
    """The likely mistake behind a fault, in the engine's words (or keys': a lesson's own key
    for any fault), with the tokens' axis and the state's tensor names; None for no fault or
    one without words ("other")."""
    words = {**STATE_FAULT_WORDS, **(keys or {})}
    if fault not in words:
        return None
    state = ", ".join(names)
    return msg(words[fault], axis=axis, first=names[0], final=names[-1], state=state)


def tokens_elsewhere(shape: Sequence[int], want: Sequence[int], axis: int) -> bool:
    """shape is want with the tokens' axis swapped with another one: the state laid out with
    its tokens on the wrong axis ((B, T, H, d) for (B, H, T, d), say)."""
    shape, want = tuple(shape), tuple(want)
    if len(shape) != len(want) or shape == want:
        return False
    swaps = []
    for j in range(len(want)):
        if j != axis:
            swapped = list(want)
            swapped[axis], swapped[j] = swapped[j], swapped[axis]
            swaps.append(tuple(swapped))
    return shape in swaps


def state_shape_fault(got: Sequence[Any], want: Sequence[int], t: int, *, axis: int) -> str | None:
    """Why the state got (its tensors) after the token at position t does not have shape want
    (t + 1 tokens along axis; for a state already found wrong), the first that holds:
    "last_behind" (the first tensor right, another not), "not_appended" (one token after
    t > 0), "given_back" (t tokens: the state as it came), "layout" (tokens_elsewhere), "twice"
    (2t + 1 or t + 2 tokens), "axis" (as many elements as want: joined along another axis);
    None when none holds."""
    want = tuple(want)
    shapes = [tuple(s.shape) if isinstance(s, torch.Tensor) else () for s in got]
    first = shapes[0] if shapes else ()

    def tokens(n: int) -> tuple:
        return (*want[:axis], n, *want[axis + 1 :])

    if first == want and any(s != want for s in shapes[1:]):
        return "last_behind"
    if t > 0 and first == tokens(1):
        return "not_appended"
    if t > 0 and first == tokens(t):
        return "given_back"
    if tokens_elsewhere(first, want, axis):
        return "layout"
    if len(first) == len(want) and first[axis] == 2 * t + 1 or first == tokens(t + 2):
        return "twice"
    if got and isinstance(got[0], torch.Tensor) and got[0].numel() == math.prod(want):
        return "axis"
    return None


def state_value_fault(
    got: Sequence[Any], want: Sequence[torch.Tensor], t: int, *, axis: int
) -> str | None:
    """Why a state of the right shape after the token at position t holds the wrong values,
    the first that holds: "prepended" (a tensor with the new token first, not last), "swapped"
    (a tensor holds another's values); None when neither."""
    order = torch.tensor([t, *range(t)])  # the new token put first
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if not close(g, w):
            if t > 0 and close(g, w.index_select(axis, order)):
                return "prepended"
            if any(close(g, other) for j, other in enumerate(want) if j != i):
                return "swapped"
    return None
