"""The multi-head layer is judged as it is used: built by keyword in train mode, with dropout,
trained for one step, called again on other lengths and with new weights.

Here: the correct styles, which must pass every step. The wrong layers (each the reference with
the layer's forward or constructor changed, every one of which passed before these checks) are
the lesson's mistakes (lessons/lm3-l3/mistakes.toml, run by test_lesson_mistakes.py).
"""

from __future__ import annotations

import pytest
from worker_kit import learner_file, verify

LM3 = "lm3-l3"

HEAD = """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd**0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
"""
TAIL = """
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
"""


def fwd(middle: str, head: str = HEAD, tail: str = TAIL) -> dict:
    """A forward made of the reference's start, `middle` (which sets weights), and its end."""
    body = "\n".join(
        "    " + line if line.strip() else line for line in middle.strip("\n").splitlines()
    )
    return {
        "CausalMultiHeadAttention.forward": head.strip("\n") + "\n" + body + "\n" + tail.strip("\n")
    }


CORRECT = {
    "dropout_per_head": fwd("""
probs = torch.softmax(scores, dim=-1)
weights = torch.stack([self.dropout(probs[:, h]) for h in range(H)], dim=1)
"""),
    "dropout_functional": fwd(
        "weights = F.dropout(torch.softmax(scores, dim=-1), self.dropout.p, self.training)"
    ),
    "dropout_functional_keywords": fwd(
        "weights = F.dropout(torch.softmax(scores, dim=-1), p=self.dropout.p, training=self.training)"
    ),
    "dropout_in_place": fwd("""
weights = torch.softmax(scores, dim=-1)
weights = F.dropout(weights, self.dropout.p, self.training, inplace=False)
"""),
    "per_head_loop": {
        "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    hd = self.head_dim
    q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
    heads = []
    for h in range(self.n_heads):
        cols = slice(h * hd, (h + 1) * hd)
        s = q[..., cols] @ k[..., cols].transpose(-2, -1) / hd ** 0.5
        s = s.masked_fill(self.mask[:T, :T], float("-inf"))
        heads.append(self.dropout(torch.softmax(s, dim=-1)) @ v[..., cols])
    return self.out_proj(torch.cat(heads, dim=-1))
"""
    },
    "scripted_softmax_helper": {
        "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q, k, v = (p(x).view(B, T, H, hd).transpose(1, 2) for p in (self.W_q, self.W_k, self.W_v))
    weights = self.dropout(_masked_softmax(q @ k.transpose(2, 3) / hd ** 0.5, self.mask[:T, :T]))
    return self.out_proj((weights @ v).transpose(1, 2).reshape(B, T, self.d_out))
"""
    },
    "einsum_no_transpose": {
        "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q, k, v = (p(x).view(B, T, H, hd) for p in (self.W_q, self.W_k, self.W_v))
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / hd ** 0.5
    weights = self.dropout(torch.softmax(scores.masked_fill(self.mask[:T, :T], float("-inf")), dim=-1))
    return self.out_proj(torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(B, T, self.d_out))
"""
    },
    "mask_large_negative_float64": fwd("""
weights = self.dropout(torch.softmax(scores.double(), dim=-1).float())
"""),
}


SCRIPTED_HELPER = """
import torch
import torch.nn.functional as F


@torch.jit.script
def _masked_softmax(scores: torch.Tensor, future: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
"""


@pytest.mark.parametrize("replace", list(CORRECT.values()), ids=list(CORRECT))
def test_correct_layer_passes(run, replace):
    results = run(LM3, learner_file(LM3, replace, SCRIPTED_HELPER))
    verify(results, LM3, {})


# ------------------------------------------------------------------ single head and shapes

CA_HEAD = """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
"""


def ca(body: str, prelude: str = "") -> dict:
    lines = "\n".join(
        "    " + line if line.strip() else line for line in body.strip("\n").splitlines()
    )
    return {"causal_attention": prelude + CA_HEAD.strip("\n") + "\n" + lines}


def test_a_memo_keyed_on_the_values_is_correct(run):
    # Keyed on every value: a key on x.sum() alone is a wrong memo (two inputs with one sum
    # share an entry), which the leakage map's one-token changes now catch.
    replace = ca(
        """
key = (x.detach().numpy().tobytes(), Wq.detach().numpy().tobytes(), tuple(x.shape))
if key not in _memo:
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    _memo[key] = (weights @ v, weights)
return _memo[key]
""",
        "_memo = {}\n\n\n",
    )
    verify(run(LM3, learner_file(LM3, replace)), LM3, {})
