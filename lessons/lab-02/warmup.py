"""Warm-up for lab-02: not a solution (docs/writing-a-lesson.md, "warmup.py").

A spare child runs this before a learner's file arrives, so that the learner's run does not
pay torch's first calls. It goes through the operations a solution uses, on the same shapes
and dtypes, and is wrong on purpose in every function: `attn-tutor dev check` proves that
each checked step fails on it.
"""

import math

import torch


def scaled_scores(q, k):
    # Wrong on purpose: divided by d_k, not by its square root.
    d = q.shape[-1]
    return (q @ k.transpose(-2, -1)) / math.sqrt(d * d)


def causal_mask(seq_len):
    # Wrong on purpose: the diagonal (each token itself) is hidden too.
    return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), 0)


def attention_weights(scores, mask):
    # Wrong on purpose: the future is zeroed after the softmax, so rows no longer sum to 1.
    return torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)


def attention(q, k, v):
    # Wrong on purpose: keys and queries swapped, so the scores are transposed.
    w = attention_weights(scaled_scores(k, q), causal_mask(k.shape[-2]))
    out = w @ v
    return out, w
