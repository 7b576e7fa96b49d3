"""Checks for lesson lab-02: causal attention from the formula.

The seed's inputs first (batch 1, 2 heads, 6 tokens, head_dim 8, seed 7), then
sizes the notebook never tries, including other leading dimensions; then each
function once more at the seed's shape on new values, to catch state kept between
calls. `attention` is also run with the tutor's own helpers in place of the
learner's, so that a fault in a helper is blamed on the helper's step.
"""

import functools
import math

import torch
import torch.nn.functional as F

from tutor.kit import (
    LARGE_INPUT,
    Region,
    StepSpec,
    after_answer,
    before_after_maps,
    blame_helpers,
    call_after,
    causal_mask_likely,
    changed_input,
    close,
    describe,
    entropy_table,
    exercise_functions,
    first_raised_note,
    head_maps,
    head_panel,
    heading,
    heatmap,
    helper_verdicts,
    judge_attention_weights,
    judge_bool_mask,
    judge_called_again,
    judge_helpers_replaced,
    judge_large_inputs,
    judge_large_scores_weights,
    judge_mask_honoured,
    judge_other_sizes,
    judge_sizes_and_again,
    judge_training_story,
    judged,
    large_scores_factor,
    made_note,
    mask_difference,
    mask_sizes_explainer,
    masked_softmax_likely,
    msg,
    no_kernel,
    nonfinite_rows,
    note,
    of_the_inputs,
    other_mask,
    pair_weights,
    probe_calls_again,
    probe_helper_calls,
    probe_helpers_replaced,
    probe_named_calls_again,
    probe_training_story,
    raised_note,
    require_close,
    require_pair,
    require_ran,
    require_tensor,
    returned_note,
    round_matrix,
    row_sums_rows,
    rows_note,
    same_tensor,
    scale_from_weights_likely,
    scaled_scores_likely,
    shape_str,
    shapes_explainer,
    table,
    trimmed,
    waiting,
    with_args,
    with_question,
)

# q, k, v shapes: the seed's, then others (a 3-D batch, one token, long and wide).
QKV_SHAPES = [(1, 2, 6, 8), (2, 3, 5, 16), (4, 9, 32), (1, 1, 1, 4), (1, 2, 40, 64)]
# The seed's 6, small ones, every T that attention meets, and lengths past any fixed cap.
MASK_SIZES = [6, 1, 2, 7, 13, 5, 9, 32, 40, 48, 100]
LAB_D_K = QKV_SHAPES[0][-1]


def make_inputs(seed=0):
    """seed: 0 for the notebook's own tensors; another draws them afresh (`attn-tutor grade --seed`)."""
    cases = []
    # First exactly the notebook's q, k, v: torch.manual_seed(7), then three randn calls.
    g = torch.Generator().manual_seed(7 + 1_000_003 * seed)
    for shape in QKV_SHAPES:
        q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
        # A mask that is not the causal one, to see that attention_weights uses the mask it is given.
        cases.append({"q": q, "k": k, "v": v, "other_mask": other_mask(shape[-2], g)})
    # New values at the seed's shape, for the second call of each function (after the other sizes).
    g = torch.Generator().manual_seed(8 + 1_000_003 * seed)
    q, k, v = (torch.randn(QKV_SHAPES[0], generator=g) for _ in range(3))
    other = other_mask(QKV_SHAPES[0][-2], g)
    # Last: the direction of the training story's gradient, at the seed's shape.
    story_g = torch.randn(QKV_SHAPES[0], generator=g)
    return {
        "cases": cases,
        "again": {"q": q, "k": k, "v": v, "other_mask": other},
        "large": large_scores(cases[0]),
        "story_g": story_g,
    }


def _future(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def _scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def _weights(scores, mask):
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)


# The references, computed once per input (judge and probe alike); never handed to learner code.
# Plain functions of this file around the caches: code that reaches them is named as taking
# them from here (origin.py reports where a function's own code is).
future = functools.lru_cache(maxsize=None)(_future)
_scores_once = of_the_inputs(_scores)
_weights_once = of_the_inputs(_weights)
_output_once = of_the_inputs(
    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
)


