"""The dropout the checks put in place of torch's while they judge a layer in train mode.

Torch's dropout draws random numbers, and a per-head loop draws them in another order than
one call on all heads, so no seed makes two correct layers agree. This one drops by position
instead: element (…, i, j) is dropped when a hash of (i, j) falls below p, i the query and j
the key, on whichever axes they are. A correct layer
then gives exactly what the reference gives, however it splits the heads; dropout on the
scores, the output or twice does not. Used by the child (probe_kit) and the judge alike.
"""

from __future__ import annotations

import torch

_GOLDEN = 2654435761  # Knuth's multiplicative hash: the high bits of (h * _GOLDEN) mod 2³² mix well


def keep_mask(rows: int, cols: int, p: float) -> torch.Tensor:
    """(rows, cols) bool: True where an element survives dropout with probability p."""
    i = torch.arange(rows, dtype=torch.int64).unsqueeze(1)
    j = torch.arange(cols, dtype=torch.int64).unsqueeze(0)
    h = ((i % 4096) * 4096 + (j % 4096)) * _GOLDEN % (1 << 32)
    return (h >> 8).double() / float(1 << 24) >= p


def apply(x: torch.Tensor, p: float, axes: tuple[int, int] = (-2, -1)) -> torch.Tensor:
    """x with the fixed mask of its (query, key) axes applied, survivors scaled by 1/(1-p):
    element (…, i, …, j, …) is kept or dropped by (i, j) alone, whatever the other axes and
    their order, so weights kept as [T_q, T_k, B, H] meet the same mask as [B, H, T_q, T_k]."""
    if p <= 0:
        return x
    if p >= 1:
        return x * 0
    if x.dim() < 2:
        keep = keep_mask(1, x.shape[-1] if x.dim() else 1, p).to(x.dtype).reshape(x.shape)
        return x * keep / (1.0 - p)
    qa, ka = (a % x.dim() for a in axes)
    rows, cols = x.shape[qa], x.shape[ka]
    keep = keep_mask(rows, cols, p).to(x.dtype)
    if qa > ka:
        keep = keep.T
    shape = [1] * x.dim()
    shape[qa], shape[ka] = rows, cols
    return x * keep.reshape(shape) / (1.0 - p)
