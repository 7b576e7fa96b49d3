"""Issue #25: the kit's properties, judged where the lessons' own checks looked at a few
places only. Each file is the reference with one piece replaced; every step not listed must
pass. Each wrong file here passed the step named before the property existed.

- Leakage over every position (judge_leak_map): a query that sees a future token early in
  the sequence, where the leakage check's two changed tokens (the last, the middle) never look.
  The multi-head form failed before on its values alone; it is now named as the leak it is.
- Module state before and after forward (state_unchanged): keys, dtypes, shapes and values of
  parameters and buffers, whatever forward does to them.
"""

from __future__ import annotations

import pytest
from worker_kit import Exp, learner_file, verify

LM3 = "lm3-l3"


def fails(check, *keys):
    return Exp("fail", check, keys)


def ca(body: str) -> dict:
    return {
        "causal_attention": f"""
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[-2]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
{body}
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights
"""
    }


# The first query sees the second token.
CA_FIRST_SEES_NEXT = ca("    if T > 1:\n        future[0, 1] = False")
# Off by one for the queries before the middle but one: they see the next token.
CA_EARLY_OFF_BY_ONE = ca(
    "    early = max(T // 2 - 1, 0)\n"
    "    future[:early] = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=2)[:early]"
)

FORWARD = """
    def forward(self, x):
        B, T, _ = x.shape
        H, hd = self.n_heads, self.head_dim
        q, k, v = (p(x).view(B, T, H, hd).transpose(1, 2) for p in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(2, 3) / hd**0.5
{before}
        scores = scores.masked_fill({mask}, float("-inf"))
        w = self.dropout(torch.softmax(scores, dim=-1))
        return self.out_proj((w @ v).transpose(1, 2).contiguous().view(B, T, self.d_out))
"""


def fwd(before: str = "", mask: str = "self.mask[:T, :T]") -> dict:
    return {"CausalMultiHeadAttention.forward": FORWARD.format(before=before, mask=mask)}


LEAK_REGION = fails("no-leak", "check.leak_region", "region.future")

LEAK_CASES = [
    pytest.param(
        CA_FIRST_SEES_NEXT,
        {"single-head": Exp("fail"), "leakage": LEAK_REGION},
        id="single: the first query sees the next token",
    ),
    pytest.param(
        CA_EARLY_OFF_BY_ONE,
        {"single-head": Exp("fail"), "leakage": LEAK_REGION},
        id="single: early queries off by one",
    ),
    pytest.param(
        fwd(
            "        hide = self.mask[:T, :T].clone()\n        if T > 2:\n            hide[1, 2] = False",
            "hide",
        ),
        {"multi-head": LEAK_REGION},
        id="multi: the second query sees the third token",
    ),
]


@pytest.mark.parametrize("replace, expect", LEAK_CASES)
def test_leakage_over_every_position(run, replace, expect):
    verify(run(LM3, learner_file(LM3, replace)), LM3, expect)


# =================================================================== module state

STATE_KEYS = fails("state-unchanged", "check.module_state_keys", "likely.module_state")
STATE_ENTRY = fails("state-unchanged", "check.module_state_entry", "likely.module_state")

STATE_CASES = [
    pytest.param(
        fwd('        self.register_buffer("calls", torch.ones(()))'),
        STATE_KEYS,
        id="a buffer registered in forward",
    ),
    pytest.param(
        fwd('        self.register_buffer("keys_seen", k.detach(), persistent=False)'),
        STATE_KEYS,
        id="a non-persistent buffer kept in forward",
    ),
    pytest.param(
        fwd(
            "        if self.mask.dtype == torch.bool:\n"
            "            self.mask = torch.zeros(self.mask.shape).masked_fill(self.mask, -1e9)\n"
            "        scores = scores + self.mask[:T, :T]",
            "torch.zeros(T, T, dtype=torch.bool)",
        ),
        STATE_ENTRY,
        id="the bool mask made an additive float one",
    ),
    pytest.param(
        fwd(
            "        self.mask = self.mask.to(torch.uint8)",
            "self.mask[:T, :T].bool()",
        ),
        STATE_ENTRY,
        id="the mask cast to uint8",
    ),
]


@pytest.mark.parametrize("replace, expect", STATE_CASES)
def test_forward_leaves_the_module_state_as_it_was(run, replace, expect):
    verify(run(LM3, learner_file(LM3, replace)), LM3, {"multi-head": expect})


# =================================================================== dropout, whatever the layout

SEQ_FIRST = """
    def forward(self, x):
        B, T, _ = x.shape
        H, hd = self.n_heads, self.head_dim
        q, k, v = (p(x).view(B, T, H, hd) for p in (self.W_q, self.W_k, self.W_v))
        scores = torch.einsum("bihd,bjhd->ijbh", q, k) / hd**0.5  # [T_q, T_k, B, H]
        hidden = self.mask[:T, :T].unsqueeze(-1).unsqueeze(-1)
        w = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=1)
        w = {dropped}
        ctx = torch.einsum("ijbh,bjhd->bihd", w, v).reshape(B, T, self.d_out)
        return self.out_proj(ctx)
"""


def seq_first(dropped: str) -> dict:
    return {"CausalMultiHeadAttention.forward": SEQ_FIRST.format(dropped=dropped)}


@pytest.mark.parametrize(
    "replace, expect",
    [
        # Right: failed "dropout" before, the fixed pattern being keyed on the last two axes.
        pytest.param(seq_first("self.dropout(w)"), {}, id="right: weights as [T_q, T_k, B, H]"),
        pytest.param(
            seq_first("self.dropout(self.dropout(w))"),
            {"multi-head": fails("dropout", "check.layer_dropout_train")},
            id="wrong: dropout twice, in that layout",
        ),
    ],
)
def test_dropout_is_judged_by_what_it_acts_on(run, replace, expect):
    verify(run(LM3, learner_file(LM3, replace)), LM3, expect)


# =================================================================== kv-cache: the call, however made

KV = "kv-cache"


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(
            """
def generate(layer, x):
    step = type(layer).forward_cached
    cache, outs = None, []
    for t in range(x.shape[1]):
        out, cache = step(layer, x[:, t : t + 1], cache)
        outs.append(out)
    return torch.cat(outs, dim=1), cache
""",
            id="through the class",
        ),
        pytest.param(
            """
def generate(layer, x):
    cache, outs = None, []
    for token in x.split(1, dim=1):
        out, cache = layer.__class__.forward_cached(layer, token, cache=cache)
        outs.append(out)
    return torch.cat(outs, dim=1), cache
""",
            id="through __class__, by keyword",
        ),
    ],
)
def test_forward_cached_called_through_the_class_passes(run, code):
    """Right, and failed before: the recorder was an instance attribute ("called 0 times")."""
    verify(run(KV, learner_file(KV, {"generate": code})), KV, {})