def ref_scores(q, k):
    return _scores_once(q, k)


def ref_weights(scores, mask):
    return _weights_once(scores, mask)


def ref_output(q, k, v):
    return _output_once(q, k, v)


def qkv_label(case) -> list[str]:
    """q, k, v and their shape, as a list the catalogs join as each language writes a list."""
    return ["q", "k", "v " + shape_str(case["q"].shape)]


def sizes_explainer(defs, first=None):
    """Why a step right at the seed's q, k, v is wrong at QKV_SHAPES[i]; first: a culprit to
    name before the shape (attention's wrong helper)."""
    return shapes_explainer(defs, ("B", "H", "T", "d_k"), QKV_SHAPES, first=first)


# ---------------------------------------------------------------- scores


def probe_scores(ctx, inputs):
    cases, a = inputs["cases"], inputs["again"]
    args = [(c["q"], c["k"]) for c in cases]
    return probe_calls_again(ctx, ctx.get("scaled_scores"), args, (a["q"], a["k"]))


def judge_scores_case(v, call, case):
    require_ran(v, call, "scaled_scores")
    q, k = case["q"], case["k"]
    T = q.shape[-2]
    s = require_tensor(
        v,
        "shape",
        "scaled_scores(q, k)",
        call["value"],
        q.shape[:-1] + (T,),
        msg("likely.scores_transpose"),
    )
    expected = ref_scores(q, k)
    require_close(
        v,
        "values",
        "scaled_scores(q, k)",
        s,
        expected,
        likely=lambda: scaled_scores_likely(s, q, k, lab_d_k=LAB_D_K),
    )
    changed_input(v, "scaled_scores", ["q", "k"], call["args"], (q, k))


def judge_scores(v, outputs, inputs, jctx):
    cases, explain = inputs["cases"], sizes_explainer(("scaled_scores",))
    labels, again = [qkv_label(c) for c in cases], inputs["again"]
    fn, judge = "scaled_scores", judge_scores_case
    judge_sizes_and_again(v, fn, outputs, cases, labels, judge, again, explain=explain)
    no_kernel(v, "scaled_scores", jctx.source, {"scaled_scores"}, jctx.kernels)


# ---------------------------------------------------------------- mask


def probe_mask(ctx, inputs):
    sizes = [(T,) for T in MASK_SIZES]
    return probe_calls_again(ctx, ctx.get("causal_mask"), sizes, sizes[0])


def judge_mask_case(v, call, T):
    require_ran(v, call, "causal_mask")
    m = call["value"]
    judge_bool_mask(
        v,
        m,
        future(T),
        what=f"causal_mask({T})",
        region=msg("region.future"),
        likely=lambda: causal_mask_likely(m, T),
        shape_likely=msg("likely.mask_shape"),
    )


def judge_mask(v, outputs, inputs, jctx):
    labels, sizes = [f"T={T}" for T in MASK_SIZES], MASK_SIZES
    explain = mask_sizes_explainer(("causal_mask",), outputs["calls"], sizes)
    fn, judge = "causal_mask", judge_mask_case
    judge_sizes_and_again(v, fn, outputs, sizes, labels, judge, sizes[0], explain=explain)


# ---------------------------------------------------------------- weights


def probe_weights(ctx, inputs):
    fn = ctx.get("attention_weights")

    def masks(c):
        scores = ref_scores(c["q"], c["k"])
        return {"causal": (scores, future(scores.shape[-1])), "other": (scores, c["other_mask"])}

    cases = [masks(c) for c in inputs["cases"]]
    out = probe_named_calls_again(ctx, fn, cases, masks(inputs["again"]))
    large = inputs["large"]
    out["large"] = trimmed(ctx.call(fn, large, future(large.shape[-1])))
    return out


def large_scores(case):
    """The lab's scores stretched until the largest is the kit's LARGE_SCORES: made with the
    inputs, once, so that the judge's reference weights for them are computed once too."""
    s = _scores(case["q"], case["k"])
    return s * large_scores_factor(s)


