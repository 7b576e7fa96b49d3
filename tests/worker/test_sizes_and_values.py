"""Issue #25: sizes up to the context length and past the notebooks' small ones, and inputs a
thousand times larger. Each wrong file is right at every size and value the steps tried before,
wrong past them; each passed the step named before these sizes and values were judged.
"""

from __future__ import annotations

import pytest
from worker_kit import Exp, learner_file, verify

LM3, LAB, KV = "lm3-l3", "lab-02", "kv-cache"

MULTI = """
    def forward(self, x):
        B, T, _ = x.shape
        H, hd = self.n_heads, self.head_dim
{head}
        q, k, v = (p(x).view(B, T, H, hd).transpose(1, 2) for p in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(2, 3) / hd**0.5
        scores = scores.masked_fill({mask}, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        return self.out_proj((weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out))
"""


def multi(head="        pass", mask="self.mask[:T, :T]") -> dict:
    return {"CausalMultiHeadAttention.forward": MULTI.format(head=head, mask=mask)}


SINGLE = """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[-2]
{body}
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights
"""


def single(body: str) -> dict:
    return {"causal_attention": SINGLE.format(body=body)}


OTHER = Exp("fail", "other-sizes", {"check.other_sizes"})
LARGE = Exp("fail", "large-inputs", {"check.large_inputs", "likely.large_inputs"})

CASES = [
    pytest.param(
        LM3,
        multi(
            head="        hide = self.mask[:T, :T] if T <= 40 else torch.zeros(T, T, dtype=torch.bool)",
            mask="hide",
        ),
        {"multi-head": OTHER},
        id="multi: no mask past T = 40",
    ),
    pytest.param(
        LM3,
        multi(mask="torch.triu(torch.ones(48, 48, dtype=torch.bool), diagonal=1)[:T, :T]"),
        {"multi-head": OTHER},
        id="multi: a mask made for 48 and sliced",
    ),
    pytest.param(
        LM3,
        single("    if T > 40:\n        scores = scores / T**0.5"),
        {"single-head": OTHER},
        id="single: another scale past T = 40",
    ),
    pytest.param(
        LM3,
        multi(head="        x = x.clamp(-100, 100)"),
        {"multi-head": LARGE},
        id="multi: the input clamped",
    ),
    pytest.param(
        LM3,
        single("    v = v.clamp(-100, 100)"),
        {"single-head": LARGE},
        id="single: the values clamped",
    ),
    pytest.param(
        LAB,
        {
            "attention": """
def attention(q, k, v):
    v = v.clamp(-100, 100)
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return weights @ v, weights
"""
        },
        {"output": LARGE},
        id="lab-02: v clamped",
    ),
    pytest.param(
        KV,
        {
            "CausalMultiHeadAttention.forward_cached": """
    def forward_cached(self, x, cache=None):
        x = x.clamp(-100, 100)
        B = x.shape[0]
        H, hd = self.n_heads, self.head_dim
        q, k, v = (p(x).view(B, 1, H, hd).transpose(1, 2) for p in (self.W_q, self.W_k, self.W_v))
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        weights = self.dropout(torch.softmax(q @ k.transpose(2, 3) / hd**0.5, dim=-1))
        out = self.out_proj((weights @ v).transpose(1, 2).contiguous().view(B, 1, self.d_out))
        return out, (k, v)
"""
        },
        {"cached-attention": LARGE},
        id="kv-cache: the new token clamped",
    ),
]


@pytest.mark.parametrize("lesson, replace, expect", CASES)
def test_wrong_past_the_small_sizes_and_values_fails(run, lesson, replace, expect):
    verify(run(lesson, learner_file(lesson, replace)), lesson, expect)
