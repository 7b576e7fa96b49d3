"""Multi-head helpers for a judge's own computations: x projected by a layer's weight and split
into heads as the lab's layers do, and a layer's weights stretched until its scores are large."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from tutor.kit.judge_tools import large_scores_factor


def split_heads(x: torch.Tensor, weight: torch.Tensor, H: int) -> torch.Tensor:
    """x (B, T, d_in) projected by weight (d_out, d_in), as nn.Linear does, and split into H
    heads: (B, H, T, d_out // H)."""
    B, T, _ = x.shape
    return (x @ weight.T).view(B, T, H, -1).transpose(1, 2)


def large_scores_weights(
    x: torch.Tensor, w: Mapping[str, torch.Tensor], H: int, q: str = "W_q", k: str = "W_k"
) -> dict[str, torch.Tensor]:
    """w with w[q] stretched until the largest scaled score a query of any head sees on x (its
    own key and the earlier ones) is the kit's LARGE_SCORES, past float32's exp range; the rest
    as it was."""
    qh, kh = split_heads(x, w[q], H), split_heads(x, w[k], H)
    return {**w, q: w[q] * large_scores_factor(qh @ kh.transpose(2, 3) / qh.shape[-1] ** 0.5)}