def judge_weights_masked(v, w, scores, mask, what, defs=("attention_weights",)):
    diagnose = lambda: masked_softmax_likely(w, scores, mask, source=v.source, defs=defs)  # noqa: E731
    hidden = Region(msg("region.future"), mask, "future-is-zero", "check.future", named=False)
    judge_attention_weights(v, w, [hidden], what=what, likely=diagnose)


def judge_weights_one(v, call, scores, mask, name):
    require_ran(v, call, "attention_weights")
    what = "attention_weights(scores, mask)"
    w = require_tensor(v, "shape", what, call["value"], scores.shape, msg("likely.weights_shape"))

    def values():
        judge_weights_masked(v, w, scores, mask, what)
        defs = ("attention_weights",)
        likely = lambda: masked_softmax_likely(w, scores, mask, source=v.source, defs=defs)  # noqa: E731
        require_close(v, "values", what, w, ref_weights(scores, mask), likely=likely)

    if name == "other":
        # A result kept from the call before (a memo keyed on the shape) ignores the mask too.
        judge_mask_honoured(v, w, mask, then=values, defs=("attention_weights",))
    else:
        values()
    changed_input(v, "attention_weights", ["scores", "mask"], call["args"], (scores, mask))


def judge_weights_case(v, call, case):
    scores = ref_scores(case["q"], case["k"])
    T = scores.shape[-1]
    for name, mask in (("causal", future(T)), ("other", case["other_mask"])):
        judge_weights_one(v, call[name], scores, mask, name)


def judge_weights(v, outputs, inputs, jctx):
    cases, fn, defs = inputs["cases"], "attention_weights", ("attention_weights",)
    labels, large = [qkv_label(c) for c in cases], inputs["large"]
    mask = future(large.shape[-1])
    large_ok = lambda: judge_large_scores_weights(  # noqa: E731
        v, outputs["large"], large, mask, ref_weights(large, mask), fn=fn, defs=defs
    )
    judge_sizes_and_again(
        v,
        fn,
        outputs,
        cases,
        labels,
        judge_weights_case,
        inputs["again"],
        explain=sizes_explainer(defs),
        first_name="causal",
        then=large_ok,
    )
    no_kernel(v, "attention_weights", jctx.source, {"attention_weights"}, jctx.kernels)


# ---------------------------------------------------------------- output


STAND_INS = {
    "scaled_scores": (_scores, ("q", "k")),
    "causal_mask": (_future, ("seq_len",)),
    "attention_weights": (_weights, ("scores", "mask")),
}


def probe_output(ctx, inputs):
    fn = ctx.get("attention")
    cases, a = inputs["cases"], inputs["again"]
    args = [(c["q"], c["k"], c["v"]) for c in cases + [a]]
    out = probe_calls_again(ctx, fn, args[:-1], args[-1])
    # Attention on its own: with correct helpers in place of the learner's.
    out["alone"] = probe_helpers_replaced(ctx, fn, args, STAND_INS)
    # The learner's helpers on the inputs attention gives them, to name the first wrong one.
    out["parts"] = probe_helper_calls(ctx, [helper_args(q, k) for q, k, _ in args])
    # The training story on the seed's case: k and v as a trained layer's outputs would be
    # (updated in place by a step), then `q.mul_(2)`.
    c = cases[0]
    out["story"] = probe_training_story(
        ctx,
        fn,
        [c["q"], c["k"], c["v"]],
        inputs["story_g"],
        trained=(1, 2),
        pick=first_of,
        grads=False,  # a function in NumPy is right here: only values are judged
    )
    # v a thousand times larger (the scores as they were: large scores are their own check).
    out["large_x"] = ctx.call(fn, c["q"], c["k"], c["v"] * LARGE_INPUT)
    return out


def helper_args(q, k) -> dict:
    """What attention gives each helper, in the lesson's step order."""
    T = q.shape[-2]
    return {
        "scaled_scores": (q, k),
        "causal_mask": (T,),
        "attention_weights": (ref_scores(q, k), future(T)),
    }


