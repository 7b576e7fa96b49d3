"""A timing experiment step, declared as data: the settings the app sends (lesson.toml's
[[steps.settings]], with their defaults), the lengths to time, the object built at each, its
inputs, the ways to time on it, the formulas beside the times, and the view's texts. The probe
half (probe_timing_step) reads the settings and times the ways (timing_experiment's
probe_timings); the judge half (judge_timing_step) draws timing_view and keeps the data for
the app. A lesson writes a TimingStep and makes it a step with timing_step_spec."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tutor.kit.cost_table import int_settings
from tutor.kit.judge_tools import Verdict, msg
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.spec import StepSpec
from tutor.kit.timing_experiment import probe_timings, timing_view

Settings = dict[str, int]


@dataclass(frozen=True)
class TimingStep:
    """What a timing experiment is, in the lesson's terms; every callable gets the settings."""

    defaults: Mapping[str, int]  # the settings lesson.toml declares, and their defaults
    lengths: Callable[[Settings], list[int]]  # the lengths to time, in order
    build: Callable[[ProbeContext, Settings, int], Any]  # in the child: the object at length n
    data: Callable[[Settings], Callable[[int], tuple]]  # made once a run: n -> the inputs
    ways: Callable[[ProbeContext], Sequence[Callable[..., Any]]]  # each way(obj, *inputs)
    too_big: Callable[[Settings, int], bool]  # past the budget: shown by its formula alone
    formulas: Callable[[Settings, int], list]  # the row's first cells at length n
    columns: Sequence[str]  # message keys: the formulas' headers, then the two ways'
    title: str  # message key
    settings_note: Callable[[Settings], dict]  # the message that says the settings
    waiting: str  # message key: while nothing is measured
    after: str  # message key: the closing note
    budget: float  # seconds of measuring, within the step's time limit
    name: str = "n"  # the lengths' name in the notes
    visual: str = "timing"  # where the settings and the rows go in the verdict's visuals


def timing_settings(spec: TimingStep, params: Mapping | None) -> Settings:
    """spec's defaults with what the app sent (int_settings: ints in range only)."""
    return int_settings(dict(spec.defaults), dict(params or {}))


def probe_timing_step(ctx: ProbeContext, spec: TimingStep) -> dict:
    """In the child: {"settings", "measured"}, the rows probe_timings gives at ctx.params."""
    s = timing_settings(spec, ctx.params)
    measured = probe_timings(
        ctx,
        spec.lengths(s),
        lambda n: spec.build(ctx, s, n),
        spec.data(s),
        spec.ways(ctx),
        budget=spec.budget,
        too_big=lambda n: spec.too_big(s, n),
    )
    return {"settings": s, "measured": measured}


def judge_timing_step(v: Verdict, outputs: Mapping[str, Any], spec: TimingStep) -> None:
    """The view of probe_timing_step's rows (timing_view), in visuals["view"], and the
    settings and rows in visuals[spec.visual]; the step runs (an experiment has no verdict)."""
    sent = outputs.get("settings")
    s = timing_settings(spec, sent if isinstance(sent, Mapping) else None)
    v.visuals["view"] = timing_view(
        msg(spec.title),
        spec.settings_note(s),
        [msg(key) for key in spec.columns],
        spec.lengths(s),
        outputs["measured"],
        lambda n: spec.formulas(s, n),
        name=spec.name,
        too_big=lambda n: spec.too_big(s, n),
        budget=spec.budget,
        waiting_text=msg(spec.waiting),
        after=msg(spec.after),
    )
    v.visuals[spec.visual] = {"settings": outputs["settings"], "measured": outputs["measured"]}
    v.expect("runs", True)


def timing_step_spec(spec: TimingStep, functions: tuple[str, ...]) -> StepSpec:
    """The lesson's step for spec: probe_timing_step and judge_timing_step, exercising the
    learner's functions."""
    return StepSpec(
        lambda ctx, inputs: probe_timing_step(ctx, spec),
        lambda v, outputs, inputs, jctx: judge_timing_step(v, outputs, spec),
        functions,
    )
