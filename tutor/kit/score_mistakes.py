"""The usual wrong ways to scale attention scores q·kᵀ / √d_k, rebuilt to name the one a
learner's scores match (or the weights softmaxed from them): for any step whose function
computes the scaled scores from q and k of shape (…, T, d_k), or attention weights from such
scores and a mask."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from tutor.kit.judge_tools import msg, shape_str
from tutor.kit.softmax_mistakes import masked_softmax

Mistakes = list[tuple[Callable[[], torch.Tensor], dict]]


def scaled_scores_mistakes(
    q: torch.Tensor, k: torch.Tensor, lab_d_k: int | None = None
) -> Mistakes:
    """(make, likely) pairs, in float64: no scale, divided by d_k, multiplied by √d_k, q and k
    swapped, divided by √T, by √lab_d_k (the lab's d_k written in, where given), then by the
    square root of any leading dimension of q (a batch, the heads) that is neither d_k nor T."""
    raw = q.double() @ k.double().transpose(-2, -1)
    dk, T = q.shape[-1], q.shape[-2]

    def over_root(n: int) -> Callable[[], torch.Tensor]:
        return lambda: raw / math.sqrt(n)

    found: Mistakes = [
        (lambda: raw, msg("likely.scale_none")),
        (lambda: raw / dk, msg("likely.scale_d")),
        (lambda: raw * math.sqrt(dk), msg("likely.scores_scale_multiplied")),
        (lambda: raw.transpose(-2, -1) / math.sqrt(dk), msg("likely.swapped_qk")),
        (over_root(T), msg("likely.scores_scale_seq_len")),
    ]
    if lab_d_k is not None:
        found.append((over_root(lab_d_k), msg("likely.scores_scale_literal", d_k=lab_d_k)))
    shape = shape_str(q.shape)
    for i, n in enumerate(q.shape[:-2]):
        if n not in (dk, T):
            said = msg("likely.scores_scale_other_dim", n=n, dim=i, shape=shape, d_k=dk)
            found.append((over_root(n), said))
    return found


def scaled_scores_likely(
    s: torch.Tensor, q: torch.Tensor, k: torch.Tensor, *, lab_d_k: int | None = None
) -> dict:
    """The first of scaled_scores_mistakes that scores s match (allclose in float64, atol 1e-5,
    rtol 1e-4), else likely.unknown."""
    s = s.double()
    for make, likely in scaled_scores_mistakes(q, k, lab_d_k):
        cand = make()
        if cand.shape == s.shape and torch.allclose(cand, s, atol=1e-5, rtol=1e-4):
            return likely
    return msg("likely.unknown")


def scale_from_weights_likely(
    w: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    mask: torch.Tensor,
    *,
    lab_d_k: int | None = None,
) -> dict:
    """The scale mistake behind weights w = masked_softmax(scores, mask) (mask True where
    hidden): the first of scaled_scores_mistakes whose masked softmax w matches (allclose,
    atol 1e-5), else likely.unknown."""
    w = w.double()
    for make, likely in scaled_scores_mistakes(q, k, lab_d_k):
        cand = masked_softmax(make(), mask)
        if cand.shape == w.shape and torch.allclose(cand, w, atol=1e-5):
            return likely
    return msg("likely.unknown")
