"""实验 02 / Lab 02: causal attention from the formula.

Write the four functions below. attn-tutor re-runs its checks every time you save.
Replace each `raise NotImplementedError(...)` with your code. The three exercise functions
at the end are for the Exercises step: change each as it asks once your four functions pass.
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


# ---------------------------------------------------------------- Exercises / 练习
# The Exercises step runs these on your functions and shows each result under its question.
# Make the one change each docstring asks for, then save.
# 「练习」这一步会用你的函数运行下面三个函数，并把结果显示在对应问题的下方。按注释各改一处，保存即可。


def exercise_scores(q, k):
    """Exercise 1: your scores without the 1/√d_k scale.
    练习 1：去掉缩放项 1/√d_k 之后的分数。"""
    return scaled_scores(q, k)


def exercise_mask(seq_len):
    """Exercise 2: the causal mask built with `diagonal=0` instead of `diagonal=1`.
    练习 2：用 `diagonal=0`（而不是 `diagonal=1`）构造的因果遮罩。"""
    return causal_mask(seq_len)


def exercise_q(q):
    """Exercise 3: q, shape (batch, heads, T, d_k), with the queries of one head changed (say,
    multiplied by 4) and the other heads left as they are. Change a copy, not q itself.
    练习 3：只修改一个头的查询（例如乘以 4），其余头保持不变。请在副本上修改，不要改动 q 本身。"""
    return q
