"""Wrong implementations a student would really write must not pass.

Each learner file is the reference solution with one function (or method) replaced
by a wrong version, so the other steps stay correct. For every file we assert:

* the step that exercises the wrong function fails (or errors, where the code
  crashes at the notebook's own sizes: that is the honest verdict);
* every other checked step passes, every check of it; the exceptions are steps that
  really run the same function: in lm3-l3 `leakage` calls `causal_attention` too,
  and in lab-02 the reference `attention` is built from the three other functions,
  so a wrong component makes `attention` wrong as well (it then must not pass),
  unless the fault cannot reach it (a function that ignores the mask it is given
  still gets the causal mask from `attention`; an in-place change to a `scores`
  tensor that `attention` made itself changes none of attention's inputs);
* the message of the check that fails names the cause (catalog keys, nested
  `likely` and `reason` messages included).

Where a check let a wrong file through, or named the wrong cause, the case was first
marked xfail(strict=True) with what was observed, and the checks were then fixed.
"""

from __future__ import annotations

import pytest
from worker_kit import REFERENCE, Exp, error, learner_file, verify

LM3, LAB = "lm3-l3", "lab-02"
F_IMPORT = "import torch.nn.functional as F"
MATH_IMPORT = "import math"


def case(case_id, lesson, replace, expect, header="", xfail=None):
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(lesson, replace, header, expect, id=case_id, marks=marks)


# A size mismatch raised where the code uses a mask: said so, with the slice to take.
MASK_SIZE = Exp("error", "runs", {"failure.mask_size"}, "RuntimeError")


def fails(check, *keys):
    return Exp("fail", check, keys)


HARDCODED_RAISES = fails("other-sizes", "check.other_sizes", "check.raised")
HARDCODED = fails("other-sizes", "check.other_sizes")
LEAKS = fails("no-leak", "check.leak", "likely.leak")


# =================================================================== lm3-l3: causal_attention
# Steps single-head and leakage both call causal_attention: both are given.


def ca(code):
    return {"causal_attention": code}


CA_MASK_AFTER_SOFTMAX = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)
    return weights @ v, weights
""")

CA_FILL_ZERO = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, 0), dim=-1)
    return weights @ v, weights
""")

CA_NO_MASK = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
""")

CA_MASK_DIAGONAL = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool))
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

CA_TRIL_BELOW = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

# The literal slip: tril typed for triu, everything else as in the hint.
CA_TRIL_FOR_TRIU = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

CA_SCALE_D_IN = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / x.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

# d = 8 in the notebook: the width of x, not of q and k.
CA_SQRT_8 = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / math.sqrt(8)
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

CA_NO_SCALE = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1)
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

# √T, the sequence length: the notebook's T = 6 is not d_k = 4.
CA_SCALE_SEQ_LEN = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    T = x.shape[1]
    scores = q @ k.transpose(-2, -1) / T ** 0.5
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

CA_SCALE_AFTER_SOFTMAX = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax((q @ k.transpose(-2, -1)).masked_fill(mask, float("-inf")), dim=-1) / k.shape[-1] ** 0.5
    return weights @ v, weights
""")

# Right at the lab's values; exp(s) overflows once a score passes 88.
CA_NAIVE_EXP = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    e = torch.exp(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5).masked_fill(mask, 0.0)
    weights = e / e.sum(dim=-1, keepdim=True)
    return weights @ v, weights
""")

# Right at the lab's values; where a future score is far the largest, the visible weights
# underflow to 0 and the renormalization divides 0 by 0.
CA_RENORMALIZED = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    T = x.shape[1]
    keep = torch.tril(torch.ones(T, T))
    weights = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1) * keep
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights @ v, weights
""")

CA_SCALE_D = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1]
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

CA_SOFTMAX_DIM = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-2)
    return weights @ v, weights
""")

# Off by one: each token also sees the next one.
CA_DIAGONAL_2 = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=2)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

# Copy-paste slip: k projected with Wq.
CA_K_FROM_WQ = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wq, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

CA_K_DOT_T = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.T / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

CA_K_NOT_TRANSPOSED = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

CA_SWAPPED_QK = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = k @ q.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

CA_HARDCODED_MASK = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    mask = torch.triu(torch.ones(6, 6), diagonal=1).bool()
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

# sqrt(d_k) = sqrt(4) = 2 at the notebook's sizes.
CA_HARDCODED_SCALE = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / 2
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

CA_T_FROM_WRONG_DIM = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[0]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

# The weights by hand (so the heatmap shows something), the output from the kernel.
CA_SDPA = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return out, weights
""")

CA_SDPA_GETATTR = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    fused = getattr(F, "scaled_dot_" + "product_attention")
    return fused(q, k, v, is_causal=True), weights
""")

CA_SDPA_ALIAS = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return sdpa(q, k, v, is_causal=True), weights
""")

# Right values, but the caller's Wq is divided in place ("fold the scale into Wq").
CA_MUTATES_WQ = ca("""
def causal_attention(x, Wq, Wk, Wv):
    Wq.div_(Wq.shape[-1] ** 0.5)
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1)
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

# Right values, but x is scaled in place to scale q (k and v were taken before).
CA_MUTATES_X = ca("""
def causal_attention(x, Wq, Wk, Wv):
    k, v = x @ Wk, x @ Wv
    q = x.div_(Wq.shape[-1] ** 0.5) @ Wq
    scores = q @ k.transpose(-2, -1)
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
""")

# A private builtin of torch's own, reached through a helper outside causal_attention (which
# the source scan does not read): only the run-time trap can see it.
CA_MATH_BUILTIN_IN_HELPER = ca("""
def _attend(q, k, v):
    return torch._scaled_dot_product_attention_math(q, k, v, is_causal=True)[0]


def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return _attend(q, k, v), weights
""")

CA_RETURNS_OUT_ONLY = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v
""")

CA_RETURNS_LIST = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return [weights @ v, weights]
""")

CA_RETURNS_NONE = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    out = weights @ v
""")

