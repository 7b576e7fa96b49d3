"""The kit's "attention layer as a model uses it" property (tutor.kit.layer_use), declared for a
layer of the test's own (not a built-in lesson's: its constructor takes the heads last, under
another name): a right layer passes every check, and each wrong one fails the check that its
mistake breaks, worded with the lesson's key for the role."""

from __future__ import annotations

import contextlib
import dataclasses
import types

import pytest
import torch

from tutor.kit import (
    LAYER_USE_ROLES,
    LayerUse,
    Stop,
    Verdict,
    draw_layer_case,
    fixed_dropout,
    judge_layer_memory,
    judge_layer_use,
    matching_mistake,
    msg,
    multi_head_mistakes,
    probe_layer_memory,
    probe_layer_use,
    unless_discarded,
)
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.spec import JudgeContext

SOURCE = """
import torch


class Attention(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, heads, dropout=0.0):
        super().__init__()
        self.d_out, self.heads, self.head_dim = d_out, heads, d_out // heads
        self.W_q = torch.nn.Linear(d_in, d_out, bias=False)
        self.W_k = torch.nn.Linear(d_in, d_out, bias=False)
        self.W_v = torch.nn.Linear(d_in, d_out, bias=False)
        self.out_proj = torch.nn.Linear(d_out, d_out)
        self.dropout = torch.nn.Dropout(dropout)
        mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
        self.register_buffer("mask", mask.bool())

    def weights(self, q, k, T):
        scores = q @ k.transpose(2, 3) / self.head_dim**0.5
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        return self.dropout(torch.softmax(scores, dim=-1))

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = (
            f(x).view(B, T, self.heads, self.head_dim).transpose(1, 2)
            for f in (self.W_q, self.W_k, self.W_v)
        )
        ctx = (self.weights(q, k, T) @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
        return self.out_proj(ctx)


class Unmasked(Attention):
    def weights(self, q, k, T):
        return self.dropout(torch.softmax(q @ k.transpose(2, 3) / self.head_dim**0.5, -1))


class DropoutInEval(Attention):
    def weights(self, q, k, T):
        w = super().weights(q, k, T)
        return torch.nn.functional.dropout(w, self.dropout.p, training=True)


class FourWide(Attention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.head_dim = 4


class MemoOnShape(Attention):
    def forward(self, x):
        memo = self.__dict__.setdefault("memo", {})
        if x.shape not in memo:
            memo[x.shape] = super().forward(x)
        return memo[x.shape]
"""

SIZES = [(8, 8, 16, 2, 2, 6), (6, 12, 12, 3, 1, 9), (4, 8, 4, 4, 3, 4)]
TRACE_SIZE = (4, 6, 8, 3, 1, 3)


