"""Reference solution for lesson kv-cache."""

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
        B = x.shape[0]
        H, hd = self.n_heads, self.head_dim
        q = self.W_q(x).view(B, 1, H, hd).transpose(1, 2)
        k = self.W_k(x).view(B, 1, H, hd).transpose(1, 2)
        v = self.W_v(x).view(B, 1, H, hd).transpose(1, 2)
        if cache is not None:
            past_k, past_v = cache
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        scores = q @ k.transpose(2, 3) / hd**0.5
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = (weights @ v).transpose(1, 2).contiguous().view(B, 1, self.d_out)
        return self.out_proj(context), (k, v)


def generate(layer, x):
    cache = None
    outs = []
    for t in range(x.shape[1]):
        out, cache = layer.forward_cached(x[:, t : t + 1], cache)
        outs.append(out)
    return torch.cat(outs, dim=1), cache