CA_RETURNS_SWAPPED = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights, weights @ v
""")

CA_RETURNS_NUMPY = ca("""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return (weights @ v).numpy(), weights.numpy()
""")

SINGLE_CASES = [
    case(
        "mask_after_softmax",
        LM3,
        CA_MASK_AFTER_SOFTMAX,
        {
            "single-head": fails("rows-sum-to-1", "check.rows_sum", "likely.mask_after_softmax"),
            "leakage": LEAKS,
        },
    ),
    case(
        "fill_zero",
        LM3,
        CA_FILL_ZERO,
        {
            "single-head": fails("future-is-zero", "check.future", "likely.fill_zero"),
            "leakage": LEAKS,
        },
    ),
    case(
        "no_mask",
        LM3,
        CA_NO_MASK,
        {
            "single-head": fails("future-is-zero", "check.future", "likely.no_mask"),
            "leakage": LEAKS,
        },
    ),
    # Row 0 is all -inf, so NaN. Its outputs are NaN for both inputs: leakage must not pass.
    case(
        "mask_diagonal_nan_row",
        LM3,
        CA_MASK_DIAGONAL,
        {
            # The NaN row is diagnosed by rebuilding the usual mistakes, not blamed on diagonal=0 by position.
            "single-head": fails("finite", "check.not_finite", "likely.mask_diagonal"),
            "leakage": fails("finite", "check.not_finite"),
        },
    ),
    case(
        "tril_below_diagonal",
        LM3,
        CA_TRIL_BELOW,
        {
            "single-head": fails("future-is-zero", "check.future", "likely.mask_transposed"),
            "leakage": LEAKS,
        },
    ),
    # tril typed for triu: hides the past and the diagonal, and the whole last row (NaN there).
    case(
        "tril_for_triu", LM3, CA_TRIL_FOR_TRIU, {"single-head": Exp("fail"), "leakage": Exp("fail")}
    ),
    case(
        "scale_sqrt_d_in",
        LM3,
        CA_SCALE_D_IN,
        {"single-head": fails("matches-pytorch", "check.values", "likely.scale_d_in")},
    ),
    case(
        "scale_sqrt_8_is_d_in",
        LM3,
        CA_SQRT_8,
        {"single-head": fails("matches-pytorch", "check.values", "likely.scale_d_in")},
        header=MATH_IMPORT,
    ),
    case(
        "no_scale",
        LM3,
        CA_NO_SCALE,
        {"single-head": fails("matches-pytorch", "check.values", "likely.scale_none")},
    ),
    case(
        "scale_sqrt_seq_len",
        LM3,
        CA_SCALE_SEQ_LEN,
        {"single-head": fails("matches-pytorch", "check.values", "likely.scale_seq_len")},
    ),
    case(
        "scale_after_softmax",
        LM3,
        CA_SCALE_AFTER_SOFTMAX,
        {"single-head": fails("rows-sum-to-1", "check.rows_sum", "likely.scale_after_softmax")},
    ),
    case(
        "softmax_by_hand_overflows",
        LM3,
        CA_NAIVE_EXP,
        {"single-head": fails("large-scores", "check.large_scores", "likely.softmax_overflow")},
    ),
    case(
        "softmax_then_mask_renormalized",
        LM3,
        CA_RENORMALIZED,
        {"single-head": fails("large-scores", "check.large_scores", "likely.softmax_renormalized")},
    ),
    case(
        "scale_d_not_sqrt",
        LM3,
        CA_SCALE_D,
        {"single-head": fails("matches-pytorch", "check.values", "likely.scale_d")},
    ),
    case(
        "mask_diagonal_2_off_by_one",
        LM3,
        CA_DIAGONAL_2,
        {
            "single-head": fails("future-is-zero", "check.future"),
            "leakage": fails("no-leak", "check.leak"),
        },
    ),
    case(
        "k_projected_with_Wq",
        LM3,
        CA_K_FROM_WQ,
        {"single-head": fails("matches-pytorch", "check.values")},
    ),
    case(
        "softmax_dim_-2",
        LM3,
        CA_SOFTMAX_DIM,
        {
            "single-head": fails("rows-sum-to-1", "check.rows_sum", "likely.softmax_dim"),
            "leakage": LEAKS,
        },
    ),
    case(
        "swapped_q_k",
        LM3,
        CA_SWAPPED_QK,
        {"single-head": fails("matches-pytorch", "check.values", "likely.swapped_qk")},
    ),
    # k.T on a 3-D tensor reverses all three dims: the matmul raises at the notebook's sizes.
    case(
        "k_dot_T_on_3d",
        LM3,
        CA_K_DOT_T,
        {"single-head": error("RuntimeError"), "leakage": error("RuntimeError")},
    ),
    case(
        "k_not_transposed",
        LM3,
        CA_K_NOT_TRANSPOSED,
        {"single-head": error("RuntimeError"), "leakage": error("RuntimeError")},
    ),
    case(
        "T_from_batch_dim",
        LM3,
        CA_T_FROM_WRONG_DIM,
        {  # a mask built for the wrong length
            "single-head": MASK_SIZE,
            "leakage": MASK_SIZE,
        },
    ),
    case(
        "hardcoded_mask_6x6",
        LM3,
        CA_HARDCODED_MASK,
        {"single-head": HARDCODED_RAISES, "leakage": HARDCODED_RAISES},
    ),
    case(
        "hardcoded_scale_2",
        LM3,
        CA_HARDCODED_SCALE,
        {"single-head": fails("other-sizes", "check.other_sizes", "check.values")},
    ),
    case(
        "sdpa_direct",
        LM3,
        CA_SDPA,
        {"single-head": fails("own-formula", "check.kernel")},
        header=F_IMPORT,
    ),
    case(
        "sdpa_getattr_built_name",
        LM3,
        CA_SDPA_GETATTR,
        {"single-head": fails("own-formula", "check.kernel")},
        header=F_IMPORT,
    ),
    case(
        "sdpa_imported_alias",
        LM3,
        CA_SDPA_ALIAS,
        {"single-head": fails("own-formula", "check.kernel")},
        header="from torch.nn.functional import scaled_dot_product_attention as sdpa",
    ),
    case(
        "math_builtin_in_module_helper",
        LM3,
        CA_MATH_BUILTIN_IN_HELPER,
        {"single-head": fails("own-formula", "check.kernel")},
    ),
    case(
        "mutates_Wq_div_",
        LM3,
        CA_MUTATES_WQ,
        {"single-head": fails("inputs-unchanged", "check.mutated")},
    ),
    case(
        "mutates_x_div_",
        LM3,
        CA_MUTATES_X,
        {"single-head": fails("inputs-unchanged", "check.mutated")},
    ),
    case(
        "returns_out_only",
        LM3,
        CA_RETURNS_OUT_ONLY,
        {
            "single-head": fails("returns", "check.returns_pair", "likely.returns_pair"),
            "leakage": fails("returns", "check.returns_pair"),
        },
    ),
    case(
        "returns_list",
        LM3,
        CA_RETURNS_LIST,
        {
            "single-head": fails("returns", "check.returns_pair", "likely.list"),
            "leakage": fails("returns", "check.returns_pair"),
        },
    ),
    case(
        "returns_none",
        LM3,
        CA_RETURNS_NONE,
        {
            "single-head": fails("returns", "check.returns_pair"),
            "leakage": fails("returns", "check.returns_pair"),
        },
    ),
    # (weights, out): the "weights" slot holds a (B, T, d_k) tensor.
    case(
        "returns_pair_swapped",
        LM3,
        CA_RETURNS_SWAPPED,
        {
            "single-head": fails("returns", "check.returns_pair"),
            "leakage": fails("returns", "check.returns_pair"),
        },
    ),
    case(
        "returns_numpy",
        LM3,
        CA_RETURNS_NUMPY,
        {
            "single-head": fails("shape", "check.not_tensor", "likely.numpy"),
            "leakage": fails("returns", "check.returns_pair"),
        },
    ),
]

# What the messages should say beyond the status (same files: the runs are cached).
SINGLE_MESSAGE_CASES = [
    case(
        "returns_pair_swapped_names_order",
        LM3,
        CA_RETURNS_SWAPPED,
        {
            "single-head": fails("returns", "check.returns_pair", "likely.pair_order"),
            "leakage": fails("returns", "check.returns_pair"),
        },
    ),
    case(
        "tril_for_triu_names_flipped_mask",
        LM3,
        CA_TRIL_FOR_TRIU,
        {
            "single-head": Exp("fail", None, {"likely.mask_transposed"}),
            "leakage": Exp("fail", None, {"likely.mask_transposed"}),
        },
    ),
    case(
        "returns_none_names_missing_return",
        LM3,
        CA_RETURNS_NONE,
        {
            "single-head": fails("returns", "check.returns_pair", "likely.forgot_return"),
            "leakage": fails("returns", "check.returns_pair", "likely.forgot_return"),
        },
    ),
    case(
        "mask_diagonal_leakage_names_nan",
        LM3,
        CA_MASK_DIAGONAL,
        {
            # The NaN row is diagnosed by rebuilding the usual mistakes, not blamed on diagonal=0 by position.
            "single-head": fails("finite", "check.not_finite", "likely.mask_diagonal"),
            "leakage": fails("finite", "check.not_finite", "likely.mask_diagonal"),
        },
    ),
    case(
        "returns_numpy_leakage_names_numpy",
        LM3,
        CA_RETURNS_NUMPY,
        {
            "single-head": fails("shape", "check.not_tensor", "likely.numpy"),
            "leakage": fails("returns", "check.returns_pair", "likely.numpy"),
        },
    ),
]


# =================================================================== lm3-l3: multi-head forward


def fwd(code):
    return {"CausalMultiHeadAttention.forward": code}


MH_SCALE_D_OUT = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / self.d_out ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_NO_SCALE = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3)
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_SCALE_AFTER_SOFTMAX = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = (q @ k.transpose(2, 3)).masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1) / math.sqrt(hd))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

# Right at the lab's weights; exp(s) overflows once a score passes 88.
MH_NAIVE_EXP = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd**0.5
    e = torch.exp(scores).masked_fill(self.mask[:T, :T], 0.0)
    weights = self.dropout(e / e.sum(dim=-1, keepdim=True))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_SCALE_HEADS = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / q.size(1) ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_SCALE_SEQ_LEN = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / T ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_NO_TRANSPOSE_BEFORE_MERGE = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_NO_OUT_PROJ = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    return (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
""")

