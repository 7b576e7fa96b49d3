"""Views of a function that returns (out, weights), as attention functions do: the notebook's
printouts of a call (the weights' shape, their row sums, the output's largest error), and an
experiment step that draws the weights, one heatmap per head."""

from __future__ import annotations

from collections.abc import Callable

import torch

from tutor.kit.experiments import head_maps, pair_weights, row_sums_rows
from tutor.kit.judge_tools import Verdict, describe, msg, shape_str
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.spec import JudgeContext, StepSpec
from tutor.model.view_items import heading, table


def pair_printout(call: dict, expected: torch.Tensor, title: str, line: str, value: str) -> list:
    """What a notebook prints after calling the function, from the learner's call: the weights'
    shape, their row sums (row_sums_rows) and the largest absolute difference of out from
    expected (where out has its shape), as a table under the heading title, its columns line
    and value (the lesson's message keys); [] where the call gave no weights."""
    w = pair_weights(call)
    if w is None:
        return []
    rows = [["weights:", shape_str(w.shape)], *row_sums_rows(w)]
    out = call["value"][0]
    if isinstance(out, torch.Tensor) and out.shape == expected.shape:
        error = (out.double() - expected.double()).abs().max().item()
        rows.append(["maximum absolute error:", f"{error:.1e}"])
    columns = [msg(line), msg(value)]
    return [heading(msg(title)), table(columns, rows, align=["left", "left"])]


def weights_heatmap_step(
    fn: str,
    args: Callable[[dict], tuple],
    reference: Callable[[dict], torch.Tensor],
    title: str,
    usual: str,
) -> StepSpec:
    """An experiment step: fn on args(inputs) (the primary call), its weights drawn as one
    heatmap per head of batch element 0 (title {h}, the lesson's key), the reference's
    (reference(inputs), (B, H, T, T)) where the learner's cannot be; then the check returns
    (check.returns_pair, usual the lesson's likely mistake) says why."""

    def probe(ctx: ProbeContext, inputs: dict) -> dict:
        return {"call": ctx.call(ctx.get(fn), *args(inputs), primary=True)}

    def judge(v: Verdict, outputs: dict, inputs: dict, jctx: JudgeContext) -> None:
        ref = reference(inputs)
        w = pair_weights(outputs["call"], ref.shape)
        shown = w if w is not None else ref
        v.visuals["view"] = [head_maps(shown, lambda h: msg(title, h=h))]
        got = describe(outputs["call"].get("value"))
        v.expect("returns", w is not None, "check.returns_pair", fn=fn, got=got, likely=msg(usual))

    return StepSpec(probe, judge, (fn,))
