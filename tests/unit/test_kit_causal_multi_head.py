"""The kit's causal multi-head reference (tutor.kit.heads.causal_multi_head): the output of
PyTorch's kernel and the weights by hand, each checked against a layer written out here."""

from __future__ import annotations

import torch

from tutor.kit import causal_multi_head

G = torch.Generator().manual_seed(11)
B, T, D_IN, D_OUT, H = 2, 5, 6, 8, 2
X = torch.randn(B, T, D_IN, generator=G)
W = {n: torch.randn(D_OUT, D_IN, generator=G) for n in ("W_q", "W_k", "W_v")}
W |= {"out_w": torch.randn(D_OUT, D_OUT, generator=G), "out_b": torch.randn(D_OUT, generator=G)}


def by_hand():
    hd = D_OUT // H
    q, k, v = ((X @ W[n].T).view(B, T, H, hd).transpose(1, 2) for n in ("W_q", "W_k", "W_v"))
    s = q @ k.transpose(-2, -1) / hd**0.5
    s = s.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
    wts = torch.softmax(s, dim=-1)
    out = (wts @ v).transpose(1, 2).reshape(B, T, D_OUT) @ W["out_w"].T + W["out_b"]
    return out, wts


def test_the_output_and_weights_are_the_causal_layers():
    out, wts = causal_multi_head(X, W, H)
    want_out, want_wts = by_hand()
    assert out.shape == (B, T, D_OUT) and wts.shape == (B, H, T, T)
    assert torch.allclose(out, want_out, atol=1e-5)
    assert torch.allclose(wts, want_wts, atol=1e-6)
    assert torch.all(wts.triu(1) == 0)  # no weight on the future


def test_one_head_is_not_two():
    out, _ = causal_multi_head(X, W, 1)
    assert not torch.allclose(out, by_hand()[0], atol=1e-3)