MH_VIEW_NOT_CONTIGUOUS = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_MASK_NOT_SLICED = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.mask, float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_HARDCODED_VIEW = fwd("""
def forward(self, x):
    q = self.W_q(x).view(2, 6, 2, 4).transpose(1, 2)
    k = self.W_k(x).view(2, 6, 2, 4).transpose(1, 2)
    v = self.W_v(x).view(2, 6, 2, 4).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / 4 ** 0.5
    scores = scores.masked_fill(self.mask[:6, :6], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(2, 6, 8)
    return self.out_proj(context)
""")

MH_HARDCODED_MASK = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.mask[:6, :6], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_SDPA = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    context = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return self.out_proj(context.transpose(1, 2).reshape(B, T, self.d_out))
""")

# The kernel under a name the learner binds (which the source scan leaves alone: see
# judge_kit._bound_names), so only the run-time trap can see it.
MH_SDPA_OWN_NAME = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    scaled_dot_product_attention = F.scaled_dot_product_attention
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    context = scaled_dot_product_attention(q, k, v, is_causal=True)
    return self.out_proj(context.transpose(1, 2).reshape(B, T, self.d_out))
""")

# The given projections, then PyTorch's own layer with an identity in-projection.
MH_NN_MULTIHEAD = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
    layer = nn.MultiheadAttention(self.d_out, self.n_heads, batch_first=True)
    with torch.no_grad():
        layer.in_proj_weight.copy_(torch.eye(self.d_out).repeat(3, 1))
        layer.in_proj_bias.zero_()
        layer.out_proj.weight.copy_(self.out_proj.weight)
        layer.out_proj.bias.copy_(self.out_proj.bias)
    out, _ = layer(q, k, v, attn_mask=self.mask[:T, :T], need_weights=False)
    return out
""")

MH_MASK_AFTER_SOFTMAX = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    weights = torch.softmax(scores, dim=-1).masked_fill(self.mask[:T, :T], 0.0)
    weights = self.dropout(weights)
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_FILL_ZERO = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], 0.0)
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_SOFTMAX_DIM = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-2))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

LEAKS_MULTI = fails("no-leak", "check.leak")

MH_MASK_DIAGONAL = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    future = torch.triu(torch.ones(T, T, dtype=torch.bool))
    scores = scores.masked_fill(future, float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_K_FROM_WQ = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

# The fused CPU kernel under its ATen name (no F, no getattr).
MH_ATEN_FLASH = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    context = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=True)[0]
    return self.out_proj(context.transpose(1, 2).reshape(B, T, self.d_out))
""")

# torch.nn.attention's flex_attention (a library attention kernel under another name), from a
# helper outside the class.
MH_FLEX_IN_HELPER = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    context = _attend(q, k, v)
    return self.out_proj(context.transpose(1, 2).reshape(B, T, self.d_out))
""")
FLEX_HELPER = """
from torch.nn.attention.flex_attention import flex_attention


def _attend(q, k, v):
    return flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: torch.where(i >= j, s, -float("inf")))
"""

# The mask made on the first call, for that call's length, and kept on self: right as long as
# every call has the first one's length (the probe's calls at one size all did).
MH_MASK_CACHED_ON_FIRST_CALL = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    if not hasattr(self, "causal"):
        self.causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.causal, float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

# "Fold the scale into W_q", in place, on every call: the first call is right, the next ones not
# (that is no leak, which is what the check said).
MH_SCALE_FOLDED_INTO_W_Q = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    self.W_q.weight.data /= hd ** 0.5
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = (q @ k.transpose(2, 3)).masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

# The output projection by hand, without its bias (the message said only "compare with the formula").
MH_OUT_PROJ_BIAS_LEFT_OUT = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = (q @ k.transpose(2, 3) / hd ** 0.5).masked_fill(self.mask[:T, :T], float("-inf"))
    context = (self.dropout(torch.softmax(scores, dim=-1)) @ v).transpose(1, 2).reshape(B, T, self.d_out)
    return context @ self.out_proj.weight.T
""")

