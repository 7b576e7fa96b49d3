"""Issue #12, lab-02 and the "other sizes" diagnosis: wrong files that must not pass, each
with the step that must fail, the check, and the catalog keys of its message.

Classes: state kept between calls (a memo keyed on the shape, a mask cached for the first
T, a module-level tensor refilled, a mask capped below the lengths the checks try); a
helper's fault that only `attention` used to show, and an `attention` that makes up for a
wrong helper; wrong code computed in float64; mistakes that had no name (an inverted mask
with a finite fill, a large negative fill such as -100, masked_fill's result thrown away);
and the "other sizes" message, which must say what differs at that size (the rank, d_in
against d_out, a number written in only when the source has one).

As in test_wrong_implementations.py, each file is the reference with one piece replaced,
and every step not listed must pass. Each of these (but GUARD_CASES) failed on the checks
before issue #12: the file passed a step it must fail, or the message named another cause,
or the judge crashed (float64); which did which is in the commit that added them.
"""

from __future__ import annotations

import pytest
from worker_kit import REFERENCE, Exp, error, learner_file, verify

from tutor.text.i18n import local_key

LM3, LAB = "lm3-l3", "lab-02"
BLAMES = "likely.helper_first"
LITERAL = "likely.literal"


def case(case_id, lesson, replace, expect, header=""):
    return pytest.param(lesson, replace, header, expect, id=case_id)


def fails(check, *keys, absent=()):
    return Exp("fail", check, keys, absent=absent)


def other_sizes(*keys, absent=()):
    return fails("other-sizes", "check.other_sizes", *keys, absent=absent)


def again(*keys, absent=()):
    return fails("call-again", "check.called_again", *keys, absent=absent)


# =================================================================== state kept between calls

SC_MEMO_BY_SHAPE = {
    "scaled_scores": """
_memo = {}


def scaled_scores(q, k):
    if q.shape not in _memo:
        _memo[q.shape] = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return _memo[q.shape]
"""
}

# Keyed on d_k alone: every size the checks try has its own, so only the second call shows it.
SC_MEMO_BY_WIDTH = {
    "scaled_scores": """
_last = {}


def scaled_scores(q, k, _cache=_last):
    d = q.shape[-1]
    if d not in _cache:
        _cache[d] = q @ k.transpose(-2, -1) / math.sqrt(d)
    return _cache[d]
"""
}

WT_MEMO_BY_SHAPE = {
    "attention_weights": """
_weights = {}


def attention_weights(scores, mask):
    if scores.shape not in _weights:
        _weights[scores.shape] = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return _weights[scores.shape]
"""
}

AT_MEMO_BY_SHAPE = {
    "attention": """
_done = {}


def attention(q, k, v):
    if q.shape not in _done:
        weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
        _done[q.shape] = (weights @ v, weights)
    return _done[q.shape]
"""
}

# Built at the first call (T=6) and cut down after: right for every T up to 6.
MK_CACHED_FIRST_T = {
    "causal_mask": """
_mask = None


def causal_mask(seq_len):
    global _mask
    if _mask is None:
        _mask = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1)
    return _mask[:seq_len, :seq_len]
"""
}

# The same, without the slice: the first call's mask for every T.
MK_RETURNS_FIRST_MASK = {
    "causal_mask": """
_made = []


def causal_mask(seq_len):
    if not _made:
        _made.append(torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1))
    return _made[0]
"""
}
# Kept on a class attribute rather than a global.
MK_FIRST_T_ON_A_CLASS = {
    "causal_mask": """
class _Cache:
    mask = None


def causal_mask(seq_len):
    if _Cache.mask is None:
        _Cache.mask = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1)
    return _Cache.mask[:seq_len, :seq_len]
"""
}
# attention keeps the mask of its first call (T=6) for every later one.
AT_MASK_OF_THE_FIRST_CALL = {
    "attention": """
_MASK = None


def attention(q, k, v):
    global _MASK
    if _MASK is None:
        _MASK = causal_mask(q.shape[-2])
    weights = attention_weights(scaled_scores(q, k), _MASK)
    return weights @ v, weights
"""
}

# One buffer, refilled in place: each call's values are right, but the tensor handed out
# first changes when the function runs again at that shape. attention passes: the weights
# step's second call at the seed (another mask) refills it, attention's calls at the seed's
# shape have other sizes between them, which make a new buffer.
WT_REFILLED_BUFFER = {
    "attention_weights": """
_out = None


def attention_weights(scores, mask):
    global _out
    if _out is None or _out.shape != scores.shape:
        _out = torch.empty_like(scores)
    _out.copy_(torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1))
    return _out
"""
}

