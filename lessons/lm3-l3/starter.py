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