# Split straight into (B, H, T, hd): tokens and heads are mixed.
MH_SPLIT_WITHOUT_TRANSPOSE = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, H, T, hd)
    k = self.W_k(x).view(B, H, T, hd)
    v = self.W_v(x).view(B, H, T, hd)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""")

MH_RETURNS_PAIR = fwd("""
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context), weights
""")

_GIVEN_INIT = """
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
"""

# One extra Linear per head (not used by forward yet): more parameters, and more with more heads.
MH_EXTRA_LINEAR_PER_HEAD = {
    "CausalMultiHeadAttention.__init__": _GIVEN_INIT
    + """\
    self.head_out = nn.ModuleList(nn.Linear(self.head_dim, self.head_dim) for _ in range(n_heads))
"""
}

# Per-head query layers instead of one W_q, and a forward that uses them.
MH_PER_HEAD_QUERY_LAYERS = {
    "CausalMultiHeadAttention.__init__": _GIVEN_INIT.replace(
        "self.W_q = nn.Linear(d_in, d_out, bias=False)",
        "self.W_q = nn.ModuleList(nn.Linear(d_in, d_out // n_heads, bias=False) for _ in range(n_heads))",
    ),
    "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = torch.stack([layer(x) for layer in self.W_q], dim=1)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""",
}

# The output projection without its bias: the forward is right, the constructor is not.
MH_OUT_PROJ_NO_BIAS = {
    "CausalMultiHeadAttention.__init__": _GIVEN_INIT.replace(
        "self.out_proj = nn.Linear(d_out, d_out)",
        "self.out_proj = nn.Linear(d_out, d_out, bias=False)",
    )
}

MULTI_CASES = [
    # At the notebook's size d_in = d_out = 8: the message names the width, whichever it was.
    case(
        "multi_scale_sqrt_d_out",
        LM3,
        MH_SCALE_D_OUT,
        {"multi-head": fails("matches-pytorch", "check.values", "likely.scale_width")},
    ),
    case(
        "multi_no_scale",
        LM3,
        MH_NO_SCALE,
        {"multi-head": fails("matches-pytorch", "check.values", "likely.scale_none")},
    ),
    case(
        "multi_scale_after_softmax",
        LM3,
        MH_SCALE_AFTER_SOFTMAX,
        {
            "multi-head": fails(
                "matches-pytorch", "check.values", "likely.scale_after_softmax_multi"
            )
        },
        header=MATH_IMPORT,
    ),
    case(
        "multi_softmax_by_hand_overflows",
        LM3,
        MH_NAIVE_EXP,
        {
            # From the layer's output alone the two usual causes cannot be told apart: both are named.
            "multi-head": fails("large-scores", "check.large_scores_multi", "likely.softmax_large")
        },
    ),
    case(
        "multi_scale_sqrt_heads",
        LM3,
        MH_SCALE_HEADS,
        {"multi-head": fails("matches-pytorch", "check.values", "likely.scale_heads")},
    ),
    case(
        "multi_scale_sqrt_seq_len",
        LM3,
        MH_SCALE_SEQ_LEN,
        {"multi-head": fails("matches-pytorch", "check.values", "likely.scale_seq_len_multi")},
    ),
    # Mixes tokens, so it leaks: the leak check fails first and must name the merge.
    case(
        "multi_no_transpose_before_merge",
        LM3,
        MH_NO_TRANSPOSE_BEFORE_MERGE,
        {"multi-head": Exp("fail", None, {"likely.merge_heads"})},
    ),
    case(
        "multi_no_out_proj",
        LM3,
        MH_NO_OUT_PROJ,
        {"multi-head": fails("matches-pytorch", "check.values", "likely.no_out_proj")},
    ),
    case(
        "multi_view_without_contiguous",
        LM3,
        MH_VIEW_NOT_CONTIGUOUS,
        {"multi-head": error("RuntimeError")},
    ),
    # The (16, 16) buffer does not broadcast against (B, H, 6, 6): an error at the notebook's sizes.
    case("multi_mask_not_sliced", LM3, MH_MASK_NOT_SLICED, {"multi-head": MASK_SIZE}),
    case("multi_hardcoded_view_2_6_2_4", LM3, MH_HARDCODED_VIEW, {"multi-head": HARDCODED_RAISES}),
    case("multi_hardcoded_mask_slice_6", LM3, MH_HARDCODED_MASK, {"multi-head": HARDCODED_RAISES}),
    case(
        "multi_sdpa",
        LM3,
        MH_SDPA,
        {"multi-head": fails("own-formula", "check.kernel")},
        header=F_IMPORT,
    ),
    case(
        "multi_nn_MultiheadAttention",
        LM3,
        MH_NN_MULTIHEAD,
        {"multi-head": fails("own-formula", "check.kernel")},
    ),
    case(
        "multi_sdpa_under_own_name",
        LM3,
        MH_SDPA_OWN_NAME,
        {"multi-head": fails("own-formula", "check.kernel")},
        header=F_IMPORT,
    ),
    case(
        "multi_mask_after_softmax",
        LM3,
        MH_MASK_AFTER_SOFTMAX,
        {"multi-head": Exp("fail", None, {"likely.mask_after_softmax"})},
    ),
    case(
        "multi_fill_zero",
        LM3,
        MH_FILL_ZERO,
        {"multi-head": Exp("fail", None, {"likely.fill_zero"})},
    ),
    case("multi_softmax_dim_-2", LM3, MH_SOFTMAX_DIM, {"multi-head": LEAKS_MULTI}),
    case(
        "multi_mask_hides_diagonal",
        LM3,
        MH_MASK_DIAGONAL,
        {"multi-head": fails("finite", "check.not_finite")},
    ),
    case(
        "multi_k_projected_with_W_q",
        LM3,
        MH_K_FROM_WQ,
        {"multi-head": fails("matches-pytorch", "check.values")},
    ),
    case(
        "multi_split_without_transpose",
        LM3,
        MH_SPLIT_WITHOUT_TRANSPOSE,
        {"multi-head": fails("no-leak", "check.leak")},
    ),
    case(
        "multi_returns_pair",
        LM3,
        MH_RETURNS_PAIR,
        {"multi-head": fails("shape", "check.not_tensor")},
    ),
    case(
        "multi_extra_linear_per_head",
        LM3,
        MH_EXTRA_LINEAR_PER_HEAD,
        {"multi-head": fails("parameters", "check.params_count")},
    ),
    case(
        "multi_per_head_query_layers",
        LM3,
        MH_PER_HEAD_QUERY_LAYERS,
        {"multi-head": fails("constructor", "check.constructor")},
    ),
    case("multi_out_proj_without_bias", LM3, MH_OUT_PROJ_NO_BIAS, {"multi-head": Exp("fail")}),
    case(
        "multi_flex_attention_in_helper",
        LM3,
        MH_FLEX_IN_HELPER,
        {"multi-head": fails("own-formula", "check.kernel")},
        header=FLEX_HELPER,
    ),
    case(
        "multi_mask_cached_on_first_call",
        LM3,
        MH_MASK_CACHED_ON_FIRST_CALL,
        {"multi-head": fails("call-again", "check.call_again_raised", "likely.call_again")},
    ),
    case(
        "multi_scale_folded_into_W_q_in_place",
        LM3,
        MH_SCALE_FOLDED_INTO_W_Q,
        {"multi-head": fails("call-again", "check.values", "likely.call_again")},
    ),
    case(
        "multi_out_proj_bias_left_out_in_forward",
        LM3,
        MH_OUT_PROJ_BIAS_LEFT_OUT,
        {"multi-head": fails("matches-pytorch", "check.values", "likely.no_out_bias")},
    ),
    case(
        "multi_aten_flash_kernel",
        LM3,
        MH_ATEN_FLASH,
        {"multi-head": fails("own-formula", "check.kernel")},
    ),
]