def first_of(pair):
    return pair[0]


def story_reference(inputs, _state, _p):
    return _weights(_scores(inputs[0], inputs[1]), future(inputs[0].shape[-2])) @ inputs[2]


def judge_output_case(v, call, case, defs=("attention",)):
    require_ran(v, call, "attention")
    q, k, vv = case["q"], case["k"], case["v"]
    T = q.shape[-2]
    out, w = require_pair(
        v, "attention", call["value"], vv.shape, q.shape[:-1] + (T,), "likely.returns_pair_lab02"
    )
    w = require_tensor(v, "shape", "weights", w, q.shape[:-1] + (T,), msg("likely.weights_shape"))
    out = require_tensor(v, "shape", "output", out, vv.shape, msg("likely.out_shape"))
    scores = ref_scores(q, k)
    judge_weights_masked(v, w, scores, future(T), "weights", defs + ("attention_weights",))
    ref_w = ref_weights(scores, future(T))
    # The weights returned must be the ones used, not merely well-formed.
    require_close(
        v,
        "values",
        "weights",
        w,
        ref_w,
        likely=lambda: scale_from_weights_likely(w, q, k, future(T)),
    )

    def out_likely():
        if close(w, ref_w):
            return msg("likely.out_not_weights_v")
        found = masked_softmax_likely(
            w, scores, future(T), source=v.source, defs=defs + ("attention_weights",)
        )
        return (
            scale_from_weights_likely(w, q, k, future(T))
            if found["key"] == "likely.unknown"
            else found
        )

    # rtol=0: the notebook's own `error < 1e-5`.
    expected = ref_output(q, k, vv)
    require_close(v, "matches-pytorch", "output", out, expected, likely=out_likely, rtol=0)
    changed_input(v, "attention", ["q", "k", "v"], call["args"], (q, k, vv))


def part_judges(source, case) -> dict:
    """Each helper's own step's judge, on the inputs attention gives it, in step order."""
    q, k = case["q"], case["k"]
    T = q.shape[-2]
    scores, mask = ref_scores(q, k), future(T)
    return {
        "scaled_scores": lambda c: judged(source, judge_scores_case, with_args(c, q, k), case),
        "causal_mask": lambda c: judged(source, judge_mask_case, c, T),
        "attention_weights": lambda c: judged(
            source, judge_weights_one, with_args(c, scores, mask), scores, mask, "causal"
        ),
    }


def judge_output(v, outputs, inputs, jctx):
    calls, cases = outputs["calls"], inputs["cases"]
    if jctx.views:
        ref = ref_weights(ref_scores(cases[0]["q"], cases[0]["k"]), future(cases[0]["q"].shape[-2]))
        w = pair_weights(calls[0], ref.shape)
        # Drawn before judging: a failing step is where the heatmap helps most.
        v.visuals["heatmaps"] = head_panel(w, ref, lambda h: msg("visual.head", h=h))
        v.visuals["view"] = printout_view(calls[0], cases[0])
    everything, qkv = cases + [inputs["again"]], lambda c: (c["q"], c["k"], c["v"])
    judges = functools.partial(part_judges, v.source)
    replaced, blame = helper_verdicts(
        v.source, outputs["alone"], outputs["parts"], everything, judge_output_case, qkv, judges
    )
    try:
        judge_output_case(v, calls[0], cases[0])
    finally:
        blame_helpers(v, 0, lambda: blame(0))
    judge_helpers_replaced(v, replaced(0), check_id="reference-helpers")
    labels, defs = [qkv_label(c) for c in cases], ("attention",)
    explain = sizes_explainer(defs, first=blame)
    judge_other_sizes(v, calls, cases, labels, judge_output_case, explain=explain)
    first = calls[0].get("value")
    last = lambda: blame(len(cases))  # noqa: E731
    judge_called_again(
        v,
        "attention",
        outputs["again"],
        first,
        judge_output_case,
        inputs["again"],
        defs=defs,
        blame=last,
    )
    no_kernel(v, "attention", jctx.source, {"attention"}, jctx.kernels)
    c, s = cases[0], LARGE_INPUT
    judge_large_inputs(
        v,
        outputs.get("large_x"),
        _output_once.__wrapped__(c["q"], c["k"], c["v"] * s),
        what="attention(q, k, v)",
    )
    judge_training_story(
        v,
        outputs.get("story"),
        [c["q"], c["k"], c["v"]],
        story_reference,
        inputs["story_g"],
        what="attention(q, k, v)",
        names=["q", "k", "v"],
        trained=(1, 2),
        grads=False,
    )


