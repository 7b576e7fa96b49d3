"""An attention layer as a model uses it: one property, declared by a lesson (LayerUse), probed
in the child (probe_layer_use) and judged (judge_layer_use).

At every size of the lesson's grid the layer is built by keyword, given the tutor's weights
and called; at the lab's size it is then used as a model uses it: the last token changed
(no leak), a shorter input, inputs a thousand times larger, its state before and after,
new weights, scores past exp's range, dropout in train and eval mode, a notebook's seeded
self-check with one backward pass, and the training story (layer_checks.py and training.py
hold those halves; this module wires them to one declaration). The leakage map is judged at
every size up to LayerUse.leak_map_max_t.

A size is the constructor's values in the order of LayerUse.keywords, then (B, T).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

from tutor.kit.drawn_weights import attention_weights
from tutor.kit.finite import judge_large_output, require_finite
from tutor.kit.judge_tools import (
    Verdict,
    changed_input,
    close,
    discarded_call,
    judge_leak_map,
    last_dim_of,
    literal_explanation,
    msg,
    of_the_inputs,
    require_ran,
    require_tensor,
    size_explanation,
)
from tutor.kit.kept_references import Same
from tutor.kit.kernels import no_kernel
from tutor.kit.layer_checks import (
    LAYER_WORDS,
    constructor_facts,
    judge_layer_again,
    judge_layer_constructor,
    judge_layer_state,
    judge_layout,
    linear_layout,
    require_again_right,
)
from tutor.kit.layer_training import (
    judge_dropout_modes,
    judge_seeded_layer,
    probe_dropout_modes,
    probe_layer_story,
    probe_seeded_layer,
    reference_grads,
    weights_from_state,
)
from tutor.kit.layers import build_layer, load_weights, state_dict_copy
from tutor.kit.leak_views import leak_map_panel, reference_leak_outputs, require_no_leak
from tutor.kit.magnitude import LARGE_INPUT, judge_large_inputs, large_input_weights, require_close
from tutor.kit.panels import judge_sized_cases, weights_panels
from tutor.kit.probe_tools import module_state, probe_leak_map
from tutor.kit.regions import causal_future
from tutor.kit.shape_trace import traced_forward
from tutor.kit.training import judge_training_story

# What the judge calls the layer's call in its messages: the same for any nn.Module.
FORWARD, FORWARD_X = "forward", "forward(x)"

# The roles a lesson must word itself (LayerUse.keys), with their placeholders:
# "layout" {args} {attr} {expected} {got}; "params_count" {expected} {got}; "params_heads"
# {fewer} {more}; "out_shape" and "out_tuple" (likely, no placeholder); "again_last" (a value
# label); "large_scores" {top} {reason} {likely}; "head_label" {b} {h}. Optional: "width"
# {line} {code} {d_in} {d_out}, the input width read where the output's belongs (the first two
# keywords being the two widths), said where the lab's are equal and a size's differ.
LAYER_USE_ROLES = (
    "layout",
    "params_count",
    "params_heads",
    "out_shape",
    "out_tuple",
    "again_last",
    "large_scores",
    "head_label",
)

Reference = Callable[..., tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class LayerUse:
    """A lesson's attention layer, declared once for probe_layer_use and judge_layer_use.

    reference(x, w, size, p=0.0) gives (output, weights (B, H, T, T)) for the tutor's weights
    w, with fixed_dropout at p; may be of_the_inputs-cached (its __wrapped__ is then used on
    values made in the judge). diagnose(y, x, w, size, source) names the mistake behind a wrong
    output. explain(lab's size, size, source) says why a size past the lab's fails."""

    name: str  # the class
    signature: list  # the constructor's [name, default] pairs, as the lab gives it
    sizes: Sequence[tuple]  # (constructor values…, B, T); the first is the lab's
    size_names: Sequence[str]
    params: Mapping[str, str]  # state_dict name -> key of the tutor's weights
    layout: Callable[[Sequence], Mapping[str, tuple]]  # nn.Linear attribute -> weight shape
    attrs: Callable[[Sequence], Mapping[str, int]]  # int attributes the constructor sets
    buffer: str  # the mask buffer's name
    buffer_of: Callable[[Sequence], torch.Tensor]  # its value at a size
    reference: Reference
    diagnose: Callable[..., dict]
    keys: Mapping[str, str]  # LAYER_USE_ROLES and any of LAYER_WORDS' roles -> message key
    heads: str = "n_heads"  # the keyword holding the number of heads
    head_counts: tuple[int, int] = (1, 4)  # built at the lab's size: the same parameter count
    scores_weights: tuple[str, ...] = ("W_q", "W_k")  # divided for inputs LARGE_INPUT larger
    dropout_p: float = 0.3  # with dropout: fixed_dropout stands in for torch's
    seed: int = 1  # the notebook's torch.manual_seed before building the layer
    first: int = 4  # sizes probed even where a kernel was seen (the rest cost its compile)
    leak_map_max_t: int = 16  # the leakage map (T calls) up to this T; past it, the last token
    # Why a size past the lab's fails (lab's size, size, source); by default explain_layer_size.
    explain: Callable[[Sequence, Sequence, str], dict | None] | None = None
    # For the views: the layer built at trace_size, its forward op by op on inputs["trace_x"],
    # shown by trace_view(ops, wrong) (the lesson's: its lab's route), wrong once judged.
    trace_size: tuple | None = None
    trace_view: Callable[[Any, bool], list] | None = None
    # The hidden Regions of a (T, T) leakage map: what no output may see.
    regions: Callable[[int], list] = lambda T: [causal_future(T)]  # noqa: E731

    @property
    def keywords(self) -> list[str]:
        """The constructor's keywords without a default: a size's first values."""
        return [name for name, default in self.signature if default is None]

    def heads_of(self, size: Sequence) -> int:
        """The number of heads at size."""
        return int(size[self.keywords.index(self.heads)])

    def word(self, role: str) -> str:
        """The message key of a role: the lesson's, else the engine's (LAYER_WORDS)."""
        return {**LAYER_WORDS, **self.keys}[role]

    def args(self, size: Sequence) -> str:
        """The constructor's call at size, as `d_in=8, d_out=8, …`."""
        return ", ".join(f"{k}={s}" for k, s in zip(self.keywords, size, strict=False))

    def forward(self, x: torch.Tensor, w: Mapping, size: Sequence, p: float = 0.0):
        """The reference's output, uncached: for values the judge made itself."""
        return getattr(self.reference, "__wrapped__", self.reference)(x, w, size, p)[0]


def draw_layer_case(g: torch.Generator, d_in: int, d_out: int, B: int, T: int) -> dict:
    """A size's inputs, drawn from g in this order: x (B, T, d_in); x_last, x with its last
    token changed; the tutor's weights (attention_weights); x_prefix, x's first half."""
    x = torch.randn(B, T, d_in, generator=g)
    x_last = x.clone()
    x_last[:, -1, :] = torch.randn(B, d_in, generator=g) * 3
    w = attention_weights(g, d_in, d_out)
    return {"x": x, "x_last": x_last, "x_prefix": x[:, : max(1, T // 2)].clone(), "w": w}


# ---------------------------------------------------------------- the probe


def probe_layer_use(
    ctx: Any,
    spec: LayerUse,
    inputs: Mapping[str, Any],
) -> dict:
    """In the child: the layer at every size of spec.sizes, then used as a model uses it at the
    lab's size. inputs: "cases" (draw_layer_case's per size, each with "leak", the change made to
    one token at a time for the leakage map), "new_w" (a second set of weights), "g" (the
    gradient's direction), "large" ({"x", "w"} whose scores pass exp's range), "view_delta"
    (the views' leakage map, drawn with new_w), "trace_x" (the shape trace's input, where
    spec.trace_size is given)."""
    cls = ctx.get(spec.name)
    load = functools.partial(load_weights, names=spec.params, skip_none=True)
    cases: list[dict] = []
    for i, (size, case) in enumerate(zip(spec.sizes, inputs["cases"], strict=False)):
        if i >= spec.first and ctx.kernels:  # own-formula fails; a kernel's compile costs time
            break
        made = ctx.call(lambda size=size: build_layer(cls, spec.keywords, size), primary=i == 0)
        if "error" in made:
            cases.append({"made": made})
            continue
        module = made["value"]
        out: dict[str, Any] = {
            "made": {"value": None},
            "layout": linear_layout(module, spec.layout(size)),
            "params": sum(p.numel() for p in module.parameters()),
        }
        cases.append(out)
        if not out["layout"]["ok"]:
            continue
        if i == 0:
            out["constructor"] = constructor_facts(
                cls, module, tuple(spec.attrs(size)), spec.buffer
            )
        load(module, case["w"])
        # Every call with fixed_dropout in place of torch's: no randomness reaches a verdict.
        before = ctx.call(lambda m=module: module_state(m)).get("value") if i == 0 else None
        out["base"] = ctx.call(module, case["x"], primary=i == 0, dropout=True)
        if case["x"].shape[1] <= spec.leak_map_max_t:
            out["map"] = probe_leak_map(ctx, module, case["x"], case["leak"], dropout=True)
        if i == 0:
            _probe_in_use(ctx, spec, cls, module, load, out, inputs, before)
    counts = {}
    if ctx.defines(spec.name):
        values = list(spec.sizes[0][: len(spec.keywords)])
        at = spec.keywords.index(spec.heads)
        for heads in spec.head_counts:
            values[at] = heads
            counts[heads] = ctx.call(
                lambda v=tuple(values): sum(p.numel() for p in cls(*v).parameters())
            ).get("value")
    return {"cases": cases, "counts": counts}


def _probe_in_use(ctx, spec, cls, module, load, out, inputs, before) -> None:
    """The lab's size: the layer as it is used, not only one frozen call."""
    case, size = inputs["cases"][0], spec.sizes[0]
    out["last"] = ctx.call(module, case["x_last"], primary=True, dropout=True)
    out["prefix"] = ctx.call(module, case["x_prefix"], dropout=True)  # a shorter input
    load(module, large_input_weights(case["w"], spec.scores_weights))
    out["large_x"] = ctx.call(module, case["x"] * LARGE_INPUT, dropout=True)
    load(module, case["w"])
    out["state"] = ctx.call(lambda: state_dict_copy(module)).get("value")
    out["module_state"] = [before, ctx.call(lambda: module_state(module)).get("value")]
    load(module, inputs["new_w"])
    out["new_weights"] = ctx.call(module, case["x"], dropout=True)  # nothing kept from the old
    load(module, inputs["large"]["w"])
    out["large"] = ctx.call(module, inputs["large"]["x"], dropout=True)
    load(module, inputs["new_w"])  # the views' leakage map's layer
    with_dropout = lambda: _built(cls, spec, size, dropout=spec.dropout_p)  # noqa: E731
    load_w = lambda m: load(m, case["w"])  # noqa: E731
    out["dropout"] = probe_dropout_modes(ctx, with_dropout, load_w, case["x"], case["x_prefix"])
    seeded = lambda: _built(cls, spec, size)  # noqa: E731
    out["notebook"] = probe_seeded_layer(
        ctx, seeded, spec.seed, inputs["g"], case["x"], case["x_last"]
    )
    out["story"] = probe_layer_story(ctx, with_dropout, load_w, case["x"], inputs["g"])
    if not ctx.views:
        return
    # Last, as only the views use them: the shape trace, then the layer with the second
    # weights, each token changed in turn.
    if spec.trace_size is not None:
        traced = ctx.call(lambda: build_layer(cls, spec.keywords, spec.trace_size))
        if "value" in traced:
            forward = lambda x: traced_forward(traced["value"], x)  # noqa: E731
            out["trace"] = ctx.call(forward, inputs["trace_x"], dropout=True)
    out["leak_map"] = probe_leak_map(ctx, module, case["x"], inputs["view_delta"], dropout=True)


def _built(cls: Any, spec: LayerUse, size: Sequence, **extra: object) -> torch.nn.Module:
    return cast(torch.nn.Module, build_layer(cls, spec.keywords, size, **extra))


# ---------------------------------------------------------------- the judge


def judge_layer_use(
    v: Verdict, spec: LayerUse, outputs: Mapping, inputs: Mapping, jctx: Any
) -> None:
    """probe_layer_use's outputs judged, inputs as it was given them: the views first (the
    weights of every head and the leakage map, where jctx.views), then the constructor, the
    lab's case, the heads' parameters, the other sizes, no kernel, the state, called again, the
    notebook's self-check, dropout, large scores and inputs, the training story; last, the
    shape trace's view (spec.trace_view), told whether the layer was judged wrong."""
    first, seed, size = outputs["cases"][0], inputs["cases"][0], spec.sizes[0]
    if jctx.views:
        soft = (first.get("base") or {}).get("softmax")
        ref_w = spec.reference(seed["x"], seed["w"], size)[1]
        have = isinstance(soft, torch.Tensor) and soft.shape == ref_w.shape
        learner = cast(torch.Tensor, soft)[0] if have else None
        # Drawn before judging: a failing step is where the heatmap helps most. The weights
        # are the last softmax the forward pass ran: without one, they cannot be had.
        v.visuals["heatmaps"] = weights_panels(
            learner,
            ref_w[0],
            lambda h: msg(spec.word("head_label"), b=0, h=h),
            why=msg("visual.weights_not_captured"),
        )
        if "leak_map" in first:
            reference = _leak_reference(spec, seed["x"], inputs["new_w"], inputs["view_delta"])
            base = first.get("new_weights", {}).get("value")
            moved = first["leak_map"].get("value")
            panel = leak_map_panel(msg("visual.leak_map"), base, moved, *reference)
            v.visuals["heatmaps"].append(panel)
    try:
        _judge_checks(v, spec, outputs, inputs, jctx)
    finally:  # after the verdict: a route other than the lab's is pointed at only when wrong
        if "trace" in first and spec.trace_view is not None:
            v.visuals["view"] = spec.trace_view(first["trace"].get("value"), not v.passed())


def _judge_checks(v: Verdict, spec: LayerUse, outputs: Mapping, inputs: Mapping, jctx: Any) -> None:
    first, seed, size = outputs["cases"][0], inputs["cases"][0], spec.sizes[0]
    judge_case = functools.partial(judge_layer_case, spec=spec, source=jctx.source)
    if "constructor" in first:
        judge_layer_constructor(
            v,
            first["constructor"],
            signature=spec.signature,
            attrs=spec.attrs(size),
            dropout=0.0,
            buffer=spec.buffer_of(size),
        )
    judge_case(v, first, seed, size)
    counts = outputs["counts"]
    fewer, more = (counts.get(h) for h in spec.head_counts)
    v.expect(
        "heads-share-parameters",
        fewer is not None and fewer == more,
        spec.word("params_heads"),
        fewer=fewer,
        more=more,
    )
    cases = outputs["cases"]
    explain = spec.explain or functools.partial(explain_layer_size, spec)
    judge_sized_cases(
        v, cases, list(inputs["cases"]), spec.sizes, spec.size_names, judge_case, explain
    )
    trained = ((first.get("notebook") or {}).get("step") or {}).get("value")
    in_graph = trained.get("kernels") or [] if isinstance(trained, dict) else []
    kernels = sorted(set(jctx.kernels) | set(in_graph))
    no_kernel(v, FORWARD, jctx.source, {spec.name}, kernels)
    _judge_in_use(v, spec, first, inputs)


def _judge_in_use(v: Verdict, spec: LayerUse, first: Mapping, inputs: Mapping) -> None:
    seed, size = inputs["cases"][0], spec.sizes[0]
    x, w, g, H = seed["x"], seed["w"], inputs["g"], spec.heads_of(size)
    expected = {name: w[key] for name, key in spec.params.items()}
    expected[spec.buffer] = spec.buffer_of(size)
    judge_layer_state(v, first.get("state"), expected, first.get("module_state"))
    reference = lambda x, w: spec.reference(x, w, size)[0]  # noqa: E731
    judge_layer_again(
        v, first, reference, x=x, x_prefix=seed["x_prefix"], w=w, new_w=inputs["new_w"]
    )
    built = f"{spec.name}({', '.join(f'{k}=…' for k in spec.keywords)})"
    seeded = lambda w: _of_these_weights(spec, x, w, g)  # noqa: E731
    judge_seeded_layer(v, first["notebook"], seeded, names=spec.params, built=built)
    B, T, _ = x.shape
    judge_dropout_modes(
        v,
        first["dropout"],
        lambda p: spec.reference(x, w, size, p)[0],
        p=spec.dropout_p,
        weights_numel=B * H * T * T,
    )
    large = inputs["large"]
    judge_large_output(
        v,
        first["large"],
        spec.reference(large["x"], large["w"], size)[0],
        fn=FORWARD,
        what=FORWARD_X,
        key=spec.word("large_scores"),
    )
    scaled_w = large_input_weights(w, spec.scores_weights)
    want = spec.forward(x * LARGE_INPUT, scaled_w, size)
    judge_large_inputs(v, first.get("large_x"), want, what=FORWARD_X)

    def story_reference(ins: list, state: Any, p: float) -> torch.Tensor:
        w = cast(Mapping, weights_from_state(state, spec.params))  # None: the reference raises
        return spec.forward(ins[0], w, size, p)

    judge_training_story(
        v,
        first.get("story"),
        [x],
        story_reference,
        g,
        what=FORWARD_X,
        names=["x"],
        p=spec.dropout_p,
        memo=(Same(spec), tuple(size)),
    )


def judge_layer_case(
    v: Verdict, case: Mapping, inp: Mapping, size: Sequence, *, spec: LayerUse, source: str = ""
) -> None:
    """One size: built, its Linear layout and parameter count, forward's shape, inputs left
    unchanged, finite, called again with the last token changed (no leak, still right), the
    leakage map over every region, then close to the reference."""
    T = size[-1]
    args = spec.args(size)
    require_ran(v, case["made"], f"{spec.name}({args})")
    judge_layout(v, case["layout"], spec.layout(size), key=spec.word("layout"), args=args)
    require_ran(v, case["base"], FORWARD)
    want_params = sum(t.numel() for t in inp["w"].values())  # what the reference takes
    v.require(
        "parameters",
        case["params"] == want_params,
        spec.word("params_count"),
        expected=want_params,
        got=case["params"],
    )
    x = inp["x"]
    value = case["base"]["value"]
    shape_likely = msg(spec.word("out_tuple" if isinstance(value, tuple) else "out_shape"))
    ref = spec.reference(x, inp["w"], size)[0]
    y = require_tensor(v, "shape", FORWARD_X, value, tuple(ref.shape), shape_likely)
    mutated = changed_input(v, FORWARD, ["x"], case["base"]["args"], (x,))
    written_in = [c["p"] for c in case["base"].get("dropouts", []) if c["training"] and c["p"]]
    if written_in:  # the layer was built with dropout 0
        diagnose = lambda: msg(spec.word("dropout_p"), got=written_in[0], p=0.0)  # noqa: E731
    else:
        diagnose = lambda: spec.diagnose(y, x, inp["w"], size, source)  # noqa: E731
    require_finite(v, FORWARD_X, y, likely=diagnose)
    if "last" in case:
        require_ran(v, case["last"], FORWARD)
        y2 = case["last"]["value"]
        if isinstance(y2, torch.Tensor) and y2.shape == y.shape:
            # A right first call and a wrong second one is no leak: forward changed the layer.
            if close(y, ref):
                again_ref = spec.reference(inp["x_last"], inp["w"], size)[0]
                label, again = msg(spec.word("again_last")), msg(spec.word("call_again"))
                require_again_right(v, y2, again_ref, label, again)
            require_no_leak(v, y, y2, T - 1, likely=diagnose)
    if "map" in case:
        require_ran(v, case["map"], FORWARD)
        judge_leak_map(v, y, case["map"].get("value"), spec.regions(T))
    likely = msg("likely.mutated_input", arg=mutated) if mutated else diagnose
    require_close(v, "matches-pytorch", FORWARD_X, y, ref, likely=likely)


@of_the_inputs
def _leak_reference(spec: LayerUse, x: torch.Tensor, w: Mapping, delta: torch.Tensor) -> tuple:
    """The reference's outputs for x and each token changed: the same for every save."""
    return reference_leak_outputs(lambda x: spec.forward(x, w, spec.sizes[0]), x, delta)


_BY_VALUE: dict = {}


def _of_these_weights(spec: LayerUse, x: torch.Tensor, w: Mapping, g: torch.Tensor) -> tuple:
    """The reference's output, its weights' gradients and x's, for weights the layer made
    itself: keyed on their bytes, since a correct constructor under torch.manual_seed makes
    the same ones every save."""
    key = (id(spec), id(x), id(g), tuple((k, t.numpy().tobytes()) for k, t in sorted(w.items())))
    hit = _BY_VALUE.get(key)
    if hit is None:
        if len(_BY_VALUE) >= 16:
            _BY_VALUE.clear()
        size = spec.sizes[0]
        forward = lambda x, w: spec.forward(x, w, size)  # noqa: E731
        hit = _BY_VALUE[key] = (forward(x, w), *reference_grads(forward, x, w, g, spec.params))
    return hit


def explain_layer_size(spec: LayerUse, lab: Sequence, size: Sequence, source: str) -> dict | None:
    """Why the layer fails at size, not at the lab's: one of the lab's numbers written in (a
    size, or an attribute derived from them: spec.attrs'), then the input width read where the
    output's belongs (the role "width", where the lesson words it), then what differs."""
    derived = [name for name in spec.attrs(lab) if name not in spec.size_names]
    names = (*spec.size_names, *derived)
    lab_all = (*lab, *(spec.attrs(lab)[name] for name in derived))
    size_all = (*size, *(spec.attrs(size)[name] for name in derived))
    defs = (spec.name,)
    literal = literal_explanation(source, defs, names, lab_all, size_all)
    if literal:
        return literal
    if "width" in spec.keys and lab[0] == lab[1] and size[0] != size[1]:
        found = last_dim_of(source, frozenset(defs), 1)  # forward(self, x): the width of x
        if found:
            d_in, d_out = size[0], size[1]
            return msg(spec.keys["width"], line=found.line, code=found.code, d_in=d_in, d_out=d_out)
    return size_explanation(source, defs, names, lab_all, size_all)


def unless_discarded(likely: dict, source: str, fn: str) -> dict:
    """No mask in effect, from a masked_fill in fn whose result is thrown away: that line."""
    found = likely["key"] == "likely.no_mask" and discarded_call(
        source, frozenset({fn}), "masked_fill"
    )
    if found:
        return msg("likely.masked_fill_discarded_line", line=found.line, code=found.code)
    return likely
