"""The kit's exercises: a learner's variant of one function run in place of the original, and
a view that says whether it is the change asked for, shows what changed, and shows the answer
only once the change is right."""

from __future__ import annotations

import types

import pytest
import torch

from tutor.kit import (
    Exercise,
    entropy_sweep_view,
    head_variant_view,
    mask_variant_view,
    probe_entropy_sweep,
    probe_head_variant,
    probe_mask_variant,
    variant_said,
)
from tutor.kit.probe_tools import ProbeContext

TEXTS = ("visual.exa_task", "visual.exa_unchanged", "visual.exa_other", "visual.exa_why")
MASK_TEXTS = (*TEXTS, "visual.exa_shape", "visual.exa_heatmap", "visual.exa_no_nan")
MASK_TEXTS += ("visual.exa_nan", "visual.exa_nan_rows")
HEAD_TEXTS = (*TEXTS, "visual.exa_heads", "visual.exa_bad_return", "visual.exa_waiting")
HEAD_TEXTS += ("visual.exa_head", "visual.exa_before", "visual.exa_after")


def no_scale(q, k):
    return q @ k.transpose(-2, -1)


def diagonal_too(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=0)


def future(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def weights(scores, mask):
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)


def keys(node) -> list[str]:
    """The endings of the exercise's keys in a view, in order."""
    if isinstance(node, dict):
        key = node.get("key")
        own = [key.removeprefix("visual.exa_")] if str(key).startswith("visual.exa_") else []
        return own + [k for value in node.values() for k in keys(value)]
    if isinstance(node, list):
        return [k for item in node for k in keys(item)]
    return []


def answered(view) -> bool:
    return any(item["kind"] == "after_answer" for item in view)


def test_a_text_is_found_by_its_ending_and_a_missing_one_is_named():
    ex = Exercise(1, "ex", no_scale, MASK_TEXTS)
    assert ex.key("nan") == "visual.exa_nan" and ex.key("no_nan") == "visual.exa_no_nan"
    with pytest.raises(KeyError, match="_bad_return"):
        ex.key("bad_return")


def test_the_variant_is_the_change_asked_for_the_original_or_another():
    ex, x = Exercise(1, "ex", no_scale, TEXTS), torch.ones(3)
    assert variant_said(ex, [x * 2], [x * 2], [x]) == (True, [])
    right, said = variant_said(ex, [x], [x * 2], [x])
    assert not right and keys(said) == ["unchanged"]
    right, said = variant_said(ex, [x * 5], [x * 2], [x], lambda: {"n": 5})
    assert not right and keys(said) == ["other"] and said[0]["text"]["params"] == {"n": 5}


SOURCE = """
import math


def scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def same(q, k):
    return scores(q, k)


def no_scale(q, k):
    return q @ k.transpose(-2, -1)
"""


def sweep(variant: str) -> list:
    module = types.ModuleType("learner")
    exec(compile(SOURCE, "learner.py", "exec"), module.__dict__)
    ctx = ProbeContext(module, "learner.py", SOURCE, None)
    ex, g = Exercise(1, "no_scale", no_scale, TEXTS), torch.Generator().manual_seed(0)
    qk = lambda hd: tuple(torch.randn(1, 1, 8, hd, generator=g) for _ in range(2))  # noqa: E731
    fn = ctx.get(variant)
    rows = probe_entropy_sweep(ctx, ex, ctx.get("scores"), fn, weights, [8, 256], qk, future(8))
    return entropy_sweep_view(ex, rows, [], "weights", ["d", "a", "", "b", ""], T=8)


def test_an_entropy_sweep_answers_only_the_change_asked_for():
    right, unchanged = sweep("no_scale"), sweep("same")
    assert answered(right) and "unchanged" not in keys(right)
    assert not answered(unchanged) and "unchanged" in keys(unchanged)
    table = right[0]["items"][1]
    assert [r[0] for r in table["rows"]] == ["8", "256"]
    # Without the scale the softmax saturates: the entropy falls as head_dim grows.
    assert float(table["rows"][1][3]) < float(table["rows"][1][1])


