"""Leakage judged by a later token and drawn as a map: how far the outputs before a position
moved when the token there changed (the notebooks' leakage test), and the panel that draws the
learner's full map (probe_leak_map) beside the reference's."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from tutor.kit.judge_tools import Verdict, msg, round_matrix
from tutor.kit.probe_tools import token_changes
from tutor.kit.regions import leak_map
from tutor.model.view_items import weights

LEAK_TOLERANCE = 1e-6  # the notebooks' limit: an earlier output moved by more has seen the token
# The leakage panel's texts (view_items.WORDS' roles): how far outputs moved, not weights.
LEAK_MAP_WORDS = {
    "weights": "visual.leak_title",
    "legend_learner": "visual.leak_legend_learner",
    "legend_reference": "visual.leak_legend_reference",
    "legend_masked": "visual.leak_legend_masked",
    "legend_leak": "visual.leak_legend_leak",
    "axis_keys": "visual.leak_axis_keys",
    "axis_queries": "visual.leak_axis_queries",
    "weights_key_mode": "visual.leak_key_mode",
}


def moved_before(a: torch.Tensor, b: torch.Tensor, pos: int) -> float:
    """The largest change between two outputs (B, T, …) at the positions before pos: what a
    change of the token at pos leaked into the past. 0 for pos 0, which has no past."""
    if pos == 0:
        return 0.0
    return float((a[:, :pos].double() - b[:, :pos].double()).abs().max())


def require_no_leak(
    v: Verdict,
    base: torch.Tensor,
    moved: torch.Tensor,
    pos: int,
    *,
    likely: Any,
    key: str = "check.no_leak",
    check_id: str = "no-leak",
) -> None:
    """The notebooks' leakage test: the token at pos changed (base → moved), no output before
    it may move by LEAK_TOLERANCE or more. Failure: key {pos} {got} {likely} (the engine's
    check.no_leak unless a lesson words it; likely.no_leak is the engine's usual likely)."""
    amount = moved_before(base, moved, pos)
    v.require(check_id, amount < LEAK_TOLERANCE, key, pos=pos, got=amount, likely=likely)


def reference_leak_outputs(
    reference: Callable[..., torch.Tensor], x: torch.Tensor, delta: torch.Tensor, *rest: Any
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The reference's output for x and for each of token_changes(x, delta), as probe_leak_map
    calls the learner's: the other half of leak_map_panel."""
    return reference(x, *rest), [reference(changed, *rest) for changed in token_changes(x, delta)]


def leak_map_panel(
    label: dict,
    base: torch.Tensor | None,
    moved: torch.Tensor | None,
    ref_base: torch.Tensor,
    ref_moved: Any,
    words: Mapping[str, Any] | None = None,
) -> dict:
    """The weights panel's entry for a leakage map: the learner's map beside the reference's,
    both on the reference's scale, so that a leak shows at the very cell that leaks, as large
    as it is. words: the panel's texts (view_items.WORDS), for a map is not weights; by default
    the engine's (LEAK_MAP_WORDS)."""
    if words is None:
        words = {role: msg(key) for role, key in LEAK_MAP_WORDS.items()}
    ref = leak_map(ref_base, ref_moved)
    assert ref is not None  # the reference's outputs always have the shapes of a map
    top = float(ref.max()) or 1.0
    mine = leak_map(base, moved)
    return weights(
        label,
        round_matrix(mine / top) if mine is not None else None,
        round_matrix(ref / top),
        words=dict(words),
    )
