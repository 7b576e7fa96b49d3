"""The kit's views of a function that returns (out, weights): the notebook's printouts of a
call, and an experiment step that draws the weights per head, or the reference's and why."""

from __future__ import annotations

import contextlib
import types

import torch

from tutor.kit import Verdict, pair_printout, weights_heatmap_step
from tutor.kit.judge_tools import Stop
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.spec import JudgeContext


def causal(T: int) -> torch.Tensor:
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def attend(q, k, v):
    w = torch.softmax((q @ k.transpose(-2, -1)).masked_fill(causal(q.shape[-2]), -torch.inf), -1)
    return w @ v, w


QKV = tuple(torch.randn(1, 2, 4, 3, generator=torch.Generator().manual_seed(0)) for _ in range(3))


def test_the_printout_says_the_shape_the_row_sums_and_the_error():
    out, w = attend(*QKV)
    view = pair_printout({"value": (out + 1e-3, w)}, out, "visual.t", "visual.l", "visual.v")
    rows = view[1]["rows"]
    assert rows[0] == ["weights:", "(1, 2, 4, 4)"] and rows[1][0] == "row sums:"
    assert rows[-1] == ["maximum absolute error:", "1.0e-03"]
    halves = pair_printout({"value": (out, w / 2)}, out, "visual.t", "visual.l", "visual.v")
    assert [r[0]["key"] for r in halves[1]["rows"][1:3]] == ["visual.row_sums_head"] * 2
    assert pair_printout({"value": out}, out, "visual.t", "visual.l", "visual.v") == []


def heatmap_verdict(source: str) -> Verdict:
    module = types.ModuleType("learner")
    exec(compile(source, "learner.py", "exec"), module.__dict__)
    step = weights_heatmap_step(
        "attend", lambda i: i["qkv"], lambda i: attend(*i["qkv"])[1], "visual.h", "likely.u"
    )
    outputs = step.probe(ProbeContext(module, "learner.py", source, None), {"qkv": QKV})
    v = Verdict(source)
    with contextlib.suppress(Stop):
        step.judge(v, outputs, {"qkv": QKV}, JudgeContext(source, []))
    return v


PAIR = "def attend(q, k, v):\n    w = (q @ k.transpose(-2, -1)).softmax(-1)\n    return w @ v, w\n"


def test_the_heatmap_draws_the_learners_weights_or_the_references_and_says_why():
    mine = heatmap_verdict(PAIR)
    ref = attend(*QKV)[1]
    drawn = mine.visuals["view"][0]["items"][0]["matrix"]
    assert mine.passed() and drawn[0][-1] != 0.0  # the learner's (unmasked) weights
    only_out = heatmap_verdict(PAIR.replace("return w @ v, w", "return w @ v"))
    drawn = only_out.visuals["view"][0]["items"][0]["matrix"]
    assert not only_out.passed() and drawn[0][-1] == round(float(ref[0, 0, 0, -1]), 4)
    assert only_out.failed_message()["key"] == "check.returns_pair"
