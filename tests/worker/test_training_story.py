"""Issue #25: the training story (kit.training), one property for every layer a model trains.

A layer is called as a training loop calls it: under torch.no_grad() first (an evaluation
loop), then with gradients and backward, an optimiser step in place, called again on the same
objects, and once more after `x.mul_(2)`. Each wrong file below is the reference with one
piece replaced; each passed the steps named before the story existed, except where a comment
says it failed there already (then only its message is new).
"""

from __future__ import annotations

import pytest
from worker_kit import Exp, learner_file, verify

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


# The projections' transposes, kept from the first call: made under torch.no_grad() in an
# evaluation loop, they carry no graph, and the layer never trains again. Their values follow
# every in-place update (they are views), so each call's output is right.
FIRST_CALL_CACHE = fwd(
    head=(
        '        if not hasattr(self, "_wt"):\n'
        "            self._wt = [p.weight.t() for p in (self.W_q, self.W_k, self.W_v)]"
    ),
    proj="(x @ self._wt[i])",
)
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
# The same memo for inference calls only (under no_grad): stale once the caller changes its
# input in place, as `x.mul_(2)` does, the identity being the same.
INFERENCE_MEMO = {
    name: code.replace("[0] is x:", "[0] is x and not torch.is_grad_enabled():")
    for name, code in SAME_INPUT_CACHE.items()
}
# In-place dropout on the softmax's output, which backward needs: raises in train mode with
# dropout > 0 (with the notebook's dropout 0 nothing is dropped, so nothing is written).
INPLACE_DROPOUT = fwd(
    weights="F.dropout(torch.softmax(scores, dim=-1), self.dropout.p, self.training, inplace=True)"
)

WRONG = [
    pytest.param(
        FIRST_CALL_CACHE,
        Exp("fail", "trains", {"check.story_no_grad", "story.train", "likely.story_first_call"}),
        id="a cache built under the first call's no_grad",
    ),
    pytest.param(
        SAME_INPUT_CACHE,
        Exp("fail", "trains", {"check.story_raised", "story.again", "likely.story_stale_graph"}),
        id="the output cached on the input's identity",
    ),
    pytest.param(
        INFERENCE_MEMO,
        Exp("fail", "trains", {"check.story_values", "story.input", "likely.story_stale"}),
        id="an inference memo on the input's identity",
    ),
    pytest.param(
        INPLACE_DROPOUT,
        Exp("fail", "trains", {"check.story_raised", "story.train", "likely.story_inplace"}),
        id="in-place dropout on the softmax output",
    ),
]


@pytest.mark.parametrize("replace, expect", WRONG)
def test_a_layer_that_breaks_training_fails(run, replace, expect):
    verify(
        run(LM3, learner_file(LM3, replace, "import torch.nn.functional as F")),
        LM3,
        {"multi-head": expect},
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

# The result kept for the same q: after `q.mul_(2)` (or a step on k and v) it is stale.
LAB_SAME_Q = {
    "attention": """
_memo = {}


def attention(q, k, v):
    if _memo.get("q") is q:
        return _memo["out"]
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    _memo["q"], _memo["out"] = q, (weights @ v, weights)
    return _memo["out"]
"""
}
# The same memo for inference calls only: stale after `q.mul_(2)` under no_grad.
LAB_INFERENCE_MEMO = {
    "attention": LAB_SAME_Q["attention"].replace(
        'if _memo.get("q") is q:', 'if _memo.get("q") is q and not torch.is_grad_enabled():'
    )
}


@pytest.mark.parametrize(
    "replace, expect",
    [
        pytest.param(
            LAB_INFERENCE_MEMO,
            Exp("fail", "trains", {"check.story_values", "story.input", "likely.story_stale"}),
            id="an inference memo on q's identity",
        ),
        pytest.param(
            LAB_SAME_Q,
            Exp("fail", "trains", {"check.story_values", "story.again", "likely.story_stale"}),
            id="the output memoised on q's identity",
        ),
    ],
)
def test_lab02_attention_that_breaks_training_fails(run, replace, expect):
    verify(run(LAB, learner_file(LAB, replace)), LAB, {"output": expect})


# =================================================================== lm3-l3: causal_attention

# Wq's product with x kept from the first call (under no_grad): Wq never gets its gradient,
# and after an optimiser step on Wq the queries are stale.
CA_FIRST_CALL = {
    "causal_attention": """
_kept = {}


def causal_attention(x, Wq, Wk, Wv):
    if _kept.get("x") is not x:
        _kept["x"], _kept["q"] = x, x @ Wq
    q, k, v = _kept["q"], x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[-2]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights
"""
}


def test_single_head_queries_kept_for_the_same_x_fail(run):
    verify(run(LM3, learner_file(LM3, CA_FIRST_CALL)), LM3, {"single-head": Exp("fail", "trains")})


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


# F.dropout's training defaults to True: it fires in eval mode, which generation runs in.
KV_DROPOUT_IN_EVAL = step(weights="F.dropout(torch.softmax(scores, dim=-1), self.dropout.p)")
# The layer keeps its own copy of the cache and trusts it over the one it is given when the
# lengths agree: right for one sequence at a time, wrong when two are generated in turn.
KV_OWN_COPY = step(
    before=(
        "        mine = getattr(self, '_kv', None)\n"
        "        if cache is not None and mine is not None and mine[0].shape == cache[0].shape:\n"
        "            cache = mine"
    ),
    after="        self._kv = (k, v)",
)
# A memo keyed on the call's shape (the cache's length), emptied for each new sequence: hit
# by the other sequence's step of the same length.
KV_SHAPE_MEMO = step(
    before=(
        "        if cache is None or not hasattr(self, '_memo'):\n"
        "            self._memo = {}\n"
        "        key = (tuple(x.shape), 0 if cache is None else cache[0].shape[2])\n"
        "        if key in self._memo:\n"
        "            return self._memo[key]"
    ),
    after="        self._memo[key] = out, (k, v)",
)


@pytest.mark.parametrize(
    "replace, expect",
    [
        pytest.param(
            KV_DROPOUT_IN_EVAL,
            {
                "cache-discipline": Exp(
                    "fail", "dropout", {"check.eval_dropout", "likely.story_dropout_eval"}
                )
            },
            id="dropout in eval",
        ),
        pytest.param(
            KV_OWN_COPY,
            {"cache-discipline": Exp("fail", "call-again", {"check.interleaved"})},
            id="its own copy of the cache",
        ),
        # Failed before too: two tokens from one cache (the beam-search check) hit the memo.
        pytest.param(
            KV_SHAPE_MEMO,
            {"cache-discipline": Exp("fail", "call-again", {"check.branch"})},
            id="a memo keyed on the shape",
        ),
    ],
)
def test_kv_layer_wrong_across_sequences_fails(run, replace, expect):
    verify(run(KV, learner_file(KV, replace, "import torch.nn.functional as F")), KV, expect)


def test_kv_layer_right_with_dropout_passes(run):
    verify(run(KV, learner_file(KV, step())), KV, {})