MULTI_MESSAGE_CASES = [
    case(
        "multi_softmax_dim_-2_names_dim",
        LM3,
        MH_SOFTMAX_DIM,
        {"multi-head": Exp("fail", None, {"likely.softmax_dim"})},
    ),
    case(
        "multi_mask_hides_diagonal_names_diagonal",
        LM3,
        MH_MASK_DIAGONAL,
        {"multi-head": fails("finite", "check.not_finite", "likely.mask_diagonal")},
    ),
    case(
        "multi_out_proj_without_bias_names_constructor",
        LM3,
        MH_OUT_PROJ_NO_BIAS,
        {"multi-head": Exp("fail", None, {"check.params_count"})},
    ),
]


# =================================================================== lm3-l3: expected_shapes


def shapes(code):
    return {"expected_shapes": code}


def shapes_dict(**override):
    """An expected_shapes def returning the right dict except for the given entries (source text)."""
    entries = {
        "projected_q": "(B, T, H * hd)",
        "q_split_into_heads": "(B, T, H, hd)",
        "q_per_head": "(B, H, T, hd)",
        "scores": "(B, H, T, T)",
        "weights": "(B, H, T, T)",
        "context_per_head": "(B, H, T, hd)",
        "context_merged": "(B, T, H * hd)",
    }
    entries.update(override)
    body = "".join(f"        {k!r}: {v},\n" for k, v in entries.items() if v is not None)
    return shapes(f"def expected_shapes(B, T, H, hd):\n    return {{\n{body}    }}\n")


SHAPES_CASES = [
    case(
        "shapes_forgot_per_head_transpose",
        LM3,
        shapes_dict(q_per_head="(B, T, H, hd)"),
        {"shapes": fails("values", "check.shapes_value", "likely.per_head_transpose")},
    ),
    case(
        "shapes_scores_B_H_T_hd",
        LM3,
        shapes_dict(scores="(B, H, T, hd)"),
        {"shapes": fails("values", "check.shapes_value", "likely.scores_hd")},
    ),
    case(
        "shapes_scores_no_head",
        LM3,
        shapes_dict(scores="(B, T, T)"),
        {"shapes": fails("values", "check.shapes_value", "likely.scores_no_head")},
    ),
    case(
        "shapes_scores_other",
        LM3,
        shapes_dict(scores="(B, H, T, T + 1)"),
        {"shapes": fails("values", "check.shapes_value", "likely.scores_shape")},
    ),
    case(
        "shapes_weights_drop_a_dim",
        LM3,
        shapes_dict(weights="(B, H, T)"),
        {"shapes": fails("values", "check.shapes_value", "likely.weights_same_as_scores")},
    ),
    case(
        "shapes_context_per_head_not_transposed",
        LM3,
        shapes_dict(context_per_head="(B, T, H, hd)"),
        {"shapes": fails("values", "check.shapes_value", "likely.context_shape")},
    ),
    case(
        "shapes_merged_not_merged",
        LM3,
        shapes_dict(context_merged="(B, T, H, hd)"),
        {"shapes": fails("values", "check.shapes_value", "likely.merged_shape")},
    ),
    case(
        "shapes_projected_head_width",
        LM3,
        shapes_dict(projected_q="(B, T, hd)"),
        {"shapes": fails("values", "check.shapes_value", "likely.shape_stage")},
    ),
    case(
        "shapes_lists",
        LM3,
        shapes(
            "def expected_shapes(B, T, H, hd):\n"
            "    return {\n"
            "        'projected_q': [B, T, H * hd],\n"
            "        'q_split_into_heads': [B, T, H, hd],\n"
            "        'q_per_head': [B, H, T, hd],\n"
            "        'scores': [B, H, T, T],\n"
            "        'weights': [B, H, T, T],\n"
            "        'context_per_head': [B, H, T, hd],\n"
            "        'context_merged': [B, T, H * hd],\n"
            "    }\n"
        ),
        {"shapes": fails("tuples", "check.shapes_type")},
    ),
    case(
        "shapes_tensors",
        LM3,
        shapes(
            "def expected_shapes(B, T, H, hd):\n"
            "    names = ['projected_q', 'q_split_into_heads', 'q_per_head', 'scores', 'weights',\n"
            "             'context_per_head', 'context_merged']\n"
            "    dims = [(B, T, H * hd), (B, T, H, hd), (B, H, T, hd), (B, H, T, T), (B, H, T, T),\n"
            "            (B, H, T, hd), (B, T, H * hd)]\n"
            "    return {n: torch.tensor(d) for n, d in zip(names, dims)}\n"
        ),
        {"shapes": fails("tuples", "check.shapes_type")},
    ),
    # The notebook's own answer, written down for B=2, T=6, H=2, hd=4.
    case(
        "shapes_hardcoded_seed_answer",
        LM3,
        shapes(
            "def expected_shapes(B, T, H, hd):\n"
            "    return {\n"
            "        'projected_q': (2, 6, 8),\n"
            "        'q_split_into_heads': (2, 6, 2, 4),\n"
            "        'q_per_head': (2, 2, 6, 4),\n"
            "        'scores': (2, 2, 6, 6),\n"
            "        'weights': (2, 2, 6, 6),\n"
            "        'context_per_head': (2, 2, 6, 4),\n"
            "        'context_merged': (2, 6, 8),\n"
            "    }\n"
        ),
        {"shapes": fails("other-sizes", "check.other_sizes", "check.shapes_value")},
    ),
    # B and H swapped: equal at the notebook's sizes (B = H = 2), caught at the others.
    case(
        "shapes_q_per_head_B_H_swapped",
        LM3,
        shapes_dict(q_per_head="(H, B, T, hd)"),
        {"shapes": fails("other-sizes", "check.other_sizes", "check.shapes_value")},
    ),
    case(
        "shapes_misspelt_key",
        LM3,
        shapes_dict(q_split_into_heads=None, q_split="(B, T, H, hd)"),
        {"shapes": fails("all-keys", "check.shapes_missing")},
    ),
    case(
        "shapes_returns_list",
        LM3,
        shapes(
            "def expected_shapes(B, T, H, hd):\n"
            "    return [(B, T, H * hd), (B, T, H, hd), (B, H, T, hd), (B, H, T, T), (B, H, T, T),\n"
            "            (B, H, T, hd), (B, T, H * hd)]\n"
        ),
        {"shapes": fails("returns-dict", "check.shapes_not_dict")},
    ),
]


