"""Correct solutions written in other styles must pass every checked step.

Each file is the reference solution with one function (or method) rewritten in
another correct style. A correct style that fails would be a check that rejects a
right answer: such a case is marked xfail(strict=True) with what we observed.
"""

from __future__ import annotations

import pytest
from worker_kit import CHECKED_STEPS, learner_file, verify

LM3, LAB = "lm3-l3", "lab-02"


def style(style_id, lesson, replace, header="", xfail=None):
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(lesson, replace, header, id=style_id, marks=marks)


# ------------------------------------------------------------------ lm3-l3: causal_attention

LM3_CAUSAL = {
    "einsum": """
def causal_attention(x, Wq, Wk, Wv):
    q = torch.einsum("btd,dk->btk", x, Wq)
    k = torch.einsum("btd,dk->btk", x, Wk)
    v = torch.einsum("btd,dk->btk", x, Wv)
    scores = torch.einsum("bqk,bsk->bqs", q, k) / q.shape[-1] ** 0.5
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return torch.einsum("bqs,bsk->bqk", weights, v), weights
""",
    "tril_and_not": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    visible = torch.tril(torch.ones(T, T, dtype=torch.bool))
    weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    return weights @ v, weights
""",
    "tril_eq_0": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    tril = torch.tril(torch.ones(T, T))
    weights = torch.softmax(scores.masked_fill(tril == 0, float("-inf")), dim=-1)
    return weights @ v, weights
""",
    "masked_fill_in_place_on_local_scores": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    scores.masked_fill_(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
""",
    "fill_minus_1e9": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, -1e9), dim=-1)
    return weights @ v, weights
""",
    "fill_finfo_min": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, torch.finfo(scores.dtype).min), dim=-1)
    return weights @ v, weights
""",
    "F_softmax_and_math_sqrt": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(d_k)
    T = x.size(1)
    future = torch.ones(T, T).triu(1).bool()
    weights = F.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return torch.matmul(weights, v), weights
""",
    "bmm_and_torch_where": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = torch.matmul(x, Wq), torch.matmul(x, Wk), torch.matmul(x, Wv)
    scores = torch.bmm(q, k.mT) / k.size(-1) ** 0.5
    T = x.shape[1]
    future = torch.arange(T)[None, :] > torch.arange(T)[:, None]
    scores = torch.where(future, torch.tensor(float("-inf")), scores)
    weights = scores.softmax(dim=-1)
    return torch.bmm(weights, v), weights
""",
    "additive_minus_inf_mask": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    T = x.shape[1]
    bias = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    weights = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5 + bias, dim=-1)
    return weights @ v, weights
""",
    "prints_while_debugging": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    print("q", q.shape, "k", k.shape)
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    print(weights[0])
    return weights @ v, weights
""",
    # A message that names the kernel is not a call of it.
    "prints_a_message_naming_the_kernel": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    print(f"my scaled_dot_product_attention: weights {tuple(weights.shape)}")
    return weights @ v, weights
""",
    "softmax_by_hand": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(future, float("-inf"))
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    weights = e / e.sum(dim=-1, keepdim=True)
    return weights @ v, weights
""",
}

# ------------------------------------------------------------------ lm3-l3: multi-head forward

LM3_FORWARD = {
    "softmax_by_hand_minus_the_row_max": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q, k, v = (lin(x).view(B, T, H, hd).transpose(1, 2) for lin in (self.W_q, self.W_k, self.W_v))
    scores = (q @ k.transpose(-2, -1) / hd**0.5).masked_fill(self.mask[:T, :T], float("-inf"))
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    weights = self.dropout(e / e.sum(dim=-1, keepdim=True))
    return self.out_proj((weights @ v).transpose(1, 2).reshape(B, T, self.d_out))
""",
    "reshape_instead_of_contiguous_view": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).reshape(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).reshape(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).reshape(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    return self.out_proj((weights @ v).transpose(1, 2).reshape(B, T, self.d_out))
""",
    "buffer_mask_bool_sliced": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3)
    scores = scores / k.shape[-1] ** 0.5
    mask_bool = self.mask.bool()[:T, :T]
    scores.masked_fill_(mask_bool, -torch.inf)
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""",
    "einsum_and_fill_minus_1e9": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd)
    k = self.W_k(x).view(B, T, H, hd)
    v = self.W_v(x).view(B, T, H, hd)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / hd ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], -1e9)
    weights = self.dropout(F.softmax(scores, dim=-1))
    context = torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(B, T, self.d_out)
    return self.out_proj(context)
""",
    # Names that contain a kernel's name but are the learner's own: the class itself, a local
    # helper written by hand, a variable. Only a call of the library's kernel may fail.
    "own_names_that_mention_the_kernel": """