# A mask made once at a fixed size and sliced: right up to that size.
MK_CAPPED_32_MODULE = {
    "causal_mask": """
_FUTURE = torch.triu(torch.ones(32, 32, dtype=torch.bool), diagonal=1)


def causal_mask(seq_len):
    return _FUTURE[:seq_len, :seq_len]
"""
}
MK_CAPPED_20_BY_MIN = {
    "causal_mask": """
def causal_mask(seq_len):
    n = min(seq_len, 20)
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
"""
}
MK_CAPPED_35 = {
    "causal_mask": """
def causal_mask(seq_len):
    return torch.triu(torch.ones(35, 35, dtype=torch.bool), diagonal=1)[:seq_len, :seq_len]
"""
}
# Longer than any T that attention meets: before, no step of the lab saw it.
MK_CAPPED_64_DEFAULT = {
    "causal_mask": """
def causal_mask(seq_len, max_len=64):
    full = torch.triu(torch.ones(max_len, max_len, dtype=torch.bool), diagonal=1)
    return full[:seq_len, :seq_len]
"""
}

STATE_CASES = [
    case(
        "scores_memo_keyed_on_shape",
        LAB,
        SC_MEMO_BY_SHAPE,
        {
            "scores": again("check.values", "likely.kept_state_at"),
            "output": again("check.values", BLAMES),
        },
    ),
    case(
        "scores_memo_keyed_on_d_k_in_a_default_argument",
        LAB,
        SC_MEMO_BY_WIDTH,
        {"scores": again("likely.kept_state_at"), "output": again(BLAMES)},
    ),
    # The seed's second call (another mask, same shape) already gets the first call's weights.
    case(
        "weights_memo_keyed_on_shape",
        LAB,
        WT_MEMO_BY_SHAPE,
        {
            "weights": fails("uses-given-mask", "check.mask_ignored", "likely.kept_state_at"),
            "output": again(BLAMES),
        },
    ),
    case(
        "attention_memo_keyed_on_shape",
        LAB,
        AT_MEMO_BY_SHAPE,
        {"output": again("likely.kept_state_at", absent=(BLAMES,))},
    ),
    case(
        "mask_cached_for_the_first_T",
        LAB,
        MK_CACHED_FIRST_T,
        {
            "mask": other_sizes("check.shape", "likely.kept_state_at", absent=(LITERAL,)),
            "output": other_sizes("check.raised", BLAMES),
        },
    ),
    case(
        "mask_returns_the_first_calls_mask",
        LAB,
        MK_RETURNS_FIRST_MASK,
        {
            "mask": other_sizes("check.shape", "likely.kept_state_at", absent=(LITERAL,)),
            "output": other_sizes("check.raised", BLAMES),
        },
    ),
    case(
        "mask_of_the_first_T_kept_on_a_class",
        LAB,
        MK_FIRST_T_ON_A_CLASS,
        {
            "mask": other_sizes("check.shape", "likely.kept_state_at", absent=(LITERAL,)),
            "output": other_sizes("check.raised", BLAMES),
        },
    ),
    case(
        "attention_keeps_the_mask_of_its_first_call",
        LAB,
        AT_MASK_OF_THE_FIRST_CALL,
        {"output": other_sizes("check.raised", "likely.kept_state_at", absent=(LITERAL, BLAMES))},
    ),
    case(
        "weights_refill_one_module_level_buffer",
        LAB,
        WT_REFILLED_BUFFER,
        {"weights": fails("call-again", "check.result_reused", "likely.kept_state_at")},
    ),
    case(
        "mask_capped_at_32_made_at_module_level",
        LAB,
        MK_CAPPED_32_MODULE,
        {
            "mask": other_sizes("check.shape", "likely.mask_capped", absent=(LITERAL,)),
            "output": other_sizes("check.raised", BLAMES),
        },
    ),
    case(
        "mask_capped_at_20_by_min",
        LAB,
        MK_CAPPED_20_BY_MIN,
        {
            "mask": other_sizes("check.shape", "likely.mask_capped", absent=(LITERAL,)),
            "output": other_sizes(BLAMES),
        },
    ),
    case(
        "mask_capped_at_35",
        LAB,
        MK_CAPPED_35,
        {"mask": other_sizes("check.shape", "likely.mask_capped"), "output": other_sizes(BLAMES)},
    ),
    # attention's longest T is 40: only the mask step's own lengths (48, 100) reach past 64.
    case(
        "mask_capped_at_64_by_a_default_argument",
        LAB,
        MK_CAPPED_64_DEFAULT,
        {"mask": other_sizes("check.shape", "likely.mask_capped")},
    ),
]


