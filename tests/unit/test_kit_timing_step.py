"""The kit's timing step (tutor.kit.timing_step): a timing experiment declared as data, its
settings read from what the app sends (ints in range only), timed in the child and drawn by
the judge with the settings, the formulas and the rows."""

from __future__ import annotations

import types

from tutor.kit import (
    TimingStep,
    Verdict,
    judge_timing_step,
    msg,
    probe_timing_step,
    timing_settings,
)
from tutor.kit.probe_tools import ProbeContext

SPEC = TimingStep(
    defaults={"n_max": 16, "scale": 1},
    lengths=lambda s: [n for n in (4, 8, 16, 32) if n <= s["n_max"]],
    build=lambda ctx, s, n: [s["scale"]] * n,
    data=lambda s: lambda n: (n,),
    ways=lambda ctx: [lambda obj, n: sum(obj), lambda obj, n: sorted(obj * n)],
    too_big=lambda s, n: n * s["scale"] > 8,
    formulas=lambda s, n: [str(n), str(n * s["scale"])],
    columns=("visual.a", "visual.b", "visual.c", "visual.d"),
    title="visual.title",
    settings_note=lambda s: msg("visual.settings", **s),
    waiting="visual.waiting",
    after="visual.after",
    budget=5.0,
    visual="sums",
)


def context(params) -> ProbeContext:
    ctx = ProbeContext(types.ModuleType("learner"), "learner.py", "", None)
    ctx.params = params
    return ctx


def test_the_settings_are_the_defaults_with_what_the_app_sent_in_range():
    assert timing_settings(SPEC, None) == {"n_max": 16, "scale": 1}
    assert timing_settings(SPEC, {"n_max": 8, "scale": True, "other": 3}) == {
        "n_max": 8,
        "scale": 1,
    }


def test_the_probe_times_each_length_at_the_sent_settings_until_too_big():
    out = probe_timing_step(context({"n_max": 32, "scale": 2}), SPEC)
    assert out["settings"] == {"n_max": 32, "scale": 2}
    assert [row[0] for row in out["measured"]] == [4]  # 8 · 2 is past too_big
    assert all(isinstance(ms, float) for ms in out["measured"][0][1:])


def test_the_judge_draws_the_view_with_the_settings_and_keeps_the_rows():
    out = probe_timing_step(context({}), SPEC)
    v = Verdict()
    judge_timing_step(v, out, SPEC)
    assert v.passed() and [c.id for c in v.checks] == ["runs"]
    view = v.visuals["view"]
    assert view[0]["text"] == msg("visual.title")
    assert view[1]["text"] == msg("visual.settings", n_max=16, scale=1)
    table = next(item for item in view if item["kind"] == "table")
    assert [row[:2] for row in table["rows"]][:2] == [["4", "4"], ["8", "8"]]
    assert v.visuals["sums"] == {"settings": out["settings"], "measured": out["measured"]}
    assert view[-1]["text"] == msg("visual.after")


def test_a_forged_settings_value_is_read_as_the_defaults():
    v = Verdict()
    judge_timing_step(v, {"settings": "no", "measured": []}, SPEC)
    assert v.visuals["view"][1]["text"] == msg("visual.settings", n_max=16, scale=1)


def test_a_timing_step_spec_runs_the_probe_and_the_judge():
    from tutor.kit import timing_step_spec

    step = timing_step_spec(SPEC, ("f",))
    assert step.functions == ("f",) and step.own_formula is None
    out = step.probe(context({"n_max": 8}), {})
    assert [row[0] for row in out["measured"]] == [4, 8]
    v = Verdict()
    step.judge(v, out, {}, None)
    assert v.passed() and v.visuals["sums"]["settings"] == {"n_max": 8, "scale": 1}
