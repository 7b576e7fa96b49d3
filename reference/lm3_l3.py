"""Reference solution for lesson lm3-l3."""

import torch
import torch.nn as nn


def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[-2]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights


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


def expected_shapes(B, T, H, hd):
    return {
        "projected_q": (B, T, H * hd),
        "q_split_into_heads": (B, T, H, hd),
        "q_per_head": (B, H, T, hd),
        "scores": (B, H, T, T),
        "weights": (B, H, T, T),
        "context_per_head": (B, H, T, hd),
        "context_merged": (B, T, H * hd),
    }
