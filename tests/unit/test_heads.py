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
