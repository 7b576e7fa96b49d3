"""Warm-up for kv-cache: not a solution (docs/writing-a-lesson.md, "warmup.py").

A spare child runs this before a learner's file arrives, so that the learner's run does not
pay torch's first calls. It goes through the operations a solution uses, on the same shapes
and dtypes, and is wrong on purpose in every function it writes: `attn-tutor dev check`
proves that each checked step fails on it. The constructor and `forward` are the starter's.
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
        # Wrong on purpose: scaled by d_out, and the new token goes in front of the past.
        b = x.shape[0]
        split = (b, 1, self.n_heads, self.head_dim)
        new_q = self.W_q(x).view(split).transpose(1, 2)
        new_k = self.W_k(x).view(split).transpose(1, 2)
        new_v = self.W_v(x).view(split).transpose(1, 2)
        if cache:
            past_keys, past_values = cache
            new_k = torch.cat([new_k, past_keys], dim=2)
            new_v = torch.cat([new_v, past_values], dim=2)
        logits = new_q @ new_k.transpose(2, 3) / self.d_out**0.5
        attn = self.dropout(torch.softmax(logits, dim=-1))
        merged = (attn @ new_v).transpose(1, 2).contiguous().view(b, 1, self.d_out)
        return self.out_proj(merged), (new_k, new_v)


def generate(layer, x):
    # Wrong on purpose: the tokens are fed last first.
    state, pieces = None, []
    for t in reversed(range(x.shape[1])):
        piece, state = layer.forward_cached(x[:, t : t + 1], state)
        pieces.append(piece)
    return torch.cat(pieces, dim=1), state
