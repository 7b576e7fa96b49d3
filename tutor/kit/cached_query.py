"""One new token's multi-head attention over a cache of keys and values (a KV cache), and the
usual wrong versions of it, rebuilt to name the one a learner's step matches: for any step
that computes the output of the newest token from the keys and values of every token so far
(incremental decoding, beam search, a sliding window's cache).

The weights are as nn.Linear stores them: W_q (d_out, d_in), out_w (d_out, d_out), out_b; the
cache k, v is (B, H, T, head_dim), the new token's own key and value last.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from tutor.kit.heads import split_heads
from tutor.kit.judge_tools import msg

Mistakes = list[tuple[Callable[[], torch.Tensor], dict]]


def attend_cached(
    x_new: torch.Tensor,
    w: Mapping[str, torch.Tensor],
    H: int,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    scale: float | None = None,
    dim: int = -1,
    proj_out: bool = True,
) -> torch.Tensor:
    """The output (B, 1, d_out) of x_new (B, 1, d_in), one new token, attending with H heads
    to keys k and values v: q from W_q, softmax over dim of the scores over scale (by default
    √head_dim), the heads merged, then out_w and out_b unless proj_out is False."""
    q = split_heads(x_new, w["W_q"], H)
    hd = q.shape[-1]
    s = q @ k.transpose(2, 3) / (hd**0.5 if scale is None else scale)
    c = torch.softmax(s, dim=dim) @ v
    c = c.transpose(1, 2).reshape(x_new.shape[0], 1, -1)
    return c @ w["out_w"].T + w["out_b"] if proj_out else c


def cached_attention_step(
    x: torch.Tensor,
    cache: tuple[torch.Tensor, torch.Tensor] | None,
    w: Mapping[str, torch.Tensor],
    H: int,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """The reference step of a KV cache: x's keys and values (W_k, W_v, split into H heads)
    appended to the cache along the tokens' axis (None: the first token), then attend_cached;
    (out, (k, v))."""
    k, v = split_heads(x, w["W_k"], H), split_heads(x, w["W_v"], H)
    if cache is not None:
        k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
    return attend_cached(x, w, H, k, v), (k, v)


def cached_query_mistakes(
    x_new: torch.Tensor,
    w: Mapping[str, torch.Tensor],
    H: int,
    k: torch.Tensor,
    v: torch.Tensor,
) -> Mistakes:
    """(make, likely) pairs for matching_mistake: attend_cached done wrong, each only where it
    can be told apart from the right output. With a past (t > 0 earlier tokens in k and v): the
    cache left out, the new query masked as the first one or as the one before it, the new
    token put first in the keys or the values only; then the softmax over the queries, no
    output projection, no scale, a scale by the layer's width (H > 1), by x's width, or by the
    cache's length."""
    d_in, d_out = x_new.shape[-1], w["W_q"].shape[0]
    hd, t = d_out // H, k.shape[2] - 1
    past = t > 0
    first = [t, *range(t)]  # the new token first, in one of the two only: the output shows it

    def wrong(keys: torch.Tensor = k, values: torch.Tensor = v, **how: Any) -> Callable:
        return lambda: attend_cached(x_new, w, H, keys, values, **how)

    def wide(width: int) -> dict:
        return msg("likely.scale_layer_width", width=width, hd=hd)

    table = [
        (past, wrong(k[:, :, t:], v[:, :, t:]), msg("likely.query_past_ignored")),
        (past, wrong(k[:, :, :1], v[:, :, :1]), msg("likely.query_masked_first")),
        (past, wrong(k[:, :, :t], v[:, :, :t]), msg("likely.query_self_hidden")),
        (past, wrong(values=v[:, :, first]), msg("likely.query_one_prepended")),
        (past, wrong(keys=k[:, :, first]), msg("likely.query_one_prepended")),
        (True, wrong(dim=-2), msg("likely.softmax_dim")),
        (True, wrong(proj_out=False), msg("likely.out_proj_missing")),
        (True, wrong(scale=1.0), msg("likely.scale_none")),
        (H > 1, wrong(scale=d_out**0.5), wide(d_out)),
        (d_in not in (hd, d_out), wrong(scale=d_in**0.5), wide(d_in)),
        (past and t + 1 != hd, wrong(scale=(t + 1) ** 0.5), msg("likely.scores_scale_seq_len")),
    ]
    return [(make, likely) for shown, make, likely in table if shown]
