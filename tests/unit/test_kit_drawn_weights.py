"""The kit's drawn weights of a multi-head attention layer (tutor.kit.drawn_weights): the
shapes and scales a layer's Linears hold, drawn in a fixed order from the generator."""

from __future__ import annotations

import torch

from tutor.kit import attention_weights


def test_attention_weights_shapes_order_and_options():
    w = attention_weights(torch.Generator().manual_seed(0), 4, 6)
    assert {k: tuple(t.shape) for k, t in w.items()} == {
        "W_q": (6, 4),
        "W_k": (6, 4),
        "W_v": (6, 4),
        "out_w": (6, 6),
        "out_b": (6,),
    }
    g = torch.Generator().manual_seed(0)
    assert torch.equal(w["W_q"], torch.randn(6, 4, generator=g) / 2)  # drawn first, by 1/√d_in
    # Sharpened: W_q and W_k times the factor, the rest as drawn; no bias: zeros, nothing drawn.
    sharp = attention_weights(torch.Generator().manual_seed(0), 4, 6, sharpen=2, bias=0)
    assert torch.equal(sharp["W_q"], w["W_q"] * 2) and torch.equal(sharp["W_k"], w["W_k"] * 2)
    assert torch.equal(sharp["W_v"], w["W_v"]) and torch.equal(sharp["out_w"], w["out_w"])
    assert torch.equal(sharp["out_b"], torch.zeros(6))
    g = torch.Generator().manual_seed(0)
    attention_weights(g, 4, 6, bias=0)
    after = torch.randn(1, generator=g)
    g = torch.Generator().manual_seed(0)
    attention_weights(g, 4, 6)
    assert not torch.equal(after, torch.randn(1, generator=g))  # the bias was a draw
