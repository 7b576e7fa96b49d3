"""LM3-L3: causal multi-head attention in PyTorch.

Write the code below. attn-tutor re-runs its checks every time you save.
Replace each `raise NotImplementedError(...)` with your code.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def causal_attention(x, Wq, Wk, Wv):
    """x: (B, T, d_in); Wq, Wk, Wv: (d_in, d_k). Return (out, weights)."""
    raise NotImplementedError("single-head causal attention")


class CausalMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, n_heads, context_length, dropout=0.0):
        super().__init__()
        assert d_out % n_heads == 0, "d_out must be divisible by n_heads"
        self.d_out, self.n_heads, self.head_dim = d_out, n_heads, d_out // n_heads
        self.W_q = nn.Linear(d_in, d_out, bias=False)
        self.W_k = nn.Linear(d_in, d_out, bias=False)
        self.W_v = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask",
            torch.triu(torch.ones(context_length, context_length), diagonal=1).bool(),
        )

    def forward(self, x):
        """x: (B, T, d_in). Return a tensor of shape (B, T, d_out)."""
        raise NotImplementedError("the multi-head forward pass")


def expected_shapes(B, T, H, hd):
    """Return a dict of shape tuples for each stage of the forward pass."""
    raise NotImplementedError("the shape of every stage")


# ---------------------------------------------------------------- given: call them, do not change
# The lab's leakage test and a layer broken on purpose, to try your causal_attention with:
#     python attn-lab/lm3_l3.py
# (the tutor's checks have their own copy of the test and never run the part below).


def leak(fn, x):
    """Largest change in outputs at positions 0..T-2 when the LAST token is replaced. Zero for a
    correct causal layer."""
    x2 = x.clone()
    x2[:, -1, :] = torch.randn_like(x2[:, -1, :]) * 3
    a, b = fn(x), fn(x2)
    return (a[:, :-1] - b[:, :-1]).abs().max().item()


def broken_attention(x, Wq, Wk, Wv):
    """BROKEN on purpose: no mask at all."""
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    w = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
    return w @ v, w


if __name__ == "__main__":
    torch.manual_seed(0)
    B, T, d, d_k = 2, 6, 8, 4
    x = torch.randn(B, T, d)
    Wq, Wk, Wv = (torch.randn(d, d_k) / d**0.5 for _ in range(3))
    bad = leak(lambda z: broken_attention(z, Wq, Wk, Wv)[0], x)
    good = leak(lambda z: causal_attention(z, Wq, Wk, Wv)[0], x)
    print(f"broken: {bad:.4f}   yours: {good:.2e}")