def reference(x, w, size, p=0.0):
    B, T, _ = x.shape
    d_out, H = w["W_q"].shape[0], size[3]
    q, k, v = (
        (x @ w[n].T).view(B, T, H, d_out // H).transpose(1, 2) for n in ("W_q", "W_k", "W_v")
    )
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = (q @ k.transpose(2, 3) / (d_out // H) ** 0.5).masked_fill(future, float("-inf"))
    weights = torch.softmax(scores, -1)
    ctx = (fixed_dropout.apply(weights, p) if p else weights) @ v
    return ctx.transpose(1, 2).reshape(B, T, d_out) @ w["out_w"].T + w["out_b"], weights


SPEC = LayerUse(
    name="Attention",
    signature=[
        ["d_in", None],
        ["d_out", None],
        ["context_length", None],
        ["heads", None],
        ["dropout", 0.0],
    ],
    sizes=SIZES,
    size_names=("d_in", "d_out", "context_length", "heads", "B", "T"),
    params={
        "W_q.weight": "W_q",
        "W_k.weight": "W_k",
        "W_v.weight": "W_v",
        "out_proj.weight": "out_w",
        "out_proj.bias": "out_b",
    },
    layout=lambda s: {"W_q": (s[1], s[0]), "W_k": (s[1], s[0]), "out_proj": (s[1], s[1])},
    attrs=lambda s: {"d_out": s[1], "heads": s[3], "head_dim": s[1] // s[3]},
    buffer="mask",
    buffer_of=lambda s: torch.triu(torch.ones(s[2], s[2]), diagonal=1).bool(),
    reference=reference,
    diagnose=lambda y, x, w, size, source: matching_mistake(y, multi_head_mistakes(x, w, size[3])),
    keys={role: f"lesson.{role}" for role in LAYER_USE_ROLES},
    heads="heads",
    head_counts=(1, 2),
    first=2,
    leak_map_max_t=8,
)


def inputs() -> dict:
    g = torch.Generator().manual_seed(5)
    cases = [draw_layer_case(g, s[0], s[1], s[4], s[5]) for s in SIZES]
    for case, s in zip(cases, SIZES, strict=True):
        case["leak"] = torch.randn(s[4], s[0], generator=g) * 3
    d_in, d_out, _, _, B, T = SIZES[0]
    new_w = draw_layer_case(g, d_in, d_out, B, T)["w"]
    large = {"x": cases[0]["x"], "w": {**cases[0]["w"], "W_q": cases[0]["w"]["W_q"] * 60}}
    g_out = torch.randn(B, T, d_out, generator=g)
    delta = torch.randn(B, d_in, generator=g)
    trace_x = torch.randn(1, 3, TRACE_SIZE[0], generator=g)
    return {
        "cases": cases,
        "new_w": new_w,
        "g": g_out,
        "large": large,
        "view_delta": delta,
        "trace_x": trace_x,
    }


INPUTS = inputs()


def judged(name: str, views: bool = False, **declared) -> Verdict:
    module = types.ModuleType("learner")
    exec(compile(SOURCE, "learner.py", "exec"), module.__dict__)
    ctx = ProbeContext(module, "learner.py", SOURCE, None)
    ctx.views = views
    spec = dataclasses.replace(SPEC, name=name, **declared)
    outputs = probe_layer_use(ctx, spec, INPUTS)
    v = Verdict(SOURCE)
    with contextlib.suppress(Stop):
        judge_layer_use(v, spec, outputs, INPUTS, JudgeContext(SOURCE, [], views))
    return v


def first_failure(v: Verdict) -> tuple[str, str] | None:
    bad = [c for c in v.checks if c.status == "fail"]
    return (bad[0].id, bad[0].message.key if bad[0].message else "") if bad else None


def test_a_right_layer_passes_every_check_at_every_size():
    v = judged("Attention")
    assert first_failure(v) is None and v.passed()
    ids = {c.id for c in v.checks}
    for check in ("constructor", "no-leak", "matches-pytorch", "state-unchanged", "dropout"):
        assert check in ids
    assert {"call-again", "notebook", "trainable", "large-scores", "trains"} <= ids


@pytest.mark.parametrize(
    ("name", "check"),
    [("Unmasked", "no-leak"), ("DropoutInEval", "dropout"), ("MemoOnShape", "call-again")],
)
def test_a_wrong_layer_fails_the_check_its_mistake_breaks(name, check):
    failure = first_failure(judged(name))
    assert failure is not None and failure[0] == check


def test_a_number_of_the_labs_written_in_is_named_at_the_size_it_breaks():
    v = judged("FourWide")
    assert first_failure(v) == ("other-sizes", "check.other_sizes")
    likely = v.failed_message()["params"]["likely"]
    assert likely["key"] == "likely.literal" and likely["params"]["name"] == "head_dim"


@pytest.mark.parametrize("name", ["Attention", "Unmasked"])
def test_the_views_show_each_head_the_leakage_map_and_the_shape_trace(name):
    seen = []

    def trace_view(ops, wrong):
        seen.append((len(ops), wrong))
        return ["trace"]

    v = judged(name, views=True, trace_size=TRACE_SIZE, trace_view=trace_view)
    panels = v.visuals["heatmaps"]
    assert len(panels) == SIZES[0][3] + 1  # one per head, then the leakage map
    assert panels[0]["label"] == msg("lesson.head_label", b=0, h=0)
    # The trace's view, told whether the layer was judged wrong; the route has a softmax.
    assert v.visuals["view"] == ["trace"] and seen[0][0] > 0
    assert seen[0][1] == (name == "Unmasked") == (not v.passed())


def test_a_discarded_masked_fill_is_named_by_its_line():
    source = "def f(s, m):\n    s.masked_fill(m, 0)\n    return s\n"
    said = unless_discarded(msg("likely.no_mask"), source, "f")
    assert said["key"] == "likely.masked_fill_discarded_line" and said["params"]["line"] == 2
    other = msg("likely.scale_none")
    assert unless_discarded(other, source, "f") is other


def test_the_memory_step_measures_the_learners_layer_and_needs_no_class():
    module = types.ModuleType("learner")
    exec(compile(SOURCE, "learner.py", "exec"), module.__dict__)
    ctx = ProbeContext(module, "learner.py", SOURCE, None)
    defaults = {"heads": 2, "batch": 1, "range": [4, 16], "dtype": "float32"}
    ctx.params = {"dtype": "float64"}  # not one the step offers: the default stands
    build = lambda cls, width, heads, T: cls(width, width, T, heads)  # noqa: E731
    got = probe_layer_memory(ctx, "Attention", defaults, build, limit=1 << 20, budget=5.0)
    assert got["settings"]["dtype"] == "float32"
    # The largest (…, T, T) tensor: B · H · T · T float32 scores.
    assert got["measured"] == [[T, 2 * T * T * 4] for T in (4, 8, 16)]
    missing = probe_layer_memory(ctx, "Nowhere", defaults, build, limit=1 << 20, budget=5.0)
    assert missing["measured"] == []
    v = Verdict(SOURCE)
    judge_layer_memory(v, got, defaults, layer="Attention")
    assert v.passed() and v.visuals["view"]
