"""A string that names a kernel is not a call of it (issue #12): a profiler label, a log line,
a dict key. The static scan of the step's definitions reads names and attributes only; a kernel
reached through a string (getattr with a literal or a built name, eval) is caught when it runs,
by the traps (probe_kit), whatever the string looks like."""

from __future__ import annotations

import pytest
from worker_kit import Exp, learner_file, verify

LM3, LAB = "lm3-l3", "lab-02"

NAMED_ONLY = {
    "record-function-label": (
        LM3,
        {
            "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    with torch.profiler.record_function("scaled_dot_product_attention"):
        q, k, v = x @ Wq, x @ Wk, x @ Wv
        scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
        T = x.shape[-2]
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        return weights @ v, weights
"""
        },
        "",
    ),
    "record-function-label-in-forward": (
        LM3,
        {
            "CausalMultiHeadAttention.forward": """
def forward(self, x):
    with torch.profiler.record_function("nn.MultiheadAttention"):
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
"""
        },
        "",
    ),
    "log-lines-and-a-dict-key": (
        LAB,
        {
            "attention": """
def attention(q, k, v):
    log.debug("scaled_dot_product_attention")
    log.debug("multi_head_attention_forward")
    timings = {"flex_attention": 0.0, "F.scaled_dot_product_attention": 0.0}
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return weights @ v, weights
"""
        },
        "import logging\nlog = logging.getLogger('mine')",
    ),
}


@pytest.mark.parametrize("case", list(NAMED_ONLY))
def test_a_string_naming_a_kernel_passes(run, case):
    lesson, replace, header = NAMED_ONLY[case]
    verify(run(lesson, learner_file(lesson, replace, header)), lesson, {})


KERNEL = Exp("fail", "own-formula", {"check.kernel"})

REACHED_BY_A_STRING = {
    "getattr-F-literal": (
        LAB,
        {
            "attention": """
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return getattr(F, "scaled_dot_product_attention")(q, k, v, is_causal=True), weights
"""
        },
        "import torch.nn.functional as F",
        {"output": KERNEL},
    ),
    "getattr-aten-literal": (
        LAB,
        {
            "attention": """
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return getattr(torch.ops.aten, "scaled_dot_product_attention")(q, k, v, is_causal=True), weights
"""
        },
        "",
        {"output": KERNEL},
    ),
    "module-dict-lookup": (
        LAB,
        {
            "attention": """
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return vars(F)["scaled_dot_product_attention"](q, k, v, is_causal=True), weights
"""
        },
        "import torch.nn.functional as F",
        {"output": KERNEL},
    ),
    "eval-of-a-string": (
        LM3,
        {
            "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    T = x.shape[-2]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax((q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5).masked_fill(future, float("-inf")), -1)
    return eval("torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)"), weights
"""
        },
        "",
        {"single-head": KERNEL},
    ),  # leakage judges only the leak
}


@pytest.mark.parametrize("case", list(REACHED_BY_A_STRING))
def test_a_kernel_reached_through_a_string_still_fails(run, case):
    lesson, replace, header, expect = REACHED_BY_A_STRING[case]
    results = run(lesson, learner_file(lesson, replace, header))
    verify(results, lesson, expect)
    for step in expect:
        kernels = [
            c.message.params["kernel"] for c in results[step].checks if c.id == "own-formula"
        ]
        assert kernels == ["F.scaled_dot_product_attention"], kernels
