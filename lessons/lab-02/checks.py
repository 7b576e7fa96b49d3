"""Checks for lesson lab-02: causal attention from the formula.

The seed's inputs first (batch 1, 2 heads, 6 tokens, head_dim 8, seed 7), then
sizes the notebook never tries, including other leading dimensions; then each
function once more at the seed's shape on new values, to catch state kept between
calls. `attention` is also run with the tutor's own helpers in place of the
learner's, so that a fault in a helper is blamed on the helper's step.
"""

import functools
import math
from operator import itemgetter

import torch
import torch.nn.functional as F

from tutor.kit import (
    LARGE_INPUT,
    Exercise,
    Helpers,
    SizedFunction,
    StepSpec,
    causal_mask_likely,
    close,
    entropy_sweep_view,
    exercise_functions,
    head_panel,
    head_variant_view,
    judge_bool_mask,
    judge_large_inputs,
    judge_large_scores_weights,
    judge_mask_honoured,
    judge_masked_weights,
    judge_training_story,
    large_scores_factor,
    mask_sizes_explainer,
    mask_variant_view,
    masked_softmax_likely,
    msg,
    of_the_inputs,
    other_mask,
    pair_printout,
    pair_weights,
    probe_entropy_sweep,
    probe_head_variant,
    probe_mask_variant,
    probe_training_story,
    require_close,
    require_pair,
    require_tensor,
    scale_from_weights_likely,
    scaled_scores_likely,
    shape_str,
    shapes_explainer,
    trimmed,
    weights_heatmap_step,
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


def sizes_explainer(fn, _outputs, first=None):
    """Why fn, right at the seed's q, k, v, is wrong at QKV_SHAPES[i]; first: a culprit to
    name before the shape (attention's wrong helper)."""
    return shapes_explainer((fn,), ("B", "H", "T", "d_k"), QKV_SHAPES, first=first)


# ---------------------------------------------------------------- scores


def qk(case) -> tuple:
    return case["q"], case["k"]


def scores_value(v, s, q, k):
    T = q.shape[-2]
    shape_likely = msg("likely.scores_transpose")
    s = require_tensor(v, "shape", SCORES.what, s, q.shape[:-1] + (T,), shape_likely)
    likely = lambda: scaled_scores_likely(s, q, k, lab_d_k=LAB_D_K)  # noqa: E731
    require_close(v, "values", SCORES.what, s, ref_scores(q, k), likely=likely)


SCORES = SizedFunction("scaled_scores", ("q", "k"), qk, scores_value, qkv_label, sizes_explainer)


# ---------------------------------------------------------------- mask


def mask_value(v, m, T):
    judge_bool_mask(
        v,
        m,
        future(T),
        what=f"causal_mask({T})",
        region=msg("region.future"),
        likely=lambda: causal_mask_likely(m, T),
        shape_likely=msg("likely.mask_shape"),
    )


MASK = SizedFunction(
    "causal_mask",
    (),
    lambda T: (T,),
    mask_value,
    lambda T: f"T={T}",
    lambda fn, out, _first=None: mask_sizes_explainer((fn,), out["calls"], MASK_SIZES),
    own_formula=False,
)


# ---------------------------------------------------------------- weights


def weights_args(case) -> dict:
    """attention_weights on the case's scores with the causal mask, then with another."""
    scores = ref_scores(case["q"], case["k"])
    return {"causal": (scores, future(scores.shape[-1])), "other": (scores, case["other_mask"])}


def large_scores(case):
    """The lab's scores stretched until the largest is the kit's LARGE_SCORES: made with the
    inputs, once, so that the judge's reference weights for them are computed once too."""
    s = _scores(case["q"], case["k"])
    return s * large_scores_factor(s)


def weights_value(v, w, scores, mask, name="causal"):
    what, defs = WEIGHTS.what, (WEIGHTS.fn,)
    w = require_tensor(v, "shape", what, w, scores.shape, msg("likely.weights_shape"))
    ref = lambda: ref_weights(scores, mask)  # noqa: E731
    values = lambda: judge_masked_weights(v, w, scores, mask, ref(), what=what, defs=defs)  # noqa: E731
    if name == "other":
        # A result kept from the call before (a memo keyed on the shape) ignores the mask too.
        judge_mask_honoured(v, w, mask, then=values, defs=defs)
    else:
        values()


WEIGHTS = SizedFunction(
    "attention_weights",
    ("scores", "mask"),
    weights_args,
    weights_value,
    qkv_label,
    sizes_explainer,
)


def large_call(ctx, fn, inputs) -> dict:
    large = inputs["large"]
    return trimmed(ctx.call(fn, large, future(large.shape[-1])))


def judge_large(v, call, inputs):
    large, fn = inputs["large"], WEIGHTS.fn
    mask = future(large.shape[-1])
    judge_large_scores_weights(v, call, large, mask, ref_weights(large, mask), fn=fn, defs=(fn,))


# ---------------------------------------------------------------- output


STAND_INS = {
    "scaled_scores": (_scores, ("q", "k")),
    "causal_mask": (_future, ("seq_len",)),
    "attention_weights": (_weights, ("scores", "mask")),
}


def qkv(case) -> tuple:
    return case["q"], case["k"], case["v"]


def helper_args(case) -> dict:
    """What attention gives each helper, in the lesson's step order."""
    q, k = qk(case)
    T = q.shape[-2]
    return {
        "scaled_scores": (q, k),
        "causal_mask": (T,),
        "attention_weights": (ref_scores(q, k), future(T)),
    }


HELPERS = Helpers((SCORES, MASK, WEIGHTS), STAND_INS, helper_args, "reference-helpers")


def probe_output(ctx, inputs):
    fn = ctx.get("attention")
    cases, c = inputs["cases"], inputs["cases"][0]
    # With correct helpers in place of the learner's, and the learner's helpers on the inputs
    # attention gives them, to name the first wrong one.
    out = OUTPUT.probe_composed(ctx, cases, inputs["again"], HELPERS)
    # The training story on the seed's case: k and v as a trained layer's outputs would be
    # (updated in place by a step), then `q.mul_(2)`.
    out["story"] = probe_training_story(
        ctx,
        fn,
        list(qkv(c)),
        inputs["story_g"],
        trained=(1, 2),
        pick=itemgetter(0),
        grads=False,  # a function in NumPy is right here: only values are judged
    )
    # v a thousand times larger (the scores as they were: large scores are their own check).
    out["large_x"] = ctx.call(fn, c["q"], c["k"], c["v"] * LARGE_INPUT)
    return out


def story_reference(inputs, _state, _p):
    return _weights(_scores(inputs[0], inputs[1]), future(inputs[0].shape[-2])) @ inputs[2]


def output_value(v, value, q, k, vv, defs=("attention",)):
    T = q.shape[-2]
    out, w = require_pair(
        v, "attention", value, vv.shape, q.shape[:-1] + (T,), "likely.returns_pair_lab02"
    )
    w = require_tensor(v, "shape", "weights", w, q.shape[:-1] + (T,), msg("likely.weights_shape"))
    out = require_tensor(v, "shape", "output", out, vv.shape, msg("likely.out_shape"))
    scores, defs = ref_scores(q, k), defs + ("attention_weights",)
    ref_w = ref_weights(scores, future(T))
    # The weights returned must be the ones used, not merely well-formed.
    w_likely = lambda: scale_from_weights_likely(w, q, k, future(T))  # noqa: E731
    judge_masked_weights(v, w, scores, future(T), ref_w, what="weights", defs=defs, likely=w_likely)

    def out_likely():
        if close(w, ref_w):
            return msg("likely.out_not_weights_v")
        found = masked_softmax_likely(w, scores, future(T), source=v.source, defs=defs)
        return w_likely() if found["key"] == "likely.unknown" else found

    # rtol=0: the notebook's own `error < 1e-5`.
    expected = ref_output(q, k, vv)
    require_close(v, "matches-pytorch", "output", out, expected, likely=out_likely, rtol=0)


OUTPUT = SizedFunction("attention", ("q", "k", "v"), qkv, output_value, qkv_label, sizes_explainer)


def judge_output(v, outputs, inputs, jctx):
    calls, cases, c = outputs["calls"], inputs["cases"], inputs["cases"][0]
    if jctx.views:
        ref = ref_weights(ref_scores(c["q"], c["k"]), future(c["q"].shape[-2]))
        w = pair_weights(calls[0], ref.shape)
        # Drawn before judging: a failing step is where the heatmap helps most.
        v.visuals["heatmaps"] = head_panel(w, ref, lambda h: msg("visual.head", h=h))
        expected = ref_output(*qkv(c))
        keys = ("visual.printout_title", "visual.printout_line", "visual.printout_value")
        v.visuals["view"] = pair_printout(calls[0], expected, *keys)
    OUTPUT.judge_composed(v, outputs, cases, inputs["again"], jctx, HELPERS)
    large = _output_once.__wrapped__(c["q"], c["k"], c["v"] * LARGE_INPUT)
    judge_large_inputs(v, outputs.get("large_x"), large, what=OUTPUT.what)
    judge_training_story(
        v,
        outputs.get("story"),
        list(qkv(c)),
        story_reference,
        inputs["story_g"],
        what=OUTPUT.what,
        names=list(OUTPUT.params),
        trained=(1, 2),
        grads=False,
    )


STEPS = {
    "scores": SCORES.step(lambda i: i["cases"], lambda i: i["again"]),
    "mask": MASK.step(lambda i: MASK_SIZES, lambda i: MASK_SIZES[0]),
    "weights": WEIGHTS.step(
        lambda i: i["cases"], lambda i: i["again"], extra=large_call, then=judge_large
    ),
    "output": StepSpec(probe_output, judge_output, ("attention",), own_formula="attention"),
}


# ---------------------------------------------------------------- experiments (no verdict, just data)

HEAD_DIMS = [8, 16, 32, 64, 128, 256, 512]
ENTROPY_T = 16


# The exercises: the learner's own change, made in exercise_scores, exercise_mask and exercise_q
# (the starter's end). A file without one gets the notebook's change, made by the tutor (own).


def _no_scale(q, k):
    return q @ k.transpose(-2, -1)


def _diagonal_zero(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=0)


def _head0_times4(q):
    q = q.clone()
    q[:, 0] = q[:, 0] * 4.0
    return q


NO_SCALE = Exercise(
    1,
    "exercise_scores",
    _no_scale,
    ("visual.ex1_task", "visual.ex1_unchanged", "visual.ex1_other", "visual.ex1_why"),
)
DIAGONAL = Exercise(
    2,
    "exercise_mask",
    _diagonal_zero,
    (
        *("visual.ex2_task", "visual.ex2_unchanged", "visual.ex2_other", "visual.ex2_why"),
        *("visual.ex2_shape", "visual.ex2_heatmap", "visual.ex2_no_nan"),
        *("visual.ex2_nan", "visual.ex2_nan_rows"),
    ),
)
ONE_HEAD = Exercise(
    3,
    "exercise_q",
    _head0_times4,
    (
        *("visual.ex3_task", "visual.ex3_unchanged", "visual.ex3_why", "visual.ex3_heads"),
        *("visual.ex3_bad_return", "visual.ex3_waiting", "visual.ex3_head"),
        *("visual.ex3_before", "visual.ex3_after"),
    ),
)
EXERCISES = (NO_SCALE, DIAGONAL, ONE_HEAD)


def probe_exercises(ctx, inputs):
    scores_fn, weights_fn = ctx.get("scaled_scores"), ctx.get("attention_weights")
    mask_fn, attention_fn = ctx.get("causal_mask"), ctx.get("attention")
    # A missing exercise is the tutor's change, called as the learner's would be.
    changed, missing = exercise_functions(ctx, {ex.fn: ex.own for ex in EXERCISES})
    out: dict = {"missing": missing, "entropy": []}
    g = torch.Generator().manual_seed(11)
    mask = ctx.call(mask_fn, ENTROPY_T, primary=True)["value"]
    if not ctx.views:  # the rest only feeds the view, which `check` and `grade` never draw
        return out
    qk = lambda hd: tuple(torch.randn(1, 2, ENTROPY_T, hd, generator=g) for _ in range(2))  # noqa: E731
    sweep = (scores_fn, changed[NO_SCALE.fn], weights_fn)
    out["entropy"] = probe_entropy_sweep(ctx, NO_SCALE, *sweep, HEAD_DIMS, qk, mask)
    c = inputs["cases"][0]
    T, scores = c["q"].shape[-2], ref_scores(c["q"], c["k"])
    out["mask"] = probe_mask_variant(ctx, changed[DIAGONAL.fn], weights_fn, T, scores)
    out["q"] = probe_head_variant(ctx, changed[ONE_HEAD.fn], attention_fn, *qkv(c))
    return out


def judge_exercises(v, outputs, inputs, jctx):
    if jctx.views:  # no verdict here: `check` and `grade` skip the drawing
        q, missing, weights = inputs["cases"][0]["q"], outputs["missing"], "attention_weights"
        columns = ["head_dim", msg("visual.ex1_with"), "", msg("visual.ex1_without"), ""]
        entropy = outputs["entropy"]
        v.visuals["view"] = [
            *entropy_sweep_view(NO_SCALE, entropy, missing, weights, columns, T=ENTROPY_T),
            *mask_variant_view(DIAGONAL, missing, outputs["mask"], future(q.shape[-2]), weights),
            *head_variant_view(ONE_HEAD, missing, q, outputs["q"], "attention"),
        ]
    v.expect("runs", True)


def seed_weights(inputs):
    c = inputs["cases"][0]
    return ref_weights(ref_scores(c["q"], c["k"]), future(c["q"].shape[-2]))


# The seed's plot: head 0 and head 1 side by side, the learner's own weights (the reference's
# where the learner's cannot be drawn; the check `returns` says why).
STEPS["heatmap"] = weights_heatmap_step(
    "attention",
    lambda inputs: qkv(inputs["cases"][0]),
    seed_weights,
    "visual.head_title",
    "likely.returns_pair_lab02",
)
STEPS["exercises"] = StepSpec(
    probe_exercises,
    judge_exercises,
    ("scaled_scores", "causal_mask", "attention_weights", "attention", *(e.fn for e in EXERCISES)),
)
