"""Issue #12, the "other sizes" diagnosis and wrong code in float64, for lm3-l3: wrong files
that must not pass, each with the step that must fail, the check, and the catalog keys of its
message.

A failure at a size past the notebook's must say what differs there (d_in against d_out, a
number written in only when the source has one), and a diagnosis must not crash on float64.
As in test_wrong_implementations.py, each file is the reference with one piece replaced, and
every step not listed must pass. Each of these failed on the checks before issue #12: the
message named another cause (or none), or the judge crashed (float64).
"""

from __future__ import annotations

import pytest

from worker_kit import REFERENCE, Exp, learner_file, verify

LM3 = "lm3-l3"
LITERAL = "likely.literal"


def case(case_id, lesson, replace, expect, header=""):
    return pytest.param(lesson, replace, header, expect, id=case_id)


def fails(check, *keys, absent=()):
    return Exp("fail", check, keys, absent=absent)


def other_sizes(*keys, absent=()):
    return fails("other-sizes", "check.other_sizes", *keys, absent=absent)


CA_FLOAT64_NO_MASK = {"causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    x, Wq, Wk, Wv = x.double(), Wq.double(), Wk.double(), Wv.double()
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    weights = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
    return weights @ v, weights
"""}

CA_HARDCODED_SCALE_2 = {"causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / 2
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return weights @ v, weights
"""}

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
    return {"CausalMultiHeadAttention.forward": _FORWARD.format(**{
        "hd": "self.head_dim", "scale": "hd", "merged": "self.d_out", **parts})}


MH_HEAD_DIM_FROM_X = fwd(hd="C // H")
MH_MERGED_TO_C = fwd(merged="C")
MH_SCALE_FROM_X = fwd(scale="(x.shape[-1] // H)")
MH_HARDCODED_VIEW = {"CausalMultiHeadAttention.forward": """
def forward(self, x):
    q = self.W_q(x).view(2, 6, 2, 4).transpose(1, 2)
    k = self.W_k(x).view(2, 6, 2, 4).transpose(1, 2)
    v = self.W_v(x).view(2, 6, 2, 4).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / 4 ** 0.5
    scores = scores.masked_fill(self.mask[:6, :6], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    return self.out_proj((weights @ v).transpose(1, 2).contiguous().view(2, 6, 8))
"""}

FLOAT64_CASES = [
    case("single_head_in_float64_without_a_mask", LM3, CA_FLOAT64_NO_MASK, {
        "single-head": fails("future-is-zero", "check.future", "likely.no_mask"),
        "leakage": fails("no-leak", "check.leak", "likely.leak")}),
]

SIZES_CASES = [
    # d_in where d_out or head_dim is needed (equal in the notebook: 8 and 8).
    case("multi_head_dim_from_the_width_of_x", LM3, MH_HEAD_DIM_FROM_X, {
        "multi-head": other_sizes("likely.width_d_in", absent=(LITERAL,))}),
    case("multi_merge_to_the_width_of_x", LM3, MH_MERGED_TO_C, {
        "multi-head": other_sizes("likely.width_d_in", absent=(LITERAL,))}),
    case("multi_scale_from_the_width_of_x", LM3, MH_SCALE_FROM_X, {
        "multi-head": other_sizes("check.values", "likely.width_d_in", absent=(LITERAL,))}),
    # A number written in: named, with its line.
    case("single_head_divides_by_2_names_the_root_of_d_k", LM3, CA_HARDCODED_SCALE_2, {
        "single-head": other_sizes("check.values", LITERAL)}),
    case("multi_view_2_6_2_4_names_the_literal", LM3, MH_HARDCODED_VIEW, {
        "multi-head": other_sizes("check.raised", LITERAL)}),
]


ALL = FLOAT64_CASES + SIZES_CASES


@pytest.mark.parametrize("lesson, replace, header, expect", ALL)
def test_wrong_file_is_caught_and_named(run, lesson, replace, header, expect):
    source = learner_file(lesson, replace, header)
    assert source != REFERENCE[lesson]
    verify(run(lesson, source), lesson, expect)
