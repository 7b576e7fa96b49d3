"""The kit's "(out, weights) function" property (tutor.kit.pair_function), declared for a
function of the test's own: sliding-window attention, whose weights hide two regions (the
causal future and the keys past the window). A right function passes both steps; each wrong
one fails the check that its mistake breaks."""

from __future__ import annotations

import contextlib
import dataclasses
import types

import pytest
import torch

from tutor.kit import (
    PAIR_FUNCTION_ROLES,
    PairFunction,
    Region,
    Stop,
    Verdict,
    causal_future,
    judge_pair_function,
    judge_pair_leakage,
    large_scores_factor,
    masked_softmax,
    msg,
    probe_pair_function,
    probe_pair_leakage,
)
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.spec import JudgeContext

WINDOW = 3

SOURCE = """
import torch

WINDOW = 3


def hidden(T, window=WINDOW):
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    return (j > i) | (j <= i - window)


def attend(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    w = torch.softmax(scores.masked_fill(hidden(x.shape[1]), float("-inf")), dim=-1)
    return w @ v, w


def no_window(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    w = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return w @ v, w


def unmasked(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    w = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
    return w @ v, w


_memo = {}


def memo_on_shape(x, Wq, Wk, Wv):
    if x.shape not in _memo:
        _memo[x.shape] = attend(x, Wq, Wk, Wv)
    return _memo[x.shape]


def out_only(x, Wq, Wk, Wv):
    return attend(x, Wq, Wk, Wv)[0]
"""

SIZES = [(2, 6, 8, 4), (1, 9, 5, 3), (3, 2, 4, 4)]


def window_region(T: int) -> Region:
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    return Region(msg("lesson.window"), j <= i - WINDOW, "window-is-zero")


def regions(T: int) -> list:
    return [causal_future(T), window_region(T)]


def hidden(T: int) -> torch.Tensor:
    return regions(T)[0].hidden | regions(T)[1].hidden


def reference(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    w = masked_softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, hidden(x.shape[1]))
    return w @ v, w


SPEC = PairFunction(
    name="attend",
    arg_names=("x", "Wq", "Wk", "Wv"),
    sizes=SIZES,
    size_names=("B", "T", "d_in", "d_k"),
    reference=reference,
    diagnose=lambda w, *args: msg("likely.unknown"),
    keys={role: f"lesson.{role}" for role in PAIR_FUNCTION_ROLES},
    trained=(1, 2, 3),
    leak_map_max_t=6,
    regions=regions,
)