def mask_view(m, w) -> list:
    ex = Exercise(2, "ex_mask", diagonal_too, MASK_TEXTS)
    probed = {"mask": {"value": m}, "weights": {"value": w}}
    return mask_variant_view(ex, [], probed, future(4), "weights")


def test_a_mask_variant_shows_its_weights_and_the_rows_left_with_nothing():
    scores = torch.randn(1, 1, 4, 4)
    view = mask_view(diagonal_too(4), weights(scores, diagonal_too(4)))
    assert answered(view) and "nan" in keys(view)
    # Right mask, but weights with no -inf: no NaN row, so no answer and a note why.
    view = mask_view(diagonal_too(4), weights(scores, diagonal_too(4)).nan_to_num(0.25))
    assert not answered(view) and "no_nan" in keys(view)
    view = mask_view(future(4), weights(scores, future(4)))
    assert not answered(view) and "unchanged" in keys(view)
    view = mask_view(torch.ones(4, 3, dtype=torch.bool), None)
    assert keys(view) == ["task", "shape"]


def head_view(new_q: torch.Tensor) -> list:
    q = torch.randn(1, 2, 5, 4)
    k, v = torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    new_q = new_q if new_q.dim() < 4 else q * new_q

    def attend(q):
        w = weights(q @ k.transpose(-2, -1), future(5))
        return {"value": (w @ v, w)}

    ex = Exercise(3, "ex_q", lambda q: q, HEAD_TEXTS)
    after = attend(new_q) if new_q.dim() == 4 else {"value": None}
    probed = {"x": {"value": new_q}, "before": attend(q), "after": after}
    return head_variant_view(ex, [], q, probed, "attend")


def test_a_head_variant_answers_once_one_head_alone_changed():
    one = head_view(torch.tensor([4.0, 1.0]).view(1, 2, 1, 1))
    assert answered(one) and one[1]["items"][0]["text"]["params"] == {"h": 0, "other": 1}
    both = head_view(torch.full((1, 2, 1, 1), 3.0))
    assert not answered(both) and "heads" in keys(both)
    none = head_view(torch.ones(1, 2, 1, 1))
    assert not answered(none) and "unchanged" in keys(none) and "before" not in keys(none)
    assert "bad_return" in keys(head_view(torch.ones(3)))


LEARNER = """
import torch


def diagonal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=0)


def weights(scores, mask):
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)


def attend(q, k, v):
    w = weights(q @ k.transpose(-2, -1), torch.triu(torch.ones(4, 4, dtype=torch.bool), 1))
    return w @ v, w


def first_head_twice(q):
    return torch.cat([q[:, :1] * 2, q[:, 1:]], dim=1)
"""


def test_the_probe_halves_feed_their_views():
    module = types.ModuleType("learner")
    exec(compile(LEARNER, "learner.py", "exec"), module.__dict__)
    ctx = ProbeContext(module, "learner.py", LEARNER, None)
    probed = probe_mask_variant(
        ctx, ctx.get("diagonal_mask"), ctx.get("weights"), 4, torch.randn(1, 1, 4, 4)
    )
    ex = Exercise(2, "diagonal_mask", diagonal_too, MASK_TEXTS)
    assert answered(mask_variant_view(ex, [], probed, future(4), "weights"))
    q, k, v = (torch.randn(1, 2, 4, 3) for _ in range(3))
    probed = probe_head_variant(ctx, ctx.get("first_head_twice"), ctx.get("attend"), q, k, v)
    ex = Exercise(3, "first_head_twice", lambda q: q, HEAD_TEXTS)
    assert answered(head_variant_view(ex, [], q, probed, "attend"))
    raised = probe_mask_variant(ctx, ctx.get("diagonal_mask"), ctx.get("weights"), -1, None)
    assert "error" in raised["mask"] and raised["weights"] is raised["mask"]