# =================================================================== lab-02
# The reference `attention` calls the three other functions: a wrong component makes
# `attention` wrong too, and its step must then not pass either (see the module doc). Its
# message then names the helper to fix first (BLAMES): with correct helpers it is right.

INLINE_ATTENTION = {
    "attention": """
def attention(q, k, v):
    T = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights
"""
}


def sc(code):
    return {"scaled_scores": code}


SC_NO_SCALE = sc("def scaled_scores(q, k):\n    return q @ k.transpose(-2, -1)\n")
SC_SCALE_D = sc("def scaled_scores(q, k):\n    return q @ k.transpose(-2, -1) / q.shape[-1]\n")
SC_MULTIPLIED = sc(
    "def scaled_scores(q, k):\n    return q @ k.transpose(-2, -1) * math.sqrt(q.shape[-1])\n"
)
SC_K_DOT_T = sc("def scaled_scores(q, k):\n    return q @ k.T / math.sqrt(q.shape[-1])\n")
SC_TRANSPOSE_2_3 = sc(
    "def scaled_scores(q, k):\n    return q @ k.transpose(2, 3) / math.sqrt(q.shape[-1])\n"
)
SC_SQRT_8 = sc("def scaled_scores(q, k):\n    return q @ k.transpose(-2, -1) / math.sqrt(8)\n")
SC_SWAPPED = sc(
    "def scaled_scores(q, k):\n    return k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
)
SC_SEQ_LEN = sc(
    "def scaled_scores(q, k):\n    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-2])\n"
)
SC_HEADS = sc(
    "def scaled_scores(q, k):\n    return q @ k.transpose(-2, -1) / math.sqrt(k.size(1))\n"
)
SC_MUTATES_Q = sc("""
def scaled_scores(q, k):
    q /= math.sqrt(q.shape[-1])
    return q @ k.transpose(-2, -1)
""")

OUT_VALUES = Exp("fail", None, {"check.values"})  # the returned weights or the output
# attention is right with correct helpers: its failure names the learner's helper to fix first.
BLAMES = "likely.helper_first"

SCORES_CASES = [
    case(
        "scores_no_scale",
        LAB,
        SC_NO_SCALE,
        {
            "scores": fails("values", "check.values", "likely.scale_none"),
            "output": Exp("fail", None, {"check.values", BLAMES}),
        },
    ),
    case(
        "scores_divided_by_d_k",
        LAB,
        SC_SCALE_D,
        {
            "scores": fails("values", "check.values", "likely.scale_d"),
            "output": Exp("fail", None, {"check.values", BLAMES}),
        },
    ),
    case(
        "scores_multiplied_by_sqrt",
        LAB,
        SC_MULTIPLIED,
        {
            "scores": fails("values", "check.values", "likely.scale_multiplied"),
            "output": OUT_VALUES,
        },
    ),
    # k.T on a 4-D tensor reverses all dims; the matmul raises at the seed's sizes.
    case(
        "scores_k_dot_T",
        LAB,
        SC_K_DOT_T,
        {"scores": error("RuntimeError"), "output": error("RuntimeError")},
    ),
    # Right for the seed's 4-D tensors; the 3-D case has no dim 3.
    case(
        "scores_transpose_2_3",
        LAB,
        SC_TRANSPOSE_2_3,
        {"scores": HARDCODED_RAISES, "output": HARDCODED_RAISES},
    ),
    # head_dim = 8 in the seed, so this passes there and nowhere else.
    case(
        "scores_sqrt_8",
        LAB,
        SC_SQRT_8,
        {
            "scores": fails("other-sizes", "check.other_sizes", "likely.literal"),
            "output": HARDCODED,
        },
    ),
    case(
        "scores_swapped_q_k",
        LAB,
        SC_SWAPPED,
        {"scores": fails("values", "check.values", "likely.swapped_qk"), "output": OUT_VALUES},
    ),
    case(
        "scores_sqrt_seq_len",
        LAB,
        SC_SEQ_LEN,
        {"scores": fails("values", "check.values", "likely.scale_seq_len"), "output": OUT_VALUES},
    ),
    case(
        "scores_sqrt_of_dim_1",
        LAB,
        SC_HEADS,
        {"scores": fails("values", "check.values", "likely.scale_other_dim"), "output": OUT_VALUES},
    ),
    # Right values; q divided in place: attention(q, k, v) then changes its caller's q too.
    case(
        "scores_mutates_q",
        LAB,
        SC_MUTATES_Q,
        {
            "scores": fails("inputs-unchanged", "check.mutated"),
            "output": fails("inputs-unchanged", "check.mutated"),
        },
    ),
    # The same wrong scores with an attention written inline: only the scores step fails.
    case(
        "scores_no_scale_inline_attention",
        LAB,
        {**SC_NO_SCALE, **INLINE_ATTENTION},
        {"scores": fails("values", "check.values", "likely.scale_none")},
    ),
]


def mk(code):
    return {"causal_mask": code}


MK_FLOAT = mk(
    "def causal_mask(seq_len):\n    return torch.triu(torch.ones(seq_len, seq_len), diagonal=1)\n"
)
MK_INT = mk(
    "def causal_mask(seq_len):\n"
    "    return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.int), diagonal=1)\n"
)
MK_DIAGONAL_0 = mk(
    "def causal_mask(seq_len):\n"
    "    return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=0)\n"
)
MK_TRIL = mk(
    "def causal_mask(seq_len):\n    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))\n"
)
MK_TRIL_BELOW = mk(
    "def causal_mask(seq_len):\n"
    "    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=-1)\n"
)
MK_HARDCODED_6 = mk(
    "def causal_mask(seq_len):\n"
    "    return torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)\n"
)
MK_NUMPY = mk(
    "def causal_mask(seq_len):\n    return np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1)\n"
)

