"""Warm-up for lm3-l3: not a solution (docs/writing-a-lesson.md, "warmup.py").

A spare child runs this before a learner's file arrives, so that the learner's run does not
pay torch's first calls. It goes through the operations a solution uses, on the same shapes
and dtypes, and is wrong on purpose in every function: `attn-tutor dev check` proves that
each checked step fails on it.
"""

import torch
import torch.nn as nn


def causal_attention(x, Wq, Wk, Wv):
    # Wrong on purpose: scaled by d_in instead of d_k, and the mask hides the past.
    queries = x @ Wq
    keys = x @ Wk
    values = x @ Wv
    n = x.shape[-2]
    upper = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)
    logits = (queries @ keys.transpose(-2, -1)) / x.shape[-1] ** 0.5
    attn = torch.softmax(logits.masked_fill(upper.transpose(0, 1), float("-inf")), dim=-1)
    return attn @ values, attn


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

    def _heads(self, t, b, n):
        return t.view(b, n, self.n_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        # Wrong on purpose: scaled by d_out, and the mask zeroes weights after the softmax.
        b, n, _ = x.shape
        per_q = self._heads(self.W_q(x), b, n)
        per_k = self._heads(self.W_k(x), b, n)
        per_v = self._heads(self.W_v(x), b, n)
        logits = per_q @ per_k.transpose(2, 3) / self.d_out**0.5
        attn = self.dropout(torch.softmax(logits, dim=-1))
        attn = attn.masked_fill(self.mask[:n, :n], 0.0)
        merged = (attn @ per_v).transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(merged)


def expected_shapes(B, T, H, hd):
    # Wrong on purpose: the heads are never moved in front of the tokens.
    merged, split = (B, T, H * hd), (B, T, H, hd)
    return dict(
        projected_q=merged,
        q_split_into_heads=split,
        q_per_head=split,
        scores=(B, T, H, H),
        weights=(B, T, H, H),
        context_per_head=split,
        context_merged=merged,
    )