def forward(self, x):
    assert isinstance(self, CausalMultiHeadAttention)
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim

    def scaled_dot_product_attention(q, k, v, mask):
        scores = (q @ k.transpose(-2, -1) / hd ** 0.5).masked_fill(mask, float("-inf"))
        return self.dropout(torch.softmax(scores, dim=-1)) @ v

    q, k, v = (layer(x).view(B, T, H, hd).transpose(1, 2) for layer in (self.W_q, self.W_k, self.W_v))
    multi_head_attention_out = scaled_dot_product_attention(q, k, v, self.mask[:T, :T])
    return self.out_proj(multi_head_attention_out.transpose(1, 2).reshape(B, T, self.d_out))
""",
    "loop_over_heads": """
def forward(self, x):
    B, T, _ = x.shape
    hd = self.head_dim
    q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    heads = []
    for h in range(self.n_heads):
        part = slice(h * hd, (h + 1) * hd)
        scores = q[..., part] @ k[..., part].transpose(-2, -1) / hd ** 0.5
        weights = self.dropout(torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1))
        heads.append(weights @ v[..., part])
    return self.out_proj(torch.cat(heads, dim=-1))
""",
}

# ------------------------------------------------------------------ lm3-l3: multi-head constructor

LM3_INIT = {
    "super_with_the_class_named": """
def __init__(self, d_in, d_out, n_heads, context_length, dropout=0.0):
    super(CausalMultiHeadAttention, self).__init__()
    assert d_out % n_heads == 0, "d_out must be divisible by n_heads"
    self.d_out, self.n_heads, self.head_dim = d_out, n_heads, d_out // n_heads
    self.W_q = nn.Linear(d_in, d_out, bias=False)
    self.W_k = nn.Linear(d_in, d_out, bias=False)
    self.W_v = nn.Linear(d_in, d_out, bias=False)
    self.out_proj = nn.Linear(d_out, d_out)
    self.dropout = nn.Dropout(dropout)
    self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())
""",
}

# ------------------------------------------------------------------ lm3-l3: expected_shapes

LM3_SHAPES = {
    "torch_Size_values": """
def expected_shapes(B, T, H, hd):
    return {
        "projected_q": torch.Size([B, T, H * hd]),
        "q_split_into_heads": torch.Size([B, T, H, hd]),
        "q_per_head": torch.Size([B, H, T, hd]),
        "scores": torch.Size([B, H, T, T]),
        "weights": torch.Size([B, H, T, T]),
        "context_per_head": torch.Size([B, H, T, hd]),
        "context_merged": torch.Size([B, T, H * hd]),
    }
""",
    "measured_on_real_tensors": """
def expected_shapes(B, T, H, hd):
    q = torch.zeros(B, T, H * hd)
    split = q.view(B, T, H, hd)
    per_head = split.transpose(1, 2)
    scores = per_head @ per_head.transpose(-2, -1)
    weights = torch.softmax(scores, dim=-1)
    context = weights @ per_head
    merged = context.transpose(1, 2).contiguous().view(B, T, H * hd)
    return {
        "projected_q": q.shape,
        "q_split_into_heads": tuple(split.shape),
        "q_per_head": per_head.shape,
        "scores": tuple(scores.shape),
        "weights": weights.shape,
        "context_per_head": tuple(context.shape),
        "context_merged": merged.shape,
    }
""",
}

# ------------------------------------------------------------------ lab-02

LAB_SCORES = {
    "einsum": """
def scaled_scores(q, k):
    return torch.einsum("...qd,...kd->...qk", q, k) / q.shape[-1] ** 0.5
""",
    "matmul_mT_and_size": """
def scaled_scores(q, k):
    d_k = q.size(-1)
    return torch.matmul(q, k.mT) * (1.0 / math.sqrt(d_k))
""",
    "float64_then_cast_back": """
def scaled_scores(q, k):
    scores = q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.shape[-1])
    return scores.to(q.dtype)
""",
    # A memo that is right: its key holds every value the result depends on.
    "memo_keyed_on_the_values": """
_seen = {}


def scaled_scores(q, k):
    key = (tuple(q.shape), tuple(q.flatten().tolist()), tuple(k.flatten().tolist()))
    if key not in _seen:
        _seen[key] = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return _seen[key]
""",
    "a_callable_class_instance": """
class ScaledScores:
    def __call__(self, q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


scaled_scores = ScaledScores()
""",
}

LAB_MASK = {
    "not_tril": """
def causal_mask(seq_len):
    return ~torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))
""",
    "tril_eq_0": """
def causal_mask(seq_len):
    return torch.tril(torch.ones(seq_len, seq_len)) == 0