def case(g: torch.Generator, size: tuple) -> dict:
    B, T, d, dk = size
    x = torch.randn(B, T, d, generator=g)
    W = tuple(torch.randn(d, dk, generator=g) / d**0.5 for _ in range(3))
    moved = []
    for pos in (T - 1, T // 2):
        changed = x.clone()
        changed[:, pos] = torch.randn(B, d, generator=g) * 3
        moved.append(changed)
    leak = torch.randn(B, d, generator=g) * 3
    return {"args": (x, *W), "x_last": moved[0], "x_mid": moved[1], "leak": leak}


def inputs() -> dict:
    g = torch.Generator().manual_seed(11)
    cases = [case(g, size) for size in SIZES]
    x, Wq, Wk, Wv = cases[0]["args"]
    again = case(g, SIZES[0])["args"]
    scores = (x @ Wq) @ (x @ Wk).transpose(-2, -1) / Wq.shape[1] ** 0.5
    stretch = large_scores_factor(scores.masked_fill(hidden(x.shape[1]), 0.0))
    large = {"args": (x, Wq * stretch, Wk, Wv), "scores": scores * stretch}
    g_out = torch.randn(SIZES[0][0], SIZES[0][1], SIZES[0][3], generator=g)
    large_x = (x * 1000, Wq / 1000, Wk / 1000, Wv)
    return {
        "cases": cases,
        "again": again,
        "large": large,
        "large_x": large_x,
        "g": g_out,
        "view_delta": cases[0]["leak"],
    }


INPUTS = inputs()


def judged(name: str, step: str, views: bool = False, **declared) -> Verdict:
    module = types.ModuleType("learner")
    exec(compile(SOURCE, "learner.py", "exec"), module.__dict__)
    ctx = ProbeContext(module, "learner.py", SOURCE, None)
    ctx.views = views
    spec = dataclasses.replace(SPEC, name=name, **declared)
    probe, judge = {
        "values": (probe_pair_function, judge_pair_function),
        "leakage": (probe_pair_leakage, judge_pair_leakage),
    }[step]
    outputs = probe(ctx, spec, INPUTS)
    v = Verdict(SOURCE)
    with contextlib.suppress(Stop):
        judge(v, spec, outputs, INPUTS, JudgeContext(SOURCE, [], views))
    return v


def first_failure(v: Verdict) -> str | None:
    bad = [c.id for c in v.checks if c.status == "fail"]
    return bad[0] if bad else None


@pytest.mark.parametrize("step", ["values", "leakage"])
def test_a_right_function_passes_both_steps_with_every_region_judged(step):
    v = judged("attend", step)
    assert v.passed(), v.failed_message()
    ids = {c.id for c in v.checks}
    if step == "values":
        assert {"future-is-zero", "window-is-zero", "matches-pytorch", "call-again"} <= ids
        assert {"large-scores", "large-inputs", "trains", "own-formula"} <= ids
    else:
        assert {"no-leak", "call-again"} <= ids


@pytest.mark.parametrize(
    ("name", "step", "check"),
    [
        ("no_window", "values", "window-is-zero"),
        ("unmasked", "values", "future-is-zero"),
        ("memo_on_shape", "values", "call-again"),
        ("out_only", "values", "returns"),
        ("unmasked", "leakage", "no-leak"),
        ("no_window", "leakage", "no-leak"),
        ("memo_on_shape", "leakage", "call-again"),
    ],
)
def test_a_wrong_function_fails_the_check_its_mistake_breaks(name, step, check):
    assert first_failure(judged(name, step)) == check


def test_the_views_draw_each_sequences_weights_and_the_leakage_map():
    v = judged("attend", "values", views=True)
    panels = v.visuals["heatmaps"]
    assert len(panels) == SIZES[0][0] + 1  # one per sequence, then the map
    assert panels[0]["label"] == msg("lesson.batch_label", n=0)
    v = judged("attend", "leakage", views=True)
    assert len(v.visuals["heatmaps"]) == 1 and "leak" not in v.visuals


def test_the_leakage_figure_is_the_learners_beside_the_broken_versions():
    def no_mask(x, Wq, Wk, Wv):
        q, k, v = x @ Wq, x @ Wk, x @ Wv
        return torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, -1) @ v

    right = judged("attend", "leakage", views=True, broken=no_mask).visuals["leak"]
    assert right["yours"] == 0.0 and right["unmasked"] > 1e-3 and not right["leaks"]
    # A function that leaks fails the step, and gets the figure too: it is whom it helps most.
    wrong = judged("unmasked", "leakage", views=True, broken=no_mask)
    assert first_failure(wrong) == "no-leak"
    leak = wrong.visuals["leak"]
    assert leak["leaks"] and leak["yours"] == pytest.approx(leak["unmasked"])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_figure_says_what_a_leak_means_when_the_function_leaks(lang):
    from test_message_lines import drawn_lines

    from tutor.model.results import StepResult
    from tutor.render.verdicts import step_results
    from tutor.text.i18n import t

    def shown(leak: dict) -> str:
        result = StepResult("leakage", "fail", [], visuals={"leak": leak})
        return "".join(drawn_lines(step_results(result, lang))).replace(" ", "")

    def said(key: str, yours: str) -> str:
        return t(key, lang, yours=yours, unmasked="0.4200").replace(" ", "")

    leaks = shown({"yours": 0.42, "unmasked": 0.42, "leaks": True})
    assert said("ui.leak_demo_leaks", "0.4200") in leaks
    right = shown({"yours": 0.0, "unmasked": 0.42, "leaks": False})
    assert said("ui.leak_demo", "0") in right
