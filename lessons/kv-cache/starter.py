"""KV cache: generating one token at a time.

Write the code below. attn-tutor re-runs its checks every time you save.
Replace each `raise NotImplementedError(...)` with your code.

The layer is the causal multi-head attention of lesson lm3-l3: its
constructor and its full `forward` are given and already work.
"""

import torch
import torch.nn as nn


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
        """The full causal pass (given): x (B, T, d_in) -> (B, T, d_out)."""
        B, T, _ = x.shape
        H, hd = self.n_heads, self.head_dim
        q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
        k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
        v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
        scores = q @ k.transpose(2, 3) / hd**0.5
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
        return self.out_proj(context)

    def forward_cached(self, x, cache=None):
        """x: (B, 1, d_in), the newest token only.
        cache: None (nothing seen yet) or (k, v), each (B, H, T_past, head_dim).
        Return (out, (k, v)): out (B, 1, d_out), and the keys and values of all
        T_past + 1 tokens, each (B, H, T_past + 1, head_dim)."""
        raise NotImplementedError("one step with the KV cache")


def generate(layer, x):
    """x: (B, T, d_in). Feed the tokens to layer.forward_cached one at a time,
    starting from an empty cache. Return (out, cache): out (B, T, d_out), the
    same as layer(x); cache the (k, v) after the last token."""
    raise NotImplementedError("token-by-token generation")
