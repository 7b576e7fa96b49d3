"""A memory experiment on a learner's attention layer: the (…, T, T) scores it builds, by
formula and as measured on its own layer, at the settings the app sends (a step's lesson.toml
declares heads, batch, range and dtype; score_memory.py holds the parts)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from tutor.kit.judge_tools import Verdict
from tutor.kit.score_memory import (
    DTYPES,
    chosen_settings,
    measure_score_memory,
    memory_view,
    seq_lens,
)


def memory_settings(defaults: Mapping[str, Any], params: Mapping[str, Any] | None) -> dict:
    """The settings a run uses: defaults (lesson.toml's), then the app's; a dtype torch has."""
    return chosen_settings(defaults, params, {"dtype": DTYPES})


def probe_layer_memory(
    ctx: Any,
    name: str,
    defaults: Mapping[str, Any],
    build: Callable[[Any, int, int, int], torch.nn.Module],
    *,
    limit: int,
    budget: float,
) -> dict:
    """In a probe: the largest (…, T, T) tensor the learner's class `name` builds at each T of
    the settings' range (measure_score_memory, with limit and budget), each layer made by
    build(cls, width, heads, T) at width 4·heads (the head width does not change the size of
    the scores). The formula's columns need no class: a missing or unfinished one only leaves
    the measured column empty (so no primary call, and a missing class is no failure)."""
    s = memory_settings(defaults, ctx.params)
    try:
        cls = ctx.get(name)
    except Exception:  # the harness's NameMissing, ForeignCode: nothing of the learner's
        return {"settings": s, "measured": []}
    heads, batch = int(s["heads"]), int(s["batch"])
    width = 4 * heads
    measured = measure_score_memory(
        ctx,
        lambda T: build(cls, width, heads, T),
        seq_lens(*map(int, s["range"])),
        width=width,
        batch=batch,
        dtype=DTYPES[s["dtype"]],
        count=lambda T: batch * heads * T * T,
        limit=limit,
        budget=budget,
    )
    return {"settings": s, "measured": [[t, b] for t, b in measured.items()]}


def judge_layer_memory(
    v: Verdict, outputs: Mapping[str, Any], defaults: Mapping[str, Any], *, layer: str
) -> None:
    """probe_layer_memory's outputs as the step's view (memory_view, layer naming the class);
    an experiment: no verdict but "runs"."""
    settings = memory_settings(defaults, outputs["settings"])
    measured = {t: b for t, b in outputs["measured"]}
    v.visuals["view"] = memory_view(settings, measured, layer=layer)
    v.expect("runs", True)
