"""The shape trace of the multi-head step: the learner's forward op by op, at sizes where every
dimension is a different number; a wrong layer is cut at the first shape the lab's never makes,
with what the lab does next. A right layer on another route is not marked."""

from __future__ import annotations

from worker_kit import REFERENCE, learner_file

from tutor.text.i18n import local_key

LM3 = "lm3-l3"
NO_HEAD_TRANSPOSE = {
    "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd)
    k = self.W_k(x).view(B, T, H, hd)
    v = self.W_v(x).view(B, T, H, hd)
    w = self.dropout(torch.softmax(q @ k.transpose(2, 3) / hd ** 0.5, dim=-1))
    return self.out_proj((w @ v).contiguous().view(B, T, self.d_out))
"""
}
LOOP_OVER_HEADS = {
    "CausalMultiHeadAttention.forward": """
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
"""
}


def trace(result) -> tuple[list, dict]:
    view = result.visuals["view"]
    table = next(item for item in view if item["kind"] == "table")
    note = view[-1]
    assert note["kind"] == "note"
    return table["rows"], {"key": local_key(note["text"]["key"]), **note["text"]["params"]}


def test_the_reference_makes_only_the_labs_shapes(run):
    rows, said = trace(run(LM3, REFERENCE[LM3])["multi-head"])
    assert said["key"] == "ui.trace_same" and not any(r[3] for r in rows)
    assert [r[2] for r in rows[:3]] == [
        "(2, 5, 12)",
        "(2, 5, 3, 4)",
        "(2, 3, 5, 4)",
    ]  # B, T, H, head_dim apart
    assert rows[-1][2] == "(2, 5, 12)" and len(rows) >= 15


def test_a_missing_transpose_is_cut_where_it_parts_with_what_comes_next(run):
    result = run(LM3, learner_file(LM3, NO_HEAD_TRANSPOSE))["multi-head"]
    assert result.status == "fail"
    rows, said = trace(result)
    assert rows[-1][3] == "✗" and sum(bool(r[3]) for r in rows) == 1
    assert said["key"] == "ui.trace_parts"
    assert (said["before"], said["shape"], said["expected"]) == (
        "(2, 5, 3, 4)",
        "(2, 5, 4, 3)",
        "transpose(1, 2)",
    )


def test_a_right_layer_on_another_route_is_not_marked(run):
    result = run(LM3, learner_file(LM3, LOOP_OVER_HEADS))["multi-head"]
    assert result.status == "pass"
    rows, said = trace(result)
    assert said["key"] == "ui.trace_other_route" and not any(r[3] for r in rows)