# =================================================================== each step on its own

SC_NO_SCALE = {"scaled_scores": "def scaled_scores(q, k):\n    return q @ k.transpose(-2, -1)\n"}
MK_TRIL = {
    "causal_mask": "def causal_mask(seq_len):\n"
    "    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))\n"
}
WT_NO_MASK = {
    "attention_weights": "def attention_weights(scores, mask):\n    return torch.softmax(scores, dim=-1)\n"
}
MK_DIAGONAL_0 = {
    "causal_mask": "def causal_mask(seq_len):\n"
    "    return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=0)\n"
}

# attention puts back the scale its scaled_scores left out: right as a whole, wrong as parts.
AT_RESCALES = {
    **SC_NO_SCALE,
    "attention": """
def attention(q, k, v):
    scores = scaled_scores(q, k) / math.sqrt(q.shape[-1])
    weights = attention_weights(scores, causal_mask(q.shape[-2]))
    return weights @ v, weights
""",
}
# The mask marks the visible keys; attention inverts it back.
AT_INVERTS_MASK = {
    **MK_TRIL,
    "attention": """
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), ~causal_mask(q.shape[-2]))
    return weights @ v, weights
""",
}
# attention_weights ignores its mask and attention masks the scores itself: attention is right
# with correct helpers too (masking twice changes nothing), so only the weights step fails.
AT_MASKS_FOR_WEIGHTS = {
    **WT_NO_MASK,
    "attention": """
def attention(q, k, v):
    mask = causal_mask(q.shape[-2])
    weights = attention_weights(scaled_scores(q, k).masked_fill(mask, float("-inf")), mask)
    return weights @ v, weights
""",
}

STEP_CASES = [
    case(
        "attention_rescales_what_scaled_scores_left_unscaled",
        LAB,
        AT_RESCALES,
        {
            "scores": fails("values", "check.values", "likely.scale_none"),
            "output": fails("reference-helpers", "check.reference_helpers", "likely.compensates"),
        },
    ),
    case(
        "attention_inverts_a_mask_built_the_wrong_way",
        LAB,
        AT_INVERTS_MASK,
        {
            "mask": fails("values", "check.mask_values", "likely.mask_inverted"),
            "output": fails("reference-helpers", "check.reference_helpers", "likely.compensates"),
        },
    ),
    # A helper's fault, through the reference attention: the output step names the helper.
    case(
        "mask_hides_the_diagonal_output_blames_causal_mask",
        LAB,
        MK_DIAGONAL_0,
        {
            "mask": fails("values", "check.mask_values", "likely.mask_diagonal_bool"),
            "output": fails("finite", "check.not_finite", BLAMES),
        },
    ),
    case(
        "no_scale_output_blames_scaled_scores",
        LAB,
        SC_NO_SCALE,
        {
            "scores": fails("values", "check.values", "likely.scale_none"),
            "output": fails("values", "check.values", BLAMES),
        },
    ),
    case(
        "no_mask_output_blames_attention_weights",
        LAB,
        WT_NO_MASK,
        {
            "weights": fails("future-is-zero", "check.future", "likely.no_mask"),
            "output": fails("future-is-zero", "check.future", BLAMES),
        },
    ),
]


# =================================================================== wrong code in float64

