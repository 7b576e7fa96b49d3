"""The kit's head split and large-scores weights: the split is nn.Linear's projection in
(B, H, T, head_dim), and the stretched W_q makes the largest score any query of any head sees LARGE_SCORES."""

from __future__ import annotations

import torch

from tutor.kit import LARGE_SCORES, large_scores_weights, split_heads


def test_the_split_is_linears_projection_per_head():
    x, weight = torch.randn(2, 5, 6), torch.randn(8, 6)
    heads = split_heads(x, weight, 4)
    assert heads.shape == (2, 4, 5, 2)
    linear = torch.nn.functional.linear(x, weight)
    assert torch.allclose(heads[:, 1], linear[..., 2:4])


def test_the_stretched_weights_reach_large_scores_and_leave_the_rest():
    x = torch.randn(2, 5, 6)
    w = {"W_q": torch.randn(8, 6), "W_k": torch.randn(8, 6), "W_v": torch.randn(8, 6)}
    big = large_scores_weights(x, w, 2)
    q, k = split_heads(x, big["W_q"], 2), split_heads(x, big["W_k"], 2)
    future = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    top = float((q @ k.transpose(2, 3) / 4**0.5).masked_fill(future, 0.0).abs().max())
    assert abs(top - LARGE_SCORES) < 1e-3 * LARGE_SCORES
    assert big["W_k"] is w["W_k"] and big["W_v"] is w["W_v"]


def _layer(x, w, H, *, bias=True, scale=None):
    """A causal multi-head layer in the usual layout; scale: the divisor (√head_dim if None)."""
    B, T, _ = x.shape
    d_out = w["W_q"].shape[0]
    q, k, v = (split_heads(x, w[n], H) for n in ("W_q", "W_k", "W_v"))
    s = q @ k.transpose(2, 3) / (scale or (d_out // H) ** 0.5)
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    c = torch.softmax(s.masked_fill(future, float("-inf")), -1) @ v
    c = c.transpose(1, 2).reshape(B, T, d_out)
    return c @ w["out_w"].T + (w["out_b"] if bias else 0)


def _weights(d_in, d_out):
    g = torch.Generator().manual_seed(0)
    w = {n: torch.randn(d_out, d_in, generator=g) for n in ("W_q", "W_k", "W_v")}
    return {**w, "out_w": torch.randn(d_out, d_out, generator=g), "out_b": torch.randn(d_out)}


def test_multi_head_mistakes_name_a_wrong_layer_and_not_a_right_one():
    from tutor.kit import matching_mistake, msg, multi_head_mistakes

    x, w = torch.randn(2, 5, 6), _weights(6, 12)
    mistakes = multi_head_mistakes(x, w, 3)
    assert matching_mistake(_layer(x, w, 3), mistakes) == msg("likely.unknown")
    assert matching_mistake(_layer(x, w, 3, bias=False), mistakes) == msg("likely.no_out_bias")
    assert matching_mistake(_layer(x, w, 3, scale=12**0.5), mistakes) == msg("likely.scale_d_out")
    given = msg("lesson.no_mask")
    unmasked = multi_head_mistakes(x, w, 3, no_mask=given)
    assert given in [likely for _, likely in unmasked]
    # One head: head_dim is d_out, so neither that scale nor a split of the heads can show.
    one = {likely["key"] for _, likely in multi_head_mistakes(x, w, 1)}
    assert not one & {"likely.scale_d_out", "likely.merge_heads", "likely.per_head_transpose"}