""",
    "arange_comparison": """
def causal_mask(seq_len):
    i = torch.arange(seq_len)
    return i[None, :] > i[:, None]
""",
    "float_triu_then_bool": """
def causal_mask(seq_len):
    return torch.triu(torch.ones(seq_len, seq_len), diagonal=1).bool()
""",
    "arange_unsqueeze_comparison": """
def causal_mask(seq_len):
    return torch.arange(seq_len).unsqueeze(0) > torch.arange(seq_len).unsqueeze(1)
""",
    "lru_cache_keyed_on_seq_len": """
import functools


@functools.lru_cache(maxsize=None)
def causal_mask(seq_len):
    return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1)
""",
    # Kept between calls, but made longer whenever a call needs more, and cut to each T.
    "module_mask_grown_when_too_short": """
_future = torch.zeros(0, 0, dtype=torch.bool)


def causal_mask(seq_len):
    global _future
    if _future.shape[0] < seq_len:
        _future = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1)
    return _future[:seq_len, :seq_len]
""",
    "a_class_with_a_cache_per_length": """
class CausalMask:
    def __init__(self):
        self.made = {}

    def __call__(self, seq_len):
        if seq_len not in self.made:
            self.made[seq_len] = torch.tril(torch.ones(seq_len, seq_len)) == 0
        return self.made[seq_len]


causal_mask = CausalMask()
""",
}

LAB_WEIGHTS = {
    "fill_minus_1e9": """
def attention_weights(scores, mask):
    return torch.softmax(scores.masked_fill(mask, -1e9), dim=-1)
""",
    "fill_finfo_min_F_softmax": """
def attention_weights(scores, mask):
    return F.softmax(scores.masked_fill(mask, torch.finfo(scores.dtype).min), dim=-1)
""",
    "masked_fill_in_place_on_a_copy": """
def attention_weights(scores, mask):
    s = scores.clone()
    s.masked_fill_(mask, float("-inf"))
    return s.softmax(-1)
""",
    "torch_where": """
def attention_weights(scores, mask):
    return torch.softmax(torch.where(mask, float("-inf"), scores), dim=-1)
""",
    "float64_then_cast_back": """
def attention_weights(scores, mask):
    weights = torch.softmax(scores.double().masked_fill(mask, float("-inf")), dim=-1)
    return weights.to(scores.dtype)
""",
    # exp(-1e4) is exactly 0 in float32: unlike -100, this fill hides the future entirely.
    "fill_minus_1e4": """
def attention_weights(scores, mask):
    return torch.softmax(scores.masked_fill(mask, -1e4), dim=-1)
""",
    "masked_fill_assigned_back": """
def attention_weights(scores, mask):
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1)
""",
    # Both stay finite for large scores, as torch.softmax does.
    "softmax_by_hand_minus_the_row_max": """
def attention_weights(scores, mask):
    s = scores.masked_fill(mask, float("-inf"))
    e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)
""",
    "softmax_by_logsumexp": """
def attention_weights(scores, mask):
    s = scores.masked_fill(mask, float("-inf"))
    return torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
""",
}

LAB_ATTENTION = {
    "inline_with_in_place_fill_on_local": """
def attention(q, k, v):
    T, d_k = q.shape[-2], q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    scores.masked_fill_(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights
""",
    "composed_with_keyword_names": """
def attention(q, k, v):
    seq_len = k.shape[-2]
    scores = scaled_scores(q=q, k=k)
    weights = attention_weights(scores=scores, mask=causal_mask(seq_len))
    output = weights @ v
    return output, weights
""",
    "einsum_inline_with_tril_eq_0": """
def attention(q, k, v):
    T = q.shape[-2]
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    hidden = torch.tril(torch.ones(T, T)) == 0
    weights = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
    return torch.einsum("...qk,...kd->...qd", weights, v), weights
""",
    "float64_inline_then_cast_back": """
def attention(q, k, v):
    T = q.shape[-2]
    scores = q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.shape[-1])
    future = torch.arange(T)[None, :] > torch.arange(T)[:, None]
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return (weights @ v.double()).to(q.dtype), weights.to(q.dtype)
""",
    "mask_cache_keyed_on_T": """
_masks = {}


def attention(q, k, v):
    T = q.shape[-2]
    if T not in _masks:
        _masks[T] = causal_mask(T)
    weights = attention_weights(scaled_scores(q, k), _masks[T])
    return weights @ v, weights
""",
}

# Helpers whose parameters are not the starter's names, called by keyword: attention must still
# pass when the tutor's own helpers stand in for them.
LAB_RENAMED_HELPERS = {
    "causal_mask": """
def causal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
""",
    "attention_weights": """
