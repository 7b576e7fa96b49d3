"""An attention function returning (out, weights): one property, declared by a lesson
(PairFunction), in two steps.

- Its values (probe_pair_function, judge_pair_function): at every size of the lesson's grid,
  a pair of tensors of the reference's shapes, inputs left unchanged, weights with the named
  hidden regions (judge_attention_weights), both close to the reference; no kernel; called
  again on new values; scores past exp's range; inputs a thousand times larger; the training
  story, its weights updated in place as a layer's parameters.
- Its leakage (probe_pair_leakage, judge_pair_leakage): the notebooks' test (the last and the
  middle token changed, no earlier output moves) at every size, the leakage map over every
  hidden region up to PairFunction.leak_map_max_t, and the changed inputs' outputs right.

A case is {"args": (x, *rest)} (x the tokens, (B, T, d)); for the leakage step also "x_last"
and "x_mid" (x with its token T - 1, T // 2 changed) and "leak" (the change made to one token
at a time for the map).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

from tutor.kit.call_again import judge_called_again
from tutor.kit.experiments import pair_weights
from tutor.kit.finite import require_finite
from tutor.kit.judge_tools import (
    Verdict,
    changed_input,
    close,
    judge_leak_map,
    judged,
    large_scores_check,
    large_scores_likely,
    msg,
    of_the_inputs,
    require_pair,
    require_ran,
    require_tensor,
    size_explanation,
)
from tutor.kit.kept_references import Same
from tutor.kit.kernels import no_kernel
from tutor.kit.layer_use import unless_discarded
from tutor.kit.leak_views import (
    LEAK_TOLERANCE,
    leak_map_panel,
    moved_before,
    reference_leak_outputs,
    require_no_leak,
)
from tutor.kit.magnitude import judge_large_inputs, require_close
from tutor.kit.own_code import no_foreign
from tutor.kit.pairs import out_of_pair, pair_output, require_pair_output
from tutor.kit.panels import judge_sized_cases, weights_panels
from tutor.kit.probe_tools import probe_leak_map
from tutor.kit.regions import causal_future, judge_attention_weights
from tutor.kit.training import judge_training_story, probe_training_story

# The roles a lesson words itself (PairFunction.keys), with their placeholders: "returns_pair"
# (the likely mistake when no pair came); "again_new_x" (a value label: the output for an input
# with one token changed); "large_scores" {top} {reason} {likely}; "batch_label" {n}.
PAIR_FUNCTION_ROLES = ("returns_pair", "again_new_x", "large_scores", "batch_label")

Reference = Callable[..., tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class PairFunction:
    """A lesson's (out, weights) function, declared once for both steps.

    reference(*args) gives (out, weights (B, T, T)); may be of_the_inputs-cached (its
    __wrapped__ is then used on values made in the judge). diagnose(w, *args) names the
    mistake behind wrong weights. extra(v, w, likely), where given, is the lesson's own checks
    on the weights, judged after the hidden regions. explain(lab's size, size, source) says why
    a size past the lab's fails (by default size_explanation on the function)."""

    name: str
    arg_names: Sequence[str]  # x first
    sizes: Sequence[tuple]  # the lab's first; as judge_sized_cases labels them
    size_names: Sequence[str]
    reference: Reference
    diagnose: Callable[..., dict]
    keys: Mapping[str, str]  # PAIR_FUNCTION_ROLES -> message key
    trained: tuple[int, ...] = ()  # the args a training step updates (the weights)
    leak_map_max_t: int = 16  # the leakage map (T calls) up to this T
    extra: Callable[[Verdict, torch.Tensor, Any], None] | None = None
    # The notebook's broken version (its out, no mask), for the leakage step's figure.
    broken: Callable[..., torch.Tensor] | None = None
    explain: Callable[[Sequence, Sequence, str], dict | None] | None = None
    regions: Callable[[int], list] = lambda T: [causal_future(T)]  # noqa: E731

    @property
    def call_text(self) -> str:
        """`causal_attention(x, Wq, Wk, Wv)`: the call, as a message names it."""
        return f"{self.name}({', '.join(self.arg_names)})"

    def forward(self, *args: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """The reference, uncached: for values the judge made itself."""
        return getattr(self.reference, "__wrapped__", self.reference)(*args)

    def explained(self, lab: Sequence, size: Sequence, source: str) -> dict | None:
        """Why a size past the lab's fails: explain's answer, else size_explanation's."""
        if self.explain is not None:
            return self.explain(lab, size, source)
        return size_explanation(source, (self.name,), self.size_names, lab, size)


# ---------------------------------------------------------------- values


def probe_pair_function(ctx: Any, spec: PairFunction, inputs: Mapping[str, Any]) -> dict:
    """In the child: the function on every case (the lab's first, the primary call), once more
    on new values, on scores past exp's range, on inputs a thousand times larger, through the
    training story, and (for the views) each token changed in turn. inputs: "cases", "again"
    (args), "large" ({"args", "scores"}), "large_x" (args), "g" (the story's gradient
    direction), "view_delta" (the views' map)."""
    fn = ctx.get(spec.name)
    seed = inputs["cases"][0]["args"]
    return {
        "calls": [
            ctx.call(fn, *case["args"], primary=i == 0) for i, case in enumerate(inputs["cases"])
        ],
        "again": ctx.call(fn, *inputs["again"]),  # nothing kept from before
        "large": ctx.call(fn, *inputs["large"]["args"]),
        "large_x": ctx.call(fn, *inputs["large_x"]),
        # The weights as a layer's parameters: updated in place by the story's step; only
        # values are judged, so a function in NumPy is right here.
        "story": probe_training_story(
            ctx, fn, list(seed), inputs["g"], trained=spec.trained, pick=out_of_pair, grads=False
        ),
        "leak_map": probe_leak_map(
            ctx, fn, seed[0], inputs["view_delta"], *seed[1:], pick=out_of_pair
        )
        if ctx.views
        else None,
    }


def judge_pair_case(
    v: Verdict, call: dict, case: Mapping, size: Sequence, *, spec: PairFunction
) -> None:
    """One call: a pair of the reference's shapes, inputs unchanged, weights zero in every
    hidden region and rows summing to 1 (spec.extra's own checks next), then weights and out
    close to the reference."""
    args = case["args"]
    require_ran(v, call, spec.name)
    ref_out, ref_w = spec.reference(*args)
    out_shape, w_shape = tuple(ref_out.shape), tuple(ref_w.shape)
    usual = spec.keys["returns_pair"]
    out, w = require_pair(v, spec.name, call["value"], out_shape, w_shape, usual)
    w = require_tensor(v, "shape", "weights", w, w_shape, msg("likely.weights_shape"))
    out = require_tensor(v, "shape", "out", out, out_shape, msg("likely.out_shape"))
    # Before the values: wrong values from inputs changed in place are that mistake, not another.
    changed = changed_input(v, spec.name, list(spec.arg_names), call["args"], args)
    if changed:
        diagnose = lambda: msg("likely.mutated_input", arg=changed)  # noqa: E731
    else:
        diagnose = lambda: unless_discarded(spec.diagnose(w, *args), v.source, spec.name)  # noqa: E731
    # exp(-100) is tiny but not 0: a large negative fill instead of -inf.
    tiny = None if changed else msg("likely.fill_large_negative")
    T = w_shape[-1]
    judge_attention_weights(
        v, w, spec.regions(T), what="weights", likely=diagnose, tiny_likely=tiny
    )
    if spec.extra is not None:
        spec.extra(v, w, diagnose)
    require_close(v, "matches-pytorch", "weights", w, ref_w, likely=diagnose)
    out_likely = (
        msg("likely.mutated_input", arg=changed) if changed else msg("likely.out_not_weights_v")
    )
    require_close(v, "matches-pytorch", "out", out, ref_out, likely=out_likely)


def judge_pair_function(
    v: Verdict, spec: PairFunction, outputs: Mapping, inputs: Mapping, jctx: Any
) -> None:
    """probe_pair_function's outputs: the views first (each sequence's weights, the leakage
    map), then the lab's case, the other sizes, no kernel, called again, large scores, large
    inputs, the training story."""
    calls, seed, size = outputs["calls"], inputs["cases"][0], spec.sizes[0]
    judge_case = _case_judge(spec)
    # Drawn before judging: a failing step is where the heatmap helps most.
    if jctx.views:
        ref_w = spec.reference(*seed["args"])[1]
        v.visuals["heatmaps"] = weights_panels(
            pair_weights(calls[0], tuple(ref_w.shape)),
            ref_w,
            lambda b: msg(spec.keys["batch_label"], n=b),
        ) + _leak_entry(spec, outputs.get("leak_map"), calls[0], seed, inputs["view_delta"])
    judge_case(v, calls[0], seed, size)
    judge_sized_cases(
        v, calls, list(inputs["cases"]), spec.sizes, spec.size_names, judge_case, spec.explained
    )
    no_kernel(v, spec.name, jctx.source, {spec.name}, jctx.kernels)
    again = {"call": outputs["again"]}
    judge_called_again(
        v, spec.name, again, None, judge_case, {"args": inputs["again"]}, size, source=""
    )
    _judge_large_scores(v, spec, outputs["large"], inputs["large"])
    want = spec.forward(*inputs["large_x"])[0]
    judge_large_inputs(v, outputs.get("large_x"), want, what=spec.call_text)
    judge_training_story(
        v,
        outputs.get("story"),
        list(seed["args"]),
        lambda ins, _state, _p: spec.forward(*ins)[0],
        inputs["g"],
        what=spec.call_text,
        names=list(spec.arg_names),
        trained=spec.trained,
        grads=False,
        memo=Same(spec),
    )


def _case_judge(spec: PairFunction) -> Callable[..., None]:
    return functools.partial(judge_pair_case, spec=spec)


def _judge_large_scores(v: Verdict, spec: PairFunction, call: dict, case: Mapping) -> None:
    """Judged like the lab's call; NaN or rows that do not sum to 1 there are the softmax's fault."""

    def likely() -> dict | None:
        value = call.get("value")
        w = value[1] if isinstance(value, tuple) and len(value) == 2 else None
        if not isinstance(w, torch.Tensor):
            return None
        return large_scores_likely(w, case["scores"], _hidden(spec, case["scores"].shape[-1]))

    large_scores_check(
        v,
        judged("", _case_judge(spec), call, case, spec.sizes[0]),
        spec.keys["large_scores"],
        overflow=("finite", "rows-sum-to-1"),
        likely=likely,
    )


def _hidden(spec: PairFunction, T: int) -> torch.Tensor:
    """Every hidden region's cells, as one (T, T) bool mask."""
    hidden = torch.zeros(T, T, dtype=torch.bool)
    for region in spec.regions(T):
        hidden |= region.hidden
    return hidden


# ---------------------------------------------------------------- leakage


def probe_pair_leakage(ctx: Any, spec: PairFunction, inputs: Mapping[str, Any]) -> dict:
    """In the child, at every case: the function on x, on x_last and on x_mid (the lab's the
    primary calls), and, up to leak_map_max_t, on x with each token changed in turn."""
    fn = ctx.get(spec.name)
    calls = []
    for i, case in enumerate(inputs["cases"]):
        x, *rest = case["args"]
        calls.append(
            {
                "base": ctx.call(fn, x, *rest, primary=i == 0),
                "last": ctx.call(fn, case["x_last"], *rest, primary=i == 0),
                "mid": ctx.call(fn, case["x_mid"], *rest, primary=i == 0),
                "map": probe_leak_map(ctx, fn, x, case["leak"], *rest, pick=out_of_pair)
                if x.shape[1] <= spec.leak_map_max_t
                else None,
            }
        )
    return {"calls": calls}


def judge_pair_leakage_case(
    v: Verdict, calls: Mapping, case: Mapping, size: Sequence, *, spec: PairFunction
) -> None:
    """One case: each call gave a finite out, no earlier output moved for the last and the middle
    token, nor for any hidden cell of the map; where base is right, the changed inputs' too."""
    x, *rest = case["args"]
    ref_out, ref_w = spec.reference(*case["args"])
    out_shape = tuple(ref_out.shape)
    T = x.shape[1]
    outs = {}
    for name in ("base", "last", "mid"):
        call = calls[name]
        require_ran(v, call, spec.name)
        value = call.get("value")
        out = require_pair_output(v, call, spec.name, out_shape, spec.keys["returns_pair"])
        require_finite(
            v,
            "out",
            out,
            likely=lambda value=value: (
                spec.diagnose(value[1], *case["args"])
                if isinstance(value[1], torch.Tensor) and value[1].shape == ref_w.shape
                else msg("likely.unknown")
            ),
        )
        outs[name] = out
    for name, pos in (("last", T - 1), ("mid", T // 2)):
        require_no_leak(v, outs["base"], outs[name], pos, likely=msg("likely.no_leak"))
    if calls["map"] is not None:
        require_ran(v, calls["map"], spec.name)
        judge_leak_map(v, outs["base"], calls["map"].get("value"), spec.regions(T))
    # No leak is also what a function that returns its first answer again shows.
    if close(outs["base"], ref_out):
        for name in ("last", "mid"):
            ref = spec.reference(case[f"x_{name}"], *rest)[0]
            what: Any = msg(spec.keys["again_new_x"])  # a label in the reader's language
            require_close(v, "call-again", what, outs[name], ref, likely=msg("likely.kept_state"))
        v.expect("call-again", True)


def judge_pair_leakage(
    v: Verdict,
    spec: PairFunction,
    outputs: Mapping,
    inputs: Mapping,
    jctx: Any,
) -> None:
    """probe_pair_leakage's outputs: the lab's map as a view (drawn first: a leak is where it
    helps most), the lab's case, the notebooks' figure beside the broken version's (spec.broken,
    where given and views are on), the other sizes, the learner's own code."""
    calls, seed = outputs["calls"], inputs["cases"][0]
    if jctx.views:
        delta = seed["leak"]
        v.visuals["heatmaps"] = _leak_entry(
            spec, calls[0].get("map"), calls[0]["base"], seed, delta
        )
        # Before the lab's case is judged: a learner whose function leaks needs it most.
        figures = _leak_figures(spec, calls[0], seed) if spec.broken is not None else None
        if figures is not None:
            v.visuals["leak"] = figures
    judge_case = functools.partial(judge_pair_leakage_case, spec=spec)
    judge_case(v, calls[0], seed, spec.sizes[0])
    judge_sized_cases(
        v, calls, list(inputs["cases"]), spec.sizes, spec.size_names, judge_case, spec.explained
    )
    no_foreign(v, spec.name, jctx.kernels)


def _leak_entry(
    spec: PairFunction, outputs_map: Any, base_call: dict, case: Mapping, delta
) -> list:
    """The leakage map's panel entry, or none when the probe's calls did not all come back (a
    value so large that the report was cut before them)."""
    moved = outputs_map.get("value") if isinstance(outputs_map, dict) else None
    if moved is None:
        return []
    reference = _leak_reference(spec, delta, *case["args"])
    return [leak_map_panel(msg("visual.leak_map"), pair_output(base_call), moved, *reference)]


def _leak_figures(spec: PairFunction, calls: Mapping, case: Mapping) -> dict | None:
    """How far the learner's outputs before the last token moved when it changed, and how far
    the broken version's did: the notebook's own demonstration that the test catches it. None
    where the learner's two outputs are not finite tensors of the input's (B, T)."""
    assert spec.broken is not None
    x, *rest = case["args"]
    pos = x.shape[1] - 1
    base, last = (pair_output(calls[k]) for k in ("base", "last"))
    if not all(
        isinstance(t, torch.Tensor) and t.dim() >= 2 and t.shape[:2] == x.shape[:2]
        for t in (base, last)
    ):
        return None
    base, last = cast(torch.Tensor, base), cast(torch.Tensor, last)
    if base.shape != last.shape or not (base.isfinite().all() and last.isfinite().all()):
        return None
    yours = moved_before(base, last, pos)
    broken = moved_before(spec.broken(x, *rest), spec.broken(case["x_last"], *rest), pos)
    return {"yours": yours, "unmasked": broken, "leaks": yours >= LEAK_TOLERANCE}


@of_the_inputs
def _leak_reference(spec: PairFunction, delta: torch.Tensor, x: torch.Tensor, *rest: Any) -> tuple:
    """The reference's outputs for x and each token changed: the same for every save."""
    return reference_leak_outputs(lambda x: spec.forward(x, *rest)[0], x, delta)
