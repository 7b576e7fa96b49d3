"""Issue #25: the training story (kit.training), one property for every layer a model trains.

A layer is called as a training loop calls it: under torch.no_grad() first (an evaluation
loop), then with gradients and backward, an optimiser step in place, called again on the same
objects, and once more after `x.mul_(2)`. Each wrong file below is the reference with one
piece replaced; each passed the steps named before the story existed, except where a comment
says it failed there already (then only its message is new).
"""

from __future__ import annotations

import pytest
from worker_kit import learner_file, verify

LM3 = "lm3-l3"
LAB = "lab-02"
KV = "kv-cache"

FORWARD = """
    def forward(self, x):
        B, T, _ = x.shape
        H, hd = self.n_heads, self.head_dim
{head}
        q, k, v = ({proj}.view(B, T, H, hd).transpose(1, 2) for i in range(3))
        scores = q @ k.transpose(2, 3) / hd**0.5
        scores = scores.masked_fill({mask}, float("-inf"))
        weights = {weights}
        return self.out_proj((weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out))
"""
PROJ = "(self.W_q, self.W_k, self.W_v)[i](x)"
DROPOUT = "self.dropout(torch.softmax(scores, dim=-1))"


def fwd(head="", proj=PROJ, mask="self.mask[:T, :T]", weights=DROPOUT) -> dict:
    code = FORWARD.format(head=head or "        pass", proj=proj, mask=mask, weights=weights)
    return {"CausalMultiHeadAttention.forward": code}


# The output kept for the very same input object: once called with gradients again on it,
# its graph is spent (backward raises), and after an optimiser step its values are stale.
SAME_INPUT_CACHE = fwd(
    head='        if getattr(self, "_seen", (None,))[0] is x:\n            return self._seen[1]'
)
SAME_INPUT_CACHE["CausalMultiHeadAttention.forward"] = SAME_INPUT_CACHE[
    "CausalMultiHeadAttention.forward"
].replace("        return self.out_proj(", "        self._seen = x, self.out_proj(") + (
    "        return self._seen[1]\n"
)


RIGHT = [
    pytest.param(
        fwd(
            head=(
                '        if T not in getattr(self, "_masks", {}):\n'
                "            self._masks = {**getattr(self, '_masks', {}), T: self.mask[:T, :T].clone()}"
            ),
            mask="self._masks[T]",
        ),
        id="a mask cached per length (it needs no gradient)",
    ),
    pytest.param(
        fwd(weights="F.dropout(torch.softmax(scores, dim=-1), self.dropout.p, self.training)"),
        id="functional dropout, out of place",
    ),
    pytest.param(
        fwd(
            head=(
                "        with torch.no_grad():\n"
                "            hidden = torch.ones(T, T, dtype=torch.bool).triu(1)"
            ),
            mask="hidden",
        ),
        id="the mask built under no_grad in forward",
    ),
]


@pytest.mark.parametrize("replace", RIGHT)
def test_a_layer_that_trains_passes(run, replace):
    verify(run(LM3, learner_file(LM3, replace, "import torch.nn.functional as F")), LM3, {})


# =================================================================== lab-02: attention(q, k, v)


# =================================================================== lm3-l3: causal_attention


# =================================================================== kv-cache: the layer as generation uses it

STEP = """
    def forward_cached(self, x, cache=None):
        B = x.shape[0]
        H, hd = self.n_heads, self.head_dim
        q, k, v = (p(x).view(B, 1, H, hd).transpose(1, 2) for p in (self.W_q, self.W_k, self.W_v))
{before}
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
{kv}
        weights = {weights}
        out = self.out_proj((weights @ v).transpose(1, 2).contiguous().view(B, 1, self.d_out))
{after}
        return out, (k, v)
"""


def step(before="", kv="", weights=DROPOUT, after="") -> dict:
    code = STEP.format(
        before=before or "        pass", kv=kv or "        pass", weights=weights, after=after
    ).replace("{weights}", weights)
    return {
        "CausalMultiHeadAttention.forward_cached": code.replace(
            "scores, dim", "q @ k.transpose(2, 3) / hd**0.5, dim"
        )
    }


def test_kv_layer_right_with_dropout_passes(run):
    verify(run(KV, learner_file(KV, step())), KV, {})