SC_FLOAT64_NO_SCALE = {
    "scaled_scores": """
def scaled_scores(q, k):
    return q.double() @ k.double().transpose(-2, -1)
"""
}
WT_FLOAT64_AFTER_SOFTMAX = {
    "attention_weights": """
def attention_weights(scores, mask):
    return torch.softmax(scores.double(), dim=-1).masked_fill(mask, 0.0)
"""
}
AT_FLOAT64_FILL_ZERO = {
    "attention": """
def attention(q, k, v):
    q, k, v = q.double(), k.double(), v.double()
    T = q.shape[-2]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores.masked_fill(future, 0.0), dim=-1)
    return weights @ v, weights
"""
}
AT_FLOAT64_NO_SCALE = {
    "attention": """
def attention(q, k, v):
    q, k, v = q.double(), k.double(), v.double()
    T = q.shape[-2]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax((q @ k.transpose(-2, -1)).masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights
"""
}
CA_FLOAT64_NO_MASK = {
    "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    x, Wq, Wk, Wv = x.double(), Wq.double(), Wk.double(), Wv.double()
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    weights = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
    return weights @ v, weights
"""
}

FLOAT64_CASES = [
    # The float64 scores meet attention's float32 v: the reference attention raises there.
    case(
        "scores_in_float64_without_the_scale",
        LAB,
        SC_FLOAT64_NO_SCALE,
        {
            "scores": fails("values", "check.values", "likely.scale_none"),
            "output": error("RuntimeError"),
        },
    ),
    case(
        "weights_in_float64_masked_after_softmax",
        LAB,
        WT_FLOAT64_AFTER_SOFTMAX,
        {
            "weights": fails("rows-sum-to-1", "check.rows_sum", "likely.mask_after_softmax"),
            "output": error("RuntimeError"),
        },
    ),
    case(
        "attention_in_float64_fills_zero",
        LAB,
        AT_FLOAT64_FILL_ZERO,
        {"output": fails("future-is-zero", "check.future", "likely.fill_zero")},
    ),
    case(
        "attention_in_float64_without_the_scale",
        LAB,
        AT_FLOAT64_NO_SCALE,
        {"output": fails("values", "check.values", "likely.scale_none")},
    ),
    case(
        "single_head_in_float64_without_a_mask",
        LM3,
        CA_FLOAT64_NO_MASK,
        {
            "single-head": fails("future-is-zero", "check.future", "likely.no_mask"),
            "leakage": fails("no-leak", "check.leak", "likely.leak"),
        },
    ),
]


# =================================================================== mistakes that had no name


def wt(body):
    return {"attention_weights": "def attention_weights(scores, mask):\n" + body}


def inline(fill_line):
    return {
        "attention": f"""
def attention(q, k, v):
    T = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
{fill_line}
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
"""
    }


NAMES_CASES = [
    # Inverted, with a finite fill: no NaN, the future simply gets the weight.
    case(
        "weights_inverted_mask_eq_0_fill_minus_1e9",
        LAB,
        wt("    return torch.softmax(scores.masked_fill(mask == 0, -1e9), dim=-1)\n"),
        {
            "weights": Exp("fail", None, {"likely.mask_inverted_fill"}),
            "output": Exp("fail", None, {BLAMES}),
        },
    ),
    case(
        "weights_inverted_mask_logical_not_fill_minus_1e4",
        LAB,
        wt("    return torch.softmax(scores.masked_fill(mask.logical_not(), -1e4), dim=-1)\n"),
        {
            "weights": Exp("fail", None, {"likely.mask_inverted_fill"}),
            "output": Exp("fail", None, {BLAMES}),
        },
    ),
    case(
        "attention_inline_where_keeps_the_future",
        LAB,
        inline("    scores = torch.where(future, scores, torch.full_like(scores, -1e9))"),
        {"output": Exp("fail", None, {"likely.mask_inverted_fill"})},
    ),
    # exp(-100) is about 4e-44: tiny, not 0, even in float32.
    case(
        "weights_fill_minus_100",
        LAB,
        wt("    return torch.softmax(scores.masked_fill(mask, -100), dim=-1)\n"),
        {
            "weights": fails("future-is-zero", "check.future", "likely.fill_large_negative"),
            "output": fails("future-is-zero", "check.future", BLAMES),
        },
    ),
    case(
        "weights_subtract_30_where_masked",
        LAB,
        wt("    return torch.softmax(scores - 30.0 * mask, dim=-1)\n"),
        {
            "weights": fails("future-is-zero", "check.future", "likely.fill_large_negative"),
            "output": fails("future-is-zero", "check.future", BLAMES),
        },
    ),
    case(
        "attention_inline_fill_minus_100",
        LAB,
        inline("    scores = scores.masked_fill(future, -100.0)"),
        {"output": fails("future-is-zero", "check.future", "likely.fill_large_negative")},
    ),
    # masked_fill is not in place: on a line of its own its result is lost.
    case(
        "weights_masked_fill_result_thrown_away",
        LAB,
        wt(
            "    scores.masked_fill(mask, float('-inf'))\n    return torch.softmax(scores, dim=-1)\n"
        ),
        {
            "weights": fails("future-is-zero", "check.future", "likely.masked_fill_discarded_at"),
            "output": fails("future-is-zero", "check.future", BLAMES),
        },
    ),
    case(
        "weights_torch_masked_fill_result_thrown_away",
        LAB,
        wt("    torch.masked_fill(scores, mask, -1e9)\n    return torch.softmax(scores, dim=-1)\n"),
        {
            "weights": fails("future-is-zero", "check.future", "likely.masked_fill_discarded_at"),
            "output": fails("future-is-zero", "check.future", BLAMES),
        },
    ),
    case(
        "attention_inline_masked_fill_result_thrown_away",
        LAB,
        inline("    scores.masked_fill(future, float('-inf'))"),
        {"output": fails("future-is-zero", "check.future", "likely.masked_fill_discarded_at")},
    ),
    # No mask at all, and no masked_fill thrown away: the message must not claim one.
    case(
        "weights_no_mask_names_no_mask_not_a_lost_result",
        LAB,
        WT_NO_MASK,
        {
            "weights": fails(
                "future-is-zero",
                "check.future",
                "likely.no_mask",
                absent=("likely.masked_fill_discarded_at",),
            ),
            "output": fails("future-is-zero", "check.future", BLAMES),
        },
    ),
]


# =================================================================== what differs at the other sizes

SC_TRANSPOSE_2_3 = {
    "scaled_scores": "def scaled_scores(q, k):\n"
    "    return q @ k.transpose(2, 3) / math.sqrt(q.shape[-1])\n"
}
SC_UNPACKS_4 = {
    "scaled_scores": """
def scaled_scores(q, k):
    B, H, T, d_k = q.shape
    return q @ k.transpose(-2, -1) / math.sqrt(d_k)
"""
}
WT_DIM_3 = wt("    return torch.softmax(scores.masked_fill(mask, float('-inf')), dim=3)\n")
AT_T_FROM_DIM_2 = {
    "attention": """
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[2]))
    return weights @ v, weights
