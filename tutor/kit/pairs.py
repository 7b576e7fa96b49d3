"""A function that returns (out, weights), as attention functions do: its output, taken out
where it is needed: in the child (a leakage map or a story picks it) and in the judge (a check
judges it). The weights, for a heatmap: experiments.pair_weights."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tutor.kit.judge_tools import Verdict, describe, likely_for_value, msg


def out_of_pair(value: object) -> object:
    """In the child: the `out` of an (out, weights) pair, or what came when it is not one (the
    judge then says what came). A tuple subclass is a pair too (a namedtuple), whatever its own
    methods do: tuple's are called, not the learner's."""
    if isinstance(value, tuple) and tuple.__len__(value) == 2:
        return tuple.__getitem__(value, 0)
    return value


def pair_output(call: dict) -> torch.Tensor | None:
    """In the judge: the `out` tensor of a call's (out, weights) pair, or None when the call did
    not give one."""
    value = call.get("value")
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], torch.Tensor):
        return value[0]
    return None


def require_pair_output(
    v: Verdict, call: dict, fn: str, shape: Sequence[int], usual: str
) -> torch.Tensor:
    """The `out` of a call's (out, weights) pair, of that shape, or the step stops (check
    returns, check.returns_pair): for a step that judges only the output (leakage). The likely
    mistake is what the first element or the value itself shows (None, NumPy, a list), else
    usual, the lesson's key for the pair not returned as asked."""
    value = call.get("value")
    out = pair_output(call)
    if out is None and isinstance(value, tuple) and value:
        likely = likely_for_value(value[0])
        likely = msg(usual) if likely["key"] == "likely.unknown" else likely
    else:
        likely = likely_for_value(value) if value is None else msg(usual)
    v.require(
        "returns",
        out is not None and tuple(out.shape) == tuple(shape),
        "check.returns_pair",
        fn=fn,
        got=describe(value),
        likely=likely,
    )
    assert out is not None
    return out