def printout_view(call, case) -> list:
    """The notebook's printouts, from the learner's attention on its inputs: the weights' shape,
    their row sums and the largest absolute difference from PyTorch's kernel."""
    value = call.get("value")
    w = pair_weights(call)
    if w is None:
        return []
    rows = [["weights:", shape_str(w.shape)], *row_sums_rows(w)]
    out = value[0] if isinstance(value, tuple) else None
    expected = ref_output(case["q"], case["k"], case["v"])
    if isinstance(out, torch.Tensor) and out.shape == expected.shape:
        error = (out.double() - expected.double()).abs().max().item()
        rows.append(["maximum absolute error:", f"{error:.1e}"])
    return [
        heading(msg("visual.printout_title")),
        table(
            [msg("visual.printout_line"), msg("visual.printout_value")],
            rows,
            align=["left", "left"],
        ),
    ]


STEPS = {
    "scores": StepSpec(probe_scores, judge_scores, ("scaled_scores",), own_formula="scaled_scores"),
    "mask": StepSpec(probe_mask, judge_mask, ("causal_mask",)),
    "weights": StepSpec(
        probe_weights, judge_weights, ("attention_weights",), own_formula="attention_weights"
    ),
    "output": StepSpec(probe_output, judge_output, ("attention",), own_formula="attention"),
}


# ---------------------------------------------------------------- experiments (no verdict, just data)

HEAD_DIMS = [8, 16, 32, 64, 128, 256, 512]
ENTROPY_T = 16


def probe_heatmap(ctx, inputs):
    fn = ctx.get("attention")
    c = inputs["cases"][0]
    return {"call": ctx.call(fn, c["q"], c["k"], c["v"], primary=True)}


def judge_heatmap(v, outputs, inputs, jctx):
    c = inputs["cases"][0]
    ref = ref_weights(ref_scores(c["q"], c["k"]), future(c["q"].shape[-2]))
    w = pair_weights(outputs["call"], ref.shape)
    ok = w is not None
    # The seed's plot: head 0 and head 1 side by side, the learner's own weights (the
    # reference's where the learner's cannot be drawn; the check below says why).
    shown = w if ok else ref
    v.visuals["view"] = [head_maps(shown, lambda h: msg("visual.head_title", h=h))]
    v.expect(
        "returns",
        ok,
        "check.returns_pair",
        fn="attention",
        got=describe(outputs["call"].get("value")),
        likely=msg("likely.returns_pair_lab02"),
    )


# The exercises: the learner's own change, made in exercise_scores, exercise_mask and exercise_q
# (the starter's end). A file without one gets the notebook's change, made by the tutor (OWN).
EXERCISES = ("exercise_scores", "exercise_mask", "exercise_q")


def _no_scale(q, k):
    return q @ k.transpose(-2, -1)


def _diagonal_zero(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=0)


def _head0_times4(q):
    q = q.clone()
    q[:, 0] = q[:, 0] * 4.0
    return q


OWN = {"exercise_scores": _no_scale, "exercise_mask": _diagonal_zero, "exercise_q": _head0_times4}