"""
}
SC_SQRT_8 = {
    "scaled_scores": "def scaled_scores(q, k):\n    return q @ k.transpose(-2, -1) / math.sqrt(8)\n"
}
SC_HEAD_DIM_CONSTANT = {
    "scaled_scores": """
HEAD_DIM = 8


def scaled_scores(q, k):
    return q @ k.transpose(-2, -1) / HEAD_DIM ** 0.5
"""
}
MK_HARDCODED_6 = {
    "causal_mask": "def causal_mask(seq_len):\n"
    "    return torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)\n"
}

CA_HARDCODED_SCALE_2 = {
    "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / 2
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
"""
}

# The multi-head forward, with one width read from x (d_in) where d_out or head_dim is needed:
# the notebook's d_in and d_out are both 8, so these pass there.
_FORWARD = """
def forward(self, x):
    B, T, C = x.shape
    H = self.n_heads
    hd = {hd}
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / {scale} ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, {merged})
    return self.out_proj(context)
"""


def fwd(**parts):
    return {
        "CausalMultiHeadAttention.forward": _FORWARD.format(
            **{"hd": "self.head_dim", "scale": "hd", "merged": "self.d_out", **parts}
        )
    }


MH_HEAD_DIM_FROM_X = fwd(hd="C // H")
MH_MERGED_TO_C = fwd(merged="C")
MH_SCALE_FROM_X = fwd(scale="(x.shape[-1] // H)")
MH_HARDCODED_VIEW = {
    "CausalMultiHeadAttention.forward": """
def forward(self, x):
    q = self.W_q(x).view(2, 6, 2, 4).transpose(1, 2)
    k = self.W_k(x).view(2, 6, 2, 4).transpose(1, 2)
    v = self.W_v(x).view(2, 6, 2, 4).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / 4 ** 0.5
    scores = scores.masked_fill(self.mask[:6, :6], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    return self.out_proj((weights @ v).transpose(1, 2).contiguous().view(2, 6, 8))
"""
}

