"""The kit's shape trace: a forward's ops with their shapes, and the view that cuts a wrong
layer's trace at the first shape the lab's route never makes; a right layer on another route
is not marked."""

from __future__ import annotations

import torch

from tutor.kit import ShapeTrace, trace_parting, trace_view, traced_forward

B, T, H, hd = 2, 5, 3, 4
LAB = [
    ("view", (B, T, H, hd)),
    ("transpose(1, 2)", (B, H, T, hd)),
    ("k.transpose", (B, H, hd, T)),
    ("q @ kᵀ", (B, H, T, T)),
]
WORDS = {w: f"ui.{w}" for w in ("none", "step", "op", "shape", "parts", "same", "other_route")}


def split(x, transpose=True):
    q = x.view(B, T, H, hd)
    q = q.transpose(1, 2) if transpose else q
    return q @ q.transpose(-2, -1)


def test_the_trace_names_operators_and_skips_questions():
    with ShapeTrace() as trace:
        x = torch.randn(B, T, H * hd)
        x.size()
        split(x)
    assert [op for op, _ in trace.ops][-4:] == ["view", "transpose", "transpose", "@"]
    assert trace.ops[-1][1] == [B, H, T, T]
    assert traced_forward(lambda x: x.exp(), torch.zeros(2)) == [["exp", [2]]]


def test_a_wrong_route_parts_where_the_lab_never_goes():
    x = torch.randn(B, T, H * hd)
    ops = traced_forward(lambda x: split(x, transpose=False), x)
    i, expected, made = trace_parting(ops, LAB)
    assert ops[i][1] == [B, T, H, hd] or tuple(ops[i][1]) not in {s for _, s in LAB}
    assert (expected, made) == ("transpose(1, 2)", (B, H, T, hd))
    view = trace_view(ops, LAB, wrong=True, title={"key": "t"}, words=WORDS)
    assert view[-1]["text"]["key"] == "ui.parts" and view[1]["rows"][-1][3] == "✗"


def test_a_right_layer_on_its_own_route_is_not_marked():
    ops = traced_forward(lambda x: split(x, transpose=False), torch.randn(B, T, H * hd))
    view = trace_view(ops, LAB, wrong=False, title={"key": "t"}, words=WORDS)
    assert view[-1]["text"]["key"] == "ui.other_route"
    assert not any(r[3] for r in view[1]["rows"])
    same = traced_forward(split, torch.randn(B, T, H * hd))
    assert (
        trace_view(same, LAB, wrong=False, title={"key": "t"}, words=WORDS)[-1]["text"]["key"]
        == "ui.same"
    )
    assert (
        trace_view(None, LAB, wrong=True, title={"key": "t"}, words=WORDS)[0]["kind"] == "waiting"
    )


def test_without_words_the_view_says_it_in_the_engines():
    from tutor.kit import TRACE_KEYS
    from tutor.text.i18n import engine_catalog

    for lang in ("en", "zh"):
        assert set(TRACE_KEYS.values()) <= set(engine_catalog(lang))
    ops = traced_forward(lambda x: split(x, transpose=False), torch.randn(B, T, H * hd))
    view = trace_view(ops, LAB, wrong=True, title={"key": "t"})
    assert view[-1]["text"]["key"] == "ui.trace_parts"
    assert trace_view(None, LAB, wrong=True, title={"key": "t"})[0]["text"]["key"] == (
        "ui.trace_none"
    )