def probe_exercises(ctx, inputs):
    scores_fn, weights_fn = ctx.get("scaled_scores"), ctx.get("attention_weights")
    mask_fn, attention_fn = ctx.get("causal_mask"), ctx.get("attention")
    # A missing exercise is the tutor's change, called as the learner's would be.
    changed, missing = exercise_functions(ctx, OWN)
    out: dict = {"missing": missing, "entropy": []}
    g = torch.Generator().manual_seed(11)
    mask = ctx.call(mask_fn, ENTROPY_T, primary=True)["value"]
    if not ctx.views:  # the rest only feeds the view, which `check` and `grade` never draw
        return out
    for hd in HEAD_DIMS:
        q, k = (torch.randn(1, 2, ENTROPY_T, hd, generator=g) for _ in range(2))
        scaled = trimmed(ctx.call(scores_fn, q, k))
        unscaled = trimmed(ctx.call(changed["exercise_scores"], q, k))
        out["entropy"].append(
            {
                "hd": hd,
                "scaled": scaled.get("value"),
                "unscaled": unscaled,
                "raw": _no_scale(q, k),
                "with": trimmed(call_after(ctx, weights_fn, scaled, mask)).get("value"),
                "without": trimmed(call_after(ctx, weights_fn, unscaled, mask)),
            }
        )
    c = inputs["cases"][0]
    T = c["q"].shape[-2]
    out["mask"] = trimmed(ctx.call(changed["exercise_mask"], T))
    scores = ref_scores(c["q"], c["k"])
    out["diagonal"] = (
        trimmed(ctx.call(weights_fn, scores, out["mask"]["value"]))
        if "value" in out["mask"]
        else out["mask"]
    )
    out["q"] = trimmed(ctx.call(changed["exercise_q"], c["q"]))
    out["before"] = trimmed(ctx.call(attention_fn, c["q"], c["k"], c["v"]))
    out["after"] = trimmed(call_after(ctx, attention_fn, out["q"], c["k"], c["v"]))
    return out


def entropy_view(outputs) -> list:
    """Exercise 1: the scale keeps the softmax from saturating as head_dim grows."""
    found = outputs["entropy"]
    rows = [(str(e["hd"]), e["with"], e["without"].get("value")) for e in found]
    columns = ["head_dim", msg("visual.ex1_with"), "", msg("visual.ex1_without"), ""]
    said = made_note(outputs["missing"], "exercise_scores")
    failed = first_raised_note(
        [
            (e[part], fn)
            for e in found
            for part, fn in (("unscaled", "exercise_scores"), ("without", "attention_weights"))
        ]
    )
    unscaled = [e["unscaled"].get("value") for e in found]
    right = failed is None and all(
        same_tensor(u, e["raw"]) for u, e in zip(unscaled, found, strict=True)
    )
    if failed is not None:
        said.append(failed)
    elif not right:
        unchanged = all(same_tensor(u, e["scaled"]) for u, e in zip(unscaled, found, strict=True))
        said.append(note(msg("visual.ex1_unchanged" if unchanged else "visual.ex1_not_raw")))
    shown = [note(msg("visual.ex1_task", T=ENTROPY_T)), entropy_table(rows, columns)]
    return [
        with_question(1, *shown, *said),
        # Why, under the learner's own answer, once the change is the notebook's.
        *([after_answer(1, note(msg("visual.ex1_why")))] if right else []),
    ]


def mask_said(m, T: int) -> tuple[bool, list]:
    """Exercise 2's mask: whether it is the notebook's change, and the notes on it."""
    zero = _diagonal_zero(T)
    if torch.equal(m, zero):
        return True, []
    if torch.equal(m, _future(T)):
        return False, [note(msg("visual.ex2_unchanged"))]
    return False, [note(msg("visual.ex2_not_diagonal0", T=T, **mask_difference(m, zero)))]