SIZES_CASES = [
    # The rank: 4-D in the notebook, 3-D among the other sizes.
    case(
        "scores_transpose_2_3_names_the_rank",
        LAB,
        SC_TRANSPOSE_2_3,
        {
            "scores": other_sizes("check.raised", "likely.rank_dims", absent=(LITERAL,)),
            "output": other_sizes(BLAMES),
        },
    ),
    case(
        "scores_unpack_four_dims_names_the_rank",
        LAB,
        SC_UNPACKS_4,
        {
            "scores": other_sizes("check.raised", "likely.rank_dims", absent=(LITERAL,)),
            "output": other_sizes(BLAMES),
        },
    ),
    case(
        "weights_softmax_dim_3_names_the_rank",
        LAB,
        WT_DIM_3,
        {
            "weights": other_sizes("check.raised", "likely.rank_dims", absent=(LITERAL,)),
            "output": other_sizes(BLAMES),
        },
    ),
    case(
        "attention_T_from_dim_2_names_the_rank",
        LAB,
        AT_T_FROM_DIM_2,
        {"output": other_sizes("check.raised", "likely.rank_dims", absent=(LITERAL, BLAMES))},
    ),
    # d_in where d_out or head_dim is needed (equal in the notebook: 8 and 8).
    case(
        "multi_head_dim_from_the_width_of_x",
        LM3,
        MH_HEAD_DIM_FROM_X,
        {"multi-head": other_sizes("likely.width_d_in", absent=(LITERAL,))},
    ),
    case(
        "multi_merge_to_the_width_of_x",
        LM3,
        MH_MERGED_TO_C,
        {"multi-head": other_sizes("likely.width_d_in", absent=(LITERAL,))},
    ),
    case(
        "multi_scale_from_the_width_of_x",
        LM3,
        MH_SCALE_FROM_X,
        {"multi-head": other_sizes("check.values", "likely.width_d_in", absent=(LITERAL,))},
    ),
    # A number written in: named, with its line.
    case(
        "scores_sqrt_8_names_the_literal",
        LAB,
        SC_SQRT_8,
        {"scores": other_sizes("check.values", LITERAL), "output": other_sizes(BLAMES)},
    ),
    case(
        "scores_module_constant_8_names_the_literal",
        LAB,
        SC_HEAD_DIM_CONSTANT,
        {"scores": other_sizes("check.values", LITERAL), "output": other_sizes(BLAMES)},
    ),
    case(
        "mask_ones_6_6_names_the_literal",
        LAB,
        MK_HARDCODED_6,
        {"mask": other_sizes("check.shape", LITERAL), "output": other_sizes(BLAMES)},
    ),
    case(
        "single_head_divides_by_2_names_the_root_of_d_k",
        LM3,
        CA_HARDCODED_SCALE_2,
        {"single-head": other_sizes("check.values", LITERAL)},
    ),
    case(
        "multi_view_2_6_2_4_names_the_literal",
        LM3,
        MH_HARDCODED_VIEW,
        {"multi-head": other_sizes("check.raised", LITERAL)},
    ),
]


# Not a file the old checks let through: a guard that the new reference-helpers check stays
# quiet where attention is right with correct helpers too.
GUARD_CASES = [
    case(
        "attention_masks_what_attention_weights_does_not",
        LAB,
        AT_MASKS_FOR_WEIGHTS,
        {"weights": fails("future-is-zero", "check.future", "likely.no_mask")},
    ),
]

ALL = STATE_CASES + STEP_CASES + FLOAT64_CASES + NAMES_CASES + SIZES_CASES + GUARD_CASES


@pytest.mark.parametrize("lesson, replace, header, expect", ALL)
def test_wrong_file_is_caught_and_named(run, lesson, replace, header, expect):
    source = learner_file(lesson, replace, header)
    assert source != REFERENCE[lesson]
    verify(run(lesson, source), lesson, expect)


def test_the_literal_message_quotes_the_line_and_the_number(run):
    """The literal named is the one in the file, at its line: `math.sqrt(8)`, not a guess."""
    source = learner_file(LAB, SC_SQRT_8)
    check = next(c for c in run(LAB, source)["scores"].checks if c.id == "other-sizes")
    likely = nested(check.message.params, LITERAL)
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "math.sqrt(8)" in text)
    assert likely == {
        "value": "8",
        "name": "d_k",
        "line": line,
        "code": "math.sqrt(8)",
        "now": "d_k=16",
    }


def nested(params: dict, key: str):
    """The parameters of the message `key` nested anywhere in params, or None."""
    for value in params.values():
        if isinstance(value, dict) and "key" in value:
            if local_key(value["key"]) == key:
                return value["params"]
            found = nested(value["params"], key)
            if found is not None:
                return found
    return None


def test_a_helper_blamed_is_the_first_wrong_one_in_step_order(run):
    """Scores and mask both wrong: the output step names scaled_scores, the first step."""
    source = learner_file(LAB, {**SC_NO_SCALE, **MK_DIAGONAL_0})
    results = run(LAB, source)
    output = [c for c in results["output"].checks if c.status == "fail"]
    assert output and all(
        nested(c.message.params, BLAMES) == {"fn": "scaled_scores"} for c in output
    ), output
    assert results["scores"].status == "fail" and results["mask"].status == "fail"
