"""Multi-head helpers for a judge's own computations: x projected by a layer's weight and split
into heads as the lab's layers do, a layer's weights stretched until its scores are large, and
the usual wrong versions of a causal multi-head layer (for matching_mistake)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F

from tutor.kit.judge_tools import large_scores_factor, msg
from tutor.kit.regions import future_region


def split_heads(x: torch.Tensor, weight: torch.Tensor, H: int) -> torch.Tensor:
    """x (B, T, d_in) projected by weight (d_out, d_in), as nn.Linear does, and split into H
    heads: (B, H, T, d_out // H)."""
    B, T, _ = x.shape
    return (x @ weight.T).view(B, T, H, -1).transpose(1, 2)


def causal_multi_head(
    x: torch.Tensor, w: Mapping[str, torch.Tensor], H: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(output, weights) of causal multi-head attention on x (B, T, d_in), H heads, the
    weights w as nn.Linear stores them (W_q, W_k, W_v, out_w, out_b): the output by PyTorch's
    kernel (scaled_dot_product_attention, is_causal), the weights (B, H, T, T) by hand."""
    B, T, _ = x.shape
    q, k, v = (split_heads(x, w[n], H) for n in ("W_q", "W_k", "W_v"))
    ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out = ctx.transpose(1, 2).reshape(B, T, -1) @ w["out_w"].T + w["out_b"]
    hd = q.shape[-1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = (q @ k.transpose(2, 3) / hd**0.5).masked_fill(future, float("-inf"))
    return out, torch.softmax(scores, dim=-1)


def large_scores_weights(
    x: torch.Tensor, w: Mapping[str, torch.Tensor], H: int, q: str = "W_q", k: str = "W_k"
) -> dict[str, torch.Tensor]:
    """w with w[q] stretched until the largest scaled score a query of any head sees on x (its
    own key and the earlier ones) is the kit's LARGE_SCORES, past float32's exp range; the rest
    as it was."""
    qh, kh = split_heads(x, w[q], H), split_heads(x, w[k], H)
    return {**w, q: w[q] * large_scores_factor(qh @ kh.transpose(2, 3) / qh.shape[-1] ** 0.5)}


def multi_head_mistakes(
    x: torch.Tensor, w: Mapping[str, torch.Tensor], H: int, *, no_mask: dict | None = None
) -> list[tuple[Callable[[], torch.Tensor], dict]]:
    """(make, likely) pairs for matching_mistake: the usual wrong versions of a causal
    multi-head layer's output on x, the layer with H heads and weights w as nn.Linear stores
    them (W_q, W_k, W_v (d_out, d_in), out_w (d_out, d_out), out_b): the scale, the mask, the
    softmax's dim, the split and merge of the heads, the output projection. A scale by a size
    equal to head_dim cannot show and is left out, and so are the head mistakes of one head.
    no_mask: the likely for no mask at all (by default likely.no_mask)."""
    B, T, d_in = x.shape
    d_out = w["W_q"].shape[0]
    hd = d_out // H
    proj = [x @ w[n].T for n in ("W_q", "W_k", "W_v")]
    split = tuple(p.view(B, T, H, hd).transpose(1, 2) for p in proj)
    future, inf = future_region(T), float("-inf")

    def attend(
        scale: float = hd**0.5,
        mask: torch.Tensor = future,
        fill: float = inf,
        merge: bool = True,
        out: str = "whole",
        after: bool = False,
        dim: int = -1,
        heads: tuple = split,
        scale_weights: bool = False,
    ) -> torch.Tensor:
        q, k, v = heads
        s = q @ k.transpose(2, 3) / (1.0 if scale_weights else scale)
        if after:
            wts = torch.softmax(s, -1).masked_fill(mask, 0.0)
        else:
            wts = torch.softmax(s.masked_fill(mask, fill), dim)
        c = (wts / scale if scale_weights else wts) @ v
        c = (c.transpose(1, 2) if merge else c).reshape(B, T, d_out)
        if out == "none":
            return c
        return c @ w["out_w"].T + (w["out_b"] if out == "whole" else 0)

    def scaled(size: int, likely: dict) -> list:
        return [] if size == hd else [(lambda: attend(scale=size**0.5), likely)]

    wide = (
        msg("likely.scale_layer_width", width=d_out, hd=hd)
        if d_in == d_out
        else msg("likely.scale_d_out")
    )
    ones = torch.ones(T, T, dtype=torch.bool)
    no_transpose = tuple(p.view(B, H, T, hd) for p in proj)
    # view(B, T, H, hd) without transpose(1, 2): the "scores" then compare heads, (B, T, H, H)
    untransposed = tuple(p.view(B, T, H, hd) for p in proj)
    head_mask = torch.ones(H, H, dtype=torch.bool).triu(1)
    split_mistakes = [
        (lambda: attend(heads=no_transpose, merge=False), msg("likely.heads_no_transpose")),
        (lambda: attend(heads=no_transpose), msg("likely.heads_no_transpose")),
        (
            lambda: attend(heads=untransposed, mask=head_mask, merge=False),
            msg("likely.per_head_transpose"),
        ),
        (lambda: attend(heads=untransposed, mask=head_mask), msg("likely.per_head_transpose")),
        (lambda: attend(merge=False), msg("likely.merge_heads")),
    ]
    return [
        *scaled(d_out, wide),
        *scaled(d_in, msg("likely.scale_d_in_multi", d_in=d_in, hd=hd)),
        *scaled(1, msg("likely.scale_none")),
        *scaled(T, msg("likely.scale_seq_len_multi", T=T, hd=hd)),
        (lambda: attend(scale_weights=True), msg("likely.scale_after_softmax_multi")),
        *scaled(H, msg("likely.scale_heads", H=H, hd=hd)),
        (
            lambda: attend(mask=torch.zeros(T, T, dtype=torch.bool)),
            no_mask or msg("likely.no_mask"),
        ),
        (lambda: attend(fill=0.0), msg("likely.fill_zero")),
        (lambda: attend(after=True), msg("likely.mask_after_softmax")),
        (lambda: attend(mask=future.T), msg("likely.mask_transposed")),
        (lambda: attend(mask=~future), msg("likely.mask_inverted_fill")),
        (lambda: attend(mask=ones.triu()), msg("likely.mask_diagonal")),
        (lambda: attend(dim=-2), msg("likely.softmax_dim")),
        *(split_mistakes if H > 1 else []),
        (lambda: attend(out="none"), msg("likely.out_proj_missing")),
        (lambda: attend(out="no bias"), msg("likely.no_out_bias")),
    ]