def attention_weights(s, hide):
    return torch.softmax(s.masked_fill(hide, float("-inf")), dim=-1)
""",
    "attention": """
def attention(q, k, v):
    weights = attention_weights(hide=causal_mask(T=q.shape[-2]), s=scaled_scores(q, k))
    return weights @ v, weights
""",
}


# The notebook's own self-check cells, pasted under the solution (learners do this). They
# compare with PyTorch's kernel, as the notebooks do; the solution itself never calls it.
LM3_SELF_CHECK = """
torch.manual_seed(0)
B, T, d = 2, 6, 8
x = torch.randn(B, T, d)
d_k = 4
Wq, Wk, Wv = (torch.randn(d, d_k) / d ** 0.5 for _ in range(3))
out, w = causal_attention(x, Wq, Wk, Wv)
ref = F.scaled_dot_product_attention(x @ Wq, x @ Wk, x @ Wv, is_causal=True)
assert torch.allclose(out, ref, atol=1e-5)
print("self-check 1 passed: single-head causal attention matches PyTorch")
"""

LAB_SELF_CHECK = """
torch.manual_seed(7)
batch, heads, seq_len, head_dim = 1, 2, 6, 8
q = torch.randn(batch, heads, seq_len, head_dim)
k = torch.randn(batch, heads, seq_len, head_dim)
v = torch.randn(batch, heads, seq_len, head_dim)
manual, weights = attention(q, k, v)
reference = F.scaled_dot_product_attention(q, k, v, is_causal=True)
error = (manual - reference).abs().max().item()
print("maximum absolute error:", error)
assert error < 1e-5
"""


def with_self_check(lesson, check, main_guard):
    source = learner_file(lesson, {}, "import torch.nn.functional as F")
    if main_guard:
        check = "if __name__ == '__main__':\n" + "".join(
            f"    {line}\n" for line in check.strip().splitlines()
        )
    return source + "\n\n" + check


@pytest.mark.parametrize("main_guard", [False, True], ids=["module-level", "main-guard"])
@pytest.mark.parametrize(
    "lesson, check", [(LM3, LM3_SELF_CHECK), (LAB, LAB_SELF_CHECK)], ids=[LM3, LAB]
)
def test_notebook_self_check_pasted_below_passes(run, lesson, check, main_guard):
    results = run(lesson, with_self_check(lesson, check, main_guard))
    verify(results, lesson, {})


def _params(lesson, name, styles, header=""):
    return [style(f"{name}-{sid}", lesson, {name: code}, header) for sid, code in styles.items()]


STYLES = (
    _params(LM3, "causal_attention", LM3_CAUSAL, "import math\nimport torch.nn.functional as F")
    + _params(
        LM3,
        "CausalMultiHeadAttention.forward",
        LM3_FORWARD,
        "import math\nimport torch.nn.functional as F",
    )
    + _params(LM3, "CausalMultiHeadAttention.__init__", LM3_INIT)
    + _params(LM3, "expected_shapes", LM3_SHAPES)
    + _params(LAB, "scaled_scores", LAB_SCORES)
    + _params(LAB, "causal_mask", LAB_MASK)
    + _params(LAB, "attention_weights", LAB_WEIGHTS, "import torch.nn.functional as F")
    + _params(LAB, "attention", LAB_ATTENTION)
    + [style("lab-02-helpers-with-renamed-parameters-called-by-keyword", LAB, LAB_RENAMED_HELPERS)]
)


@pytest.mark.parametrize("lesson, replace, header", STYLES)
def test_correct_style_passes(run, lesson, replace, header):
    results = run(lesson, learner_file(lesson, replace, header))
    verify(results, lesson, {})


def test_all_styles_at_once(run):
    """One file per lesson mixing several of the styles above: nothing in one style upsets another."""
    lm3 = learner_file(
        LM3,
        {
            "causal_attention": LM3_CAUSAL["softmax_by_hand"],
            "CausalMultiHeadAttention.forward": LM3_FORWARD["loop_over_heads"],
            "expected_shapes": LM3_SHAPES["torch_Size_values"],
        },
        "import math\nimport torch.nn.functional as F",
    )
    lab = learner_file(
        LAB,
        {
            "scaled_scores": LAB_SCORES["einsum"],
            "causal_mask": LAB_MASK["arange_comparison"],
            "attention_weights": LAB_WEIGHTS["masked_fill_in_place_on_a_copy"],
            "attention": LAB_ATTENTION["composed_with_keyword_names"],
        },
    )
    for lesson, source in ((LM3, lm3), (LAB, lab)):
        results = run(lesson, source)
        verify(results, lesson, {})
        assert set(results) == set(CHECKED_STEPS[lesson])
