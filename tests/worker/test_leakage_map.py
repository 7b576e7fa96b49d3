"""The leakage map: each token changed in turn, how far every output moved. Zero above the
diagonal for a causal layer; a leak lights up at the very cell that leaks."""

from __future__ import annotations

import pytest
from worker_kit import REFERENCE, learner_file

from tutor.text.i18n import local_key

LM3 = "lm3-l3"
# The mask built one row too short: query i also sees key i + 1.
MASK_OFF_BY_ONE = {
    "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    T = x.shape[1]
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=2)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights
"""
}
# The layer's mask sliced from the wrong end: row i sees the future of the last tokens.
MULTI_NO_MASK = {
    "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    w = self.dropout(torch.softmax(q @ k.transpose(2, 3) / hd ** 0.5, dim=-1))
    return self.out_proj((w @ v).transpose(1, 2).contiguous().view(B, T, self.d_out))
"""
}


def leak_map(result):
    maps = [
        e
        for e in result.visuals.get("heatmaps", [])
        if local_key(e["label"]["key"]) == "visual.leak_map"
    ]
    assert len(maps) == 1, result.visuals.get("heatmaps")
    return maps[0]


def above(matrix):
    return [matrix[i][j] for i in range(len(matrix)) for j in range(i + 1, len(matrix))]


@pytest.mark.parametrize("step", ["single-head", "leakage", "multi-head"])
def test_a_causal_layer_moves_nothing_above_the_diagonal(run, step):
    entry = leak_map(run(LM3, REFERENCE[LM3])[step])
    mine, ref = entry["learner"], entry["reference"]
    assert mine is not None and len(mine) == len(ref) == 6
    assert all(x == 0 for x in above(mine)) and all(x == 0 for x in above(ref))
    assert max(max(r) for r in mine) == pytest.approx(1.0, abs=1e-3)  # on the reference's scale
    assert all(mine[i][i] > 0 for i in range(6))  # each token moves its own output


@pytest.mark.parametrize("step", ["single-head", "leakage"])
def test_a_mask_one_off_lights_up_the_cells_just_above_the_diagonal(run, step):
    mine = leak_map(run(LM3, learner_file(LM3, MASK_OFF_BY_ONE))[step])["learner"]
    leaks = {(i, j) for i in range(6) for j in range(i + 1, 6) if mine[i][j] > 1e-6}
    assert leaks == {(i, i + 1) for i in range(5)}, mine


def test_a_layer_without_a_mask_leaks_everywhere_above_the_diagonal(run):
    mine = leak_map(run(LM3, learner_file(LM3, MULTI_NO_MASK))["multi-head"])["learner"]
    assert all(x > 1e-6 for x in above(mine)), mine
