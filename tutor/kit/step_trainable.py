"""A step function that trains, as a property: one call of obj.<step>(x_t, state) with
gradients on, from a state of constants (the cache a model has from its earlier tokens), then
the backward of sum(out·g): each parameter's gradient against the reference step's
(reference_grads). The probe half (probe_step_trained) runs in the child, the judge half
(judge_step_trained) in the judge, in the words of layer_checks' gradient roles."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from tutor.kit.call_again import trimmed
from tutor.kit.judge_tools import Verdict, failure_params
from tutor.kit.layer_checks import layer_words
from tutor.kit.layer_training import judge_gradients, likely_for_backward
from tutor.kit.layers import train_step
from tutor.kit.probe_tools import ProbeContext


def probe_step_trained(
    ctx: ProbeContext,
    obj: Any,
    step: str,
    x_t: torch.Tensor,
    state: Sequence[torch.Tensor],
    g: torch.Tensor,
) -> dict | None:
    """train_step on obj with forward = the output of obj.<step>(x_t, copies of state), g the
    gradient's direction; None where obj was not made."""
    if obj is None:
        return None
    state = tuple(s.clone() for s in state)

    def forward() -> Any:
        out, _ = getattr(obj, step)(x_t, state)
        return out

    return trimmed(ctx.call(lambda: train_step(obj, forward, g, keep_y=False), grad=True))


def judge_step_trained(
    v: Verdict,
    train: dict | None,
    want: Mapping[str, torch.Tensor],
    *,
    keys: Mapping[str, str] | None = None,
    culprit: Callable[[], dict | None] = lambda: None,
) -> None:
    """probe_step_trained's call (nothing when None): a backward that raised fails trainable
    with keys["backward_raised"] and the error's fields, its likely likely_for_backward's, else
    culprit()'s; then judge_gradients against want ({parameter: gradient})."""
    if train is None:
        return
    words = layer_words(keys)
    if "error" in train:
        e = train["error"]
        likely = likely_for_backward(e, words)
        if likely["key"] == "likely.unknown":
            likely = culprit() or likely
        v.require("trainable", False, words["backward_raised"], **failure_params(e), likely=likely)
    judge_gradients(v, train["value"], want, None, keys=words)