MASK_CASES = [
    # masked_fill refuses a float mask, so the reference attention raises.
    case(
        "mask_float",
        LAB,
        MK_FLOAT,
        {"mask": fails("bool", "check.mask_dtype"), "output": error("RuntimeError")},
    ),
    case(
        "mask_int",
        LAB,
        MK_INT,
        {"mask": fails("bool", "check.mask_dtype"), "output": error("RuntimeError")},
    ),
    case(
        "mask_diagonal_0",
        LAB,
        MK_DIAGONAL_0,
        {
            "mask": fails("values", "check.mask_values", "likely.mask_diagonal_bool"),
            "output": fails("finite", "check.not_finite"),
        },
    ),
    case(
        "mask_tril",
        LAB,
        MK_TRIL,
        {
            "mask": fails("values", "check.mask_values", "likely.mask_inverted"),
            "output": Exp("fail"),
        },
    ),
    case(
        "mask_tril_below_diagonal",
        LAB,
        MK_TRIL_BELOW,
        {
            "mask": fails("values", "check.mask_values", "likely.mask_inverted"),
            "output": Exp("fail"),
        },
    ),
    # At T=1 the 6×6 mask has the wrong shape; attention's masked_fill then raises.
    case(
        "mask_hardcoded_6",
        LAB,
        MK_HARDCODED_6,
        {
            "mask": fails("other-sizes", "check.other_sizes", "check.shape"),
            "output": HARDCODED_RAISES,
        },
    ),
    case(
        "mask_numpy",
        LAB,
        MK_NUMPY,
        {"mask": fails("tensor", "check.not_tensor"), "output": error("TypeError")},
        header="import numpy as np",
    ),
    case(
        "mask_float_inline_attention",
        LAB,
        {**MK_FLOAT, **INLINE_ATTENTION},
        {"mask": fails("bool", "check.mask_dtype")},
    ),
]

MASK_MESSAGE_CASES = [
    case(
        "mask_numpy_names_numpy",
        LAB,
        MK_NUMPY,
        {"mask": fails("tensor", "check.not_tensor", "likely.numpy"), "output": error("TypeError")},
        header="import numpy as np",
    ),
    case(
        "mask_diagonal_0_output_names_diagonal",
        LAB,
        MK_DIAGONAL_0,
        {
            "mask": fails("values", "check.mask_values", "likely.mask_diagonal_bool"),
            "output": fails("finite", "check.not_finite", BLAMES),
        },
    ),
]


def wt(code):
    return {"attention_weights": code}


WT_OWN_MASK = wt("""
def attention_weights(scores, mask):
    T = scores.shape[-1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
""")
# Right at the lab's scores; exp(s) overflows once a score passes 88.
WT_NAIVE_EXP = wt("""
def attention_weights(scores, mask):
    e = torch.exp(scores).masked_fill(mask, 0.0)
    return e / e.sum(dim=-1, keepdim=True)
""")
WT_RENORMALIZED = wt("""
def attention_weights(scores, mask):
    p = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)
    return p / p.sum(dim=-1, keepdim=True)
""")
WT_FILL_ZERO = wt(
    "def attention_weights(scores, mask):\n"
    "    return torch.softmax(scores.masked_fill(mask, 0), dim=-1)\n"
)
WT_SOFTMAX_FIRST = wt(
    "def attention_weights(scores, mask):\n"
    "    return torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)\n"
)
WT_DIM_MINUS_2 = wt(
    "def attention_weights(scores, mask):\n"
    "    return torch.softmax(scores.masked_fill(mask, float('-inf')), dim=-2)\n"
)
WT_DIM_3 = wt(
    "def attention_weights(scores, mask):\n"
    "    return torch.softmax(scores.masked_fill(mask, float('-inf')), dim=3)\n"
)
WT_IN_PLACE = wt(
    "def attention_weights(scores, mask):\n"
    "    scores.masked_fill_(mask, float('-inf'))\n"
    "    return torch.softmax(scores, dim=-1)\n"
)
WT_INDEX_ASSIGN = wt(
    "def attention_weights(scores, mask):\n"
    "    scores[..., mask] = float('-inf')\n"
    "    return torch.softmax(scores, dim=-1)\n"
)
WT_NO_MASK = wt("def attention_weights(scores, mask):\n    return torch.softmax(scores, dim=-1)\n")
WT_INVERTED = wt(
    "def attention_weights(scores, mask):\n"
    "    return torch.softmax(scores.masked_fill(~mask, float('-inf')), dim=-1)\n"
)

WEIGHTS_CASES = [
    case(
        "weights_softmax_by_hand_overflows",
        LAB,
        WT_NAIVE_EXP,
        {"weights": fails("large-scores", "check.large_scores", "likely.softmax_overflow")},
    ),
    case(
        "weights_softmax_then_mask_renormalized",
        LAB,
        WT_RENORMALIZED,
        {"weights": fails("large-scores", "check.large_scores", "likely.softmax_renormalized")},
    ),
    # attention passes the causal mask, so the reference attention is still right.
    case(
        "weights_builds_own_causal_mask",
        LAB,
        WT_OWN_MASK,
        {"weights": fails("uses-given-mask", "check.mask_ignored")},
    ),
    case(
        "weights_fill_zero",
        LAB,
        WT_FILL_ZERO,
        {
            "weights": fails("future-is-zero", "check.future", "likely.fill_zero"),
            "output": fails("future-is-zero", "check.future", BLAMES),
        },
    ),
    case(
        "weights_softmax_before_mask",
        LAB,
        WT_SOFTMAX_FIRST,
        {
            "weights": fails("rows-sum-to-1", "check.rows_sum", "likely.mask_after_softmax"),
            "output": fails("rows-sum-to-1", "check.rows_sum", BLAMES),
        },
    ),
    case(
        "weights_softmax_dim_-2",
        LAB,
        WT_DIM_MINUS_2,
        {
            "weights": fails("rows-sum-to-1", "check.rows_sum", "likely.softmax_dim"),
            "output": fails("rows-sum-to-1", "check.rows_sum", BLAMES),
        },
    ),
    case(
        "weights_softmax_dim_3",
        LAB,
        WT_DIM_3,
        {"weights": HARDCODED_RAISES, "output": HARDCODED_RAISES},
    ),
    # The scores that attention passes are its own temporary: attention's inputs stay intact.
    case(
        "weights_masked_fill_in_place",
        LAB,
        WT_IN_PLACE,
        {"weights": fails("inputs-unchanged", "check.mutated")},
    ),
    case(
        "weights_index_assign_in_place",
        LAB,
        WT_INDEX_ASSIGN,
        {"weights": fails("inputs-unchanged", "check.mutated")},
    ),
    case(
        "weights_no_mask",
        LAB,
        WT_NO_MASK,
        {
            "weights": fails("future-is-zero", "check.future", "likely.no_mask"),
            "output": fails("future-is-zero", "check.future", BLAMES),
        },
    ),
    case(
        "weights_inverted_mask",
        LAB,
        WT_INVERTED,
        {"weights": Exp("fail", None, {"likely.mask_inverted_fill"}), "output": Exp("fail")},
    ),
    case(
        "weights_fill_zero_inline_attention",
        LAB,
        {**WT_FILL_ZERO, **INLINE_ATTENTION},
        {"weights": fails("future-is-zero", "check.future", "likely.fill_zero")},
    ),
]


