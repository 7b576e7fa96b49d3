"""实验 02 / Lab 02: causal attention from the formula.

Write the four functions below. attn-tutor re-runs its checks every time you save.
Replace each `raise NotImplementedError(...)` with your code.
"""

import math

import torch


def scaled_scores(q, k):
    """q, k: (..., T, d_k). Return q·kᵀ / √d_k, shape (..., T, T)."""
    raise NotImplementedError("scaled dot product")


def causal_mask(seq_len):
    """Return a bool tensor (T, T), True where the key lies in the future."""
    raise NotImplementedError("causal mask")


def attention_weights(scores, mask):
    """Fill the future with -inf, then softmax over the keys (last dim)."""
    raise NotImplementedError("masked softmax")


def attention(q, k, v):
    """Return (output, weights), built from the three functions above."""
    raise NotImplementedError("attention from the three functions above")
