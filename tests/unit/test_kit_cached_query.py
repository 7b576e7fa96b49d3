"""The kit's one-query attention over a cache (tutor.kit.cached_query): the right output is the
full causal pass's last row, and each usual wrong version, written here independently, is named
by cached_query_mistakes."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tutor.kit import attend_cached, cached_query_mistakes, matching_mistake, split_heads

G = torch.Generator().manual_seed(3)
B, T, D_IN, D_OUT, H = 2, 5, 6, 8, 2
X = torch.randn(B, T, D_IN, generator=G)
W = {
    "W_q": torch.randn(D_OUT, D_IN, generator=G),
    "W_k": torch.randn(D_OUT, D_IN, generator=G),
    "W_v": torch.randn(D_OUT, D_IN, generator=G),
    "out_w": torch.randn(D_OUT, D_OUT, generator=G),
    "out_b": torch.randn(D_OUT, generator=G),
}
K, V = split_heads(X, W["W_k"], H), split_heads(X, W["W_v"], H)
X_NEW = X[:, -1:]


def full_pass() -> torch.Tensor:
    q = split_heads(X, W["W_q"], H)
    c = F.scaled_dot_product_attention(q, K, V, is_causal=True)
    return c.transpose(1, 2).reshape(B, T, D_OUT) @ W["out_w"].T + W["out_b"]


def learner(scores_of=None, softmax_dim=-1, keys=K, values=V, project=True) -> torch.Tensor:
    """A learner's step, written out: q of the new token against the cache."""
    q = (X_NEW @ W["W_q"].T).view(B, 1, H, -1).transpose(1, 2)
    s = q @ keys.transpose(-2, -1)
    s = s / (q.shape[-1] ** 0.5) if scores_of is None else scores_of(s)
    c = (torch.softmax(s, dim=softmax_dim) @ values).transpose(1, 2).reshape(B, 1, D_OUT)
    return c @ W["out_w"].T + W["out_b"] if project else c


def named(y: torch.Tensor, k=K, v=V) -> str:
    return matching_mistake(y, cached_query_mistakes(X_NEW, W, H, k, v))["key"]


def test_the_right_step_is_the_full_pass_last_row_and_no_mistake():
    y = attend_cached(X_NEW, W, H, K, V)
    assert torch.allclose(y, full_pass()[:, -1:], atol=1e-5)
    assert torch.allclose(learner(), y, atol=1e-5)
    assert named(y) == "likely.unknown"


def test_each_wrong_step_is_named():
    assert named(learner(keys=K[:, :, -1:], values=V[:, :, -1:])) == "likely.query_past_ignored"
    assert named(learner(keys=K[:, :, :1], values=V[:, :, :1])) == "likely.query_masked_first"
    assert named(learner(keys=K[:, :, :-1], values=V[:, :, :-1])) == "likely.query_self_hidden"
    order = [T - 1, *range(T - 1)]
    assert named(learner(values=V[:, :, order])) == "likely.query_one_prepended"
    assert named(learner(softmax_dim=-2)) == "likely.softmax_dim"
    assert named(learner(project=False)) == "likely.out_proj_missing"
    assert named(learner(scores_of=lambda s: s)) == "likely.scale_none"
    assert named(learner(scores_of=lambda s: s / D_OUT**0.5)) == "likely.scale_layer_width"
    assert named(learner(scores_of=lambda s: s / D_IN**0.5)) == "likely.scale_layer_width"
    assert named(learner(scores_of=lambda s: s / T**0.5)) == "likely.scores_scale_seq_len"


def test_without_a_past_the_cache_mistakes_are_left_out():
    k, v = K[:, :, :1], V[:, :, :1]
    said = {likely["key"] for _, likely in cached_query_mistakes(X[:, :1], W, H, k, v)}
    assert not said & {"likely.query_past_ignored", "likely.query_one_prepended"}
    assert "likely.softmax_dim" in said


def test_the_reference_step_token_by_token_is_the_full_pass():
    from tutor.kit import cached_attention_step

    cache, outs = None, []
    for t in range(T):
        out, cache = cached_attention_step(X[:, t : t + 1], cache, W, H)
        outs.append(out)
    assert torch.allclose(torch.cat(outs, dim=1), full_pass(), atol=1e-5)
    assert torch.allclose(cache[0], K, atol=1e-6) and torch.allclose(cache[1], V, atol=1e-6)