def at(code):
    return {"attention": code}


AT_OUTPUT_ONLY = at("""
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return weights @ v
""")
AT_RETURNS_NONE = at("""
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    output = weights @ v
""")
AT_SWAPPED_ORDER = at("""
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return weights, weights @ v
""")
AT_HARDCODED_6 = at("""
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(6))
    return weights @ v, weights
""")
AT_T_FROM_DIM_2 = at("""
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[2]))
    return weights @ v, weights
""")
AT_MASK_FROM_D = at("""
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-1]))
    return weights @ v, weights
""")
AT_SDPA = at("""
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return F.scaled_dot_product_attention(q, k, v, is_causal=True), weights
""")
AT_SDPA_GETATTR = at("""
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    kernel = getattr(torch.nn.functional, "_".join(["scaled", "dot", "product", "attention"]))
    return kernel(q, k, v, is_causal=True), weights
""")
AT_WEIGHTS_TIMES_Q = at("""
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return weights @ q, weights
""")
AT_INLINE_MASK_AFTER_SOFTMAX = at("""
def attention(q, k, v):
    T = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores, dim=-1).masked_fill(future, 0.0)
    return weights @ v, weights
""")
AT_INLINE_NO_SCALE = at("""
def attention(q, k, v):
    T = q.shape[-2]
    scores = q @ k.transpose(-2, -1)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights
""")
AT_MUTATES_Q = at("""
def attention(q, k, v):
    q /= math.sqrt(q.shape[-1])
    T = q.shape[-2]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax((q @ k.transpose(-2, -1)).masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights
""")
# The output is right; the weights it returns (for the heatmap) are the unscaled ones.
AT_RETURNS_OTHER_WEIGHTS = at("""
def attention(q, k, v):
    mask = causal_mask(q.shape[-2])
    output = attention_weights(scaled_scores(q, k), mask) @ v
    weights = attention_weights(q @ k.transpose(-2, -1), mask)
    return output, weights
""")

AT_ATEN_GETATTR = at("""
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    kernel = getattr(torch.ops.aten, "scaled_dot_product_" + "attention")
    return kernel(q, k, v, is_causal=True), weights
""")

AT_RETURNS_LIST = at("""
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return [weights @ v, weights]
""")

OUTPUT_CASES = [
    case(
        "output_returns_output_only",
        LAB,
        AT_OUTPUT_ONLY,
        {"output": fails("returns", "check.returns_pair", "likely.returns_pair_lab02")},
    ),
    case(
        "output_returns_list",
        LAB,
        AT_RETURNS_LIST,
        {"output": fails("returns", "check.returns_pair")},
    ),
    case(
        "output_returns_none",
        LAB,
        AT_RETURNS_NONE,
        {"output": fails("returns", "check.returns_pair")},
    ),
    case(
        "output_pair_in_wrong_order",
        LAB,
        AT_SWAPPED_ORDER,
        {"output": fails("returns", "check.returns_pair")},
    ),
    case("output_hardcoded_mask_6", LAB, AT_HARDCODED_6, {"output": HARDCODED_RAISES}),
    # Right for the seed's 4-D tensors; for a 3-D q, dim 2 is d_k.
    case("output_T_from_dim_2", LAB, AT_T_FROM_DIM_2, {"output": HARDCODED_RAISES}),
    case("output_mask_from_d_k", LAB, AT_MASK_FROM_D, {"output": MASK_SIZE}),
    case(
        "output_sdpa",
        LAB,
        AT_SDPA,
        {"output": fails("own-formula", "check.kernel")},
        header="import torch.nn.functional as F",
    ),
    case(
        "output_sdpa_getattr_built_name",
        LAB,
        AT_SDPA_GETATTR,
        {"output": fails("own-formula", "check.kernel")},
    ),
    case(
        "output_weights_times_q",
        LAB,
        AT_WEIGHTS_TIMES_Q,
        {"output": fails("matches-pytorch", "check.values", "likely.out_not_weights_v")},
    ),
    case(
        "output_inline_mask_after_softmax",
        LAB,
        AT_INLINE_MASK_AFTER_SOFTMAX,
        {"output": fails("rows-sum-to-1", "check.rows_sum", "likely.mask_after_softmax")},
    ),
    case(
        "output_inline_no_scale",
        LAB,
        AT_INLINE_NO_SCALE,
        {"output": Exp("fail", None, {"check.values", "likely.scale_none"})},
    ),
    case(
        "output_q_divided_in_place",
        LAB,
        AT_MUTATES_Q,
        {"output": fails("inputs-unchanged", "check.mutated")},
    ),
    case("output_returns_unscaled_weights", LAB, AT_RETURNS_OTHER_WEIGHTS, {"output": Exp("fail")}),
    case(
        "output_aten_getattr_kernel",
        LAB,
        AT_ATEN_GETATTR,
        {"output": fails("own-formula", "check.kernel")},
    ),
]

OUTPUT_MESSAGE_CASES = [
    case(
        "output_pair_in_wrong_order_names_order",
        LAB,
        AT_SWAPPED_ORDER,
        {"output": fails("returns", "check.returns_pair", "likely.pair_order")},
    ),
    case(
        "output_returns_none_names_missing_return",
        LAB,
        AT_RETURNS_NONE,
        {"output": fails("returns", "check.returns_pair", "likely.forgot_return")},
    ),
]


ALL_CASES = (
    SINGLE_CASES
    + SINGLE_MESSAGE_CASES
    + MULTI_CASES
    + MULTI_MESSAGE_CASES
    + SHAPES_CASES
    + SCORES_CASES
    + MASK_CASES
    + MASK_MESSAGE_CASES
    + WEIGHTS_CASES
    + OUTPUT_CASES
    + OUTPUT_MESSAGE_CASES
)


@pytest.mark.parametrize("lesson, replace, header, expect", ALL_CASES)
def test_wrong_implementation(run, lesson, replace, header, expect):
    source = learner_file(lesson, replace, header)
    assert source != REFERENCE[lesson]
    results = run(lesson, source)
    verify(results, lesson, expect)
