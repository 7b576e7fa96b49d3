"""The usual wrong versions of single-head causal attention weights, softmax(q·kᵀ/√d_k) with
the future hidden, for q = x·Wq and k = x·Wk as arguments (B, T, d_in) and (d_in, d_k): the
scale, the mask, the order of mask and softmax. The single-head counterpart of
heads.multi_head_mistakes, for matching_mistake; and a case's arguments drawn, its large scores."""

from __future__ import annotations

from collections.abc import Callable

import torch

from tutor.kit.judge_tools import large_scores_factor, matching_mistake, msg
from tutor.kit.regions import future_region
from tutor.kit.softmax_mistakes import masked_softmax, masked_softmax_mistakes

Candidates = list[tuple[Callable[[], torch.Tensor], dict]]


def single_head_mistakes(x: torch.Tensor, Wq: torch.Tensor, Wk: torch.Tensor) -> Candidates:
    """(make, likely) pairs: the kit's masked-softmax mistakes on the scaled scores, then the
    mask transposed or off by a diagonal, the scale (√d_in, none, d_k, √T: one equal to √d_k
    cannot show and is left out; after the softmax), q and k swapped, -inf written after the
    softmax, an additive mask (0·-inf = NaN)."""
    T, d_in, dk = x.shape[1], x.shape[2], Wq.shape[1]
    raw = (x @ Wq) @ (x @ Wk).transpose(-2, -1)
    scaled, future, inf = raw / dk**0.5, future_region(T), float("-inf")
    ones = torch.ones(T, T, dtype=torch.bool)
    flipped = msg("likely.mask_transposed")
    scales = [
        (d_in**0.5, msg("likely.scale_d_in", d_in=d_in, d_k=dk)),
        (1.0, msg("likely.scale_none")),
        (dk, msg("likely.scale_d")),
        (T**0.5, msg("likely.scale_seq_len", T=T, d_k=dk)),
    ]
    inf_after = msg("likely.inf_after_softmax")
    return [
        *masked_softmax_mistakes(scaled, future),
        *(
            (lambda m=m: masked_softmax(scaled, m), flipped)
            for m in (future.T, ones.tril(1), ones.tril())
        ),
        (lambda: masked_softmax(scaled, ones.triu(2)), msg("likely.mask_offset")),
        *((lambda s=s: masked_softmax(raw / s, future), m) for s, m in scales if s != dk**0.5),
        (lambda: masked_softmax(raw, future) / dk**0.5, msg("likely.scale_after_softmax")),
        (lambda: masked_softmax(scaled.transpose(-2, -1), future), msg("likely.swapped_qk")),
        (lambda: torch.softmax(scaled, -1).masked_fill(future, inf), inf_after),
        (
            lambda: torch.softmax(scaled + future.float() * inf, -1),
            msg("likely.additive_mask_nan"),
        ),
        (
            lambda: torch.softmax(scaled.masked_fill(future, inf), -2).masked_fill(future, inf),
            inf_after,
        ),
    ]


def single_head_likely(
    w: torch.Tensor, x: torch.Tensor, Wq: torch.Tensor, Wk: torch.Tensor, *_rest: object
) -> dict:
    """The likely mistake behind wrong weights w: the one of single_head_mistakes they equal,
    else likely.unknown. Takes (w, *args) of causal_attention(x, Wq, Wk, Wv), as
    PairFunction.diagnose does."""
    return matching_mistake(w, single_head_mistakes(x, Wq, Wk))


def draw_single_head_case(g: torch.Generator, B: int, T: int, d_in: int, d_k: int) -> dict:
    """causal_attention's arguments at a size, drawn from g in this order: x (B, T, d_in);
    Wq, Wk, Wv (d_in, d_k) scaled by 1/√d_in; x with its last token changed, then with its
    middle one (T // 2): a PairFunction's case ({"args", "x_last", "x_mid"})."""
    x = torch.randn(B, T, d_in, generator=g)
    W = tuple(torch.randn(d_in, d_k, generator=g) / d_in**0.5 for _ in range(3))
    moved = []
    for pos in (T - 1, T // 2):
        changed = x.clone()
        changed[:, pos, :] = torch.randn(B, d_in, generator=g) * 3
        moved.append(changed)
    return {"args": (x, *W), "x_last": moved[0], "x_mid": moved[1]}


def single_head_large_scores(
    x: torch.Tensor, Wq: torch.Tensor, Wk: torch.Tensor, Wv: torch.Tensor
) -> dict:
    """The arguments with Wq stretched until the largest score a query sees is LARGE_SCORES,
    and those scores: a PairFunction's "large" case ({"args", "scores"})."""
    scores = (x @ Wq) @ (x @ Wk).transpose(-2, -1) / Wq.shape[1] ** 0.5
    stretch = large_scores_factor(scores)
    return {"args": (x, Wq * stretch, Wk, Wv), "scores": scores * stretch}