def diagonal_view(outputs, inputs) -> list:
    """Exercise 2: with diagonal=0 the first query has nothing left to attend to."""
    T = inputs["cases"][0]["q"].shape[-2]
    said = made_note(outputs["missing"], "exercise_mask")
    shown = [note(msg("visual.ex2_task"))]
    m = outputs["mask"].get("value")
    # What exercise_mask did comes first: attention_weights fails on a mask of no use.
    square = lambda m: isinstance(m, torch.Tensor) and tuple(m.shape) == (T, T)  # noqa: E731
    bad = lambda m: msg("visual.ex2_shape", T=T, got=describe(m))  # noqa: E731
    failed = returned_note(outputs["mask"], "exercise_mask", square, bad)
    failed = failed or raised_note(outputs["diagonal"], "attention_weights")
    if failed is not None:
        return [with_question(2, *shown, *said, failed)]
    right, notes = mask_said(m.bool(), T)
    said += notes
    w = outputs["diagonal"].get("value")
    nan_rows: list[int] = []
    if isinstance(w, torch.Tensor) and w.dim() == 4 and tuple(w.shape[-2:]) == (T, T):
        nan_rows = nonfinite_rows(w[0, 0])
        shown.append(heatmap(round_matrix(w[0, 0]), msg("visual.ex2_heatmap")))
        if nan_rows:
            said.append(rows_note(nan_rows, "visual.ex2_nan", "visual.ex2_nan_rows"))
        elif right:
            said.append(note(msg("visual.ex2_no_nan")))
    return [
        with_question(2, *shown, *said),
        *([after_answer(2, note(msg("visual.ex2_why")))] if right and 0 in nan_rows else []),
    ]


def heads_view(outputs, inputs) -> list:
    """Exercise 3: one head's Q changed: its pattern moves, the other head's does not."""
    q = inputs["cases"][0]["q"]
    said = made_note(outputs["missing"], "exercise_q")
    shown = [note(msg("visual.ex3_task"))]
    new = outputs["q"].get("value")
    # What exercise_q did comes first: attention fails on a q of no use.
    like_q = lambda x: isinstance(x, torch.Tensor) and x.shape == q.shape  # noqa: E731
    bad = lambda x: msg("visual.ex3_bad_return", expected=shape_str(q.shape), got=describe(x))  # noqa: E731
    failed = returned_note(outputs["q"], "exercise_q", like_q, bad)
    both = [(outputs["before"], "attention"), (outputs["after"], "attention")]
    failed = failed or first_raised_note(both)
    if failed is not None:
        return [with_question(3, *shown, *said, failed)]
    before, after = pair_weights(outputs["before"]), pair_weights(outputs["after"])
    if not all(isinstance(w, torch.Tensor) and w.dim() == 4 for w in (before, after)):
        return [with_question(3, *shown, *said, waiting(msg("visual.ex_waiting")))]
    changed = [h for h in range(q.shape[1]) if not torch.equal(new[:, h], q[:, h])]
    heads = min(2, before.shape[1], after.shape[1])
    if not changed:  # nothing to compare: each head once
        said.append(note(msg("visual.ex3_unchanged")))
        maps = [head_maps(before, lambda h: msg("visual.ex3_head", h=h), heads)]
    else:
        before_title = lambda h: msg("visual.ex3_before", h=h)  # noqa: E731
        after_title = lambda h: msg("visual.ex3_after", h=h)  # noqa: E731
        maps = before_after_maps(before, after, heads, before_title, after_title)
        if len(changed) > 1:
            said.append(note(msg("visual.ex3_heads", heads=changed)))
    if not (len(changed) == 1 and q.shape[1] == 2):  # the lab's two heads: one changed, one not
        return [with_question(3, *shown, *maps, *said)]
    why = note(msg("visual.ex3_note", h=changed[0], other=1 - changed[0]))
    return [with_question(3, *shown, *maps, *said), after_answer(3, why)]


def judge_exercises(v, outputs, inputs, jctx):
    if jctx.views:  # no verdict here: `check` and `grade` skip the drawing
        v.visuals["view"] = (
            entropy_view(outputs) + diagonal_view(outputs, inputs) + heads_view(outputs, inputs)
        )
    v.expect("runs", True)


STEPS["heatmap"] = StepSpec(probe_heatmap, judge_heatmap, ("attention",))
STEPS["exercises"] = StepSpec(
    probe_exercises,
    judge_exercises,
    ("scaled_scores", "causal_mask", "attention_weights", "attention", *EXERCISES),
)
