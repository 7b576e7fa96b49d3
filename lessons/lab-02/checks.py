"""Checks for lesson lab-02: causal attention from the formula.

The seed's inputs first (batch 1, 2 heads, 6 tokens, head_dim 8, seed 7), then
sizes the notebook never tries, including other leading dimensions.
"""

import math

import torch
import torch.nn.functional as F

from tutor.runner.judge_kit import (
    close, describe, first_nonfinite, inputs_unchanged, judge_other_sizes, likely_for_value, matching_mistake,
    max_error, msg, no_kernel, require_pair, require_ran, require_tensor, round_matrix, shape_str,
)
from tutor.runner.spec import StepSpec

# q, k, v shapes: the seed's, then others (a 3-D batch, one token, long and wide).
QKV_SHAPES = [(1, 2, 6, 8), (2, 3, 5, 16), (4, 9, 32), (1, 1, 1, 4), (1, 2, 40, 64)]
MASK_SIZES = [6, 1, 2, 7, 13]


def make_inputs():
    cases = []
    g = torch.Generator().manual_seed(7)
    for i, shape in enumerate(QKV_SHAPES):
        if i == 0:
            # Exactly the notebook's q, k, v: torch.manual_seed(7), then three randn calls.
            g = torch.Generator().manual_seed(7)
        q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
        T = shape[-2]
        # A mask that is not the causal one, to see that attention_weights uses the mask it is given.
        other = torch.rand(T, T, generator=g) < 0.4
        other.fill_diagonal_(False)
        cases.append({"q": q, "k": k, "v": v, "other_mask": other})
    return {"cases": cases}


def future(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def ref_scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def ref_weights(scores, mask):
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)


def qkv_label(case) -> str:
    return "q, k, v " + shape_str(case["q"].shape)


# ---------------------------------------------------------------- scores

def probe_scores(ctx, inputs):
    fn = ctx.get("scaled_scores")
    return {"calls": [ctx.call(fn, c["q"], c["k"], primary=i == 0) for i, c in enumerate(inputs["cases"])]}


def diagnose_scores(s, q, k):
    raw = q @ k.transpose(-2, -1)
    dk, T = q.shape[-1], q.shape[-2]
    for cand, likely in (
        (raw, msg("likely.scale_none")),
        (raw / dk, msg("likely.scale_d")),
        (raw * math.sqrt(dk), msg("likely.scale_multiplied")),
        (raw.transpose(-2, -1) / math.sqrt(dk), msg("likely.swapped_qk")),
        (raw / math.sqrt(T), msg("likely.scale_seq_len")),
        (raw / math.sqrt(8), msg("likely.hardcoded_dk")),
    ):
        if cand.shape == s.shape and torch.allclose(cand, s, atol=1e-5, rtol=1e-4):
            return likely
    return msg("likely.unknown")


def judge_scores_case(v, call, case):
    require_ran(v, call, "scaled_scores")
    q, k = case["q"], case["k"]
    T = q.shape[-2]
    s = require_tensor(v, "shape", "scaled_scores(q, k)", call["value"], q.shape[:-1] + (T,), msg("likely.scores_transpose"))
    expected = ref_scores(q, k)
    if not close(s, expected):
        err, where = max_error(s, expected)
        v.require("values", False, "check.values", what="scaled_scores(q, k)", err=err, where=shape_str(where),
                  tol="1e-5", likely=lambda: diagnose_scores(s, q, k))
    v.expect("values", True)
    inputs_unchanged(v, "scaled_scores", ["q", "k"], call["args"], (q, k))


def judge_scores(v, outputs, inputs, jctx):
    calls, cases = outputs["calls"], inputs["cases"]
    judge_scores_case(v, calls[0], cases[0])
    judge_other_sizes(v, calls, cases, [qkv_label(c) for c in cases], judge_scores_case)
    no_kernel(v, "scaled_scores", jctx.source, {"scaled_scores"}, jctx.kernels)


# ---------------------------------------------------------------- mask

def probe_mask(ctx, inputs):
    fn = ctx.get("causal_mask")
    return {"calls": [ctx.call(fn, T, primary=i == 0) for i, T in enumerate(MASK_SIZES)]}


def diagnose_mask(m, T):
    if m.shape != (T, T):
        return msg("likely.unknown")
    for cand, likely in (
        (torch.triu(torch.ones(T, T, dtype=torch.bool)), msg("likely.mask_diagonal_bool")),
        (torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1), msg("likely.mask_inverted")),
        (torch.tril(torch.ones(T, T, dtype=torch.bool)), msg("likely.mask_inverted")),
    ):
        if torch.equal(m, cand):
            return likely
    return msg("likely.unknown")


def judge_mask_case(v, call, T):
    require_ran(v, call, "causal_mask")
    m = call["value"]
    v.require("tensor", isinstance(m, torch.Tensor), "check.not_tensor", what=f"causal_mask({T})",
              got=describe(m), likely=likely_for_value(m))
    v.require("shape", tuple(m.shape) == (T, T), "check.shape", what=f"causal_mask({T})",
              expected=shape_str((T, T)), got=shape_str(m.shape), likely=msg("likely.mask_shape"))
    v.require("bool", m.dtype == torch.bool, "check.mask_dtype", T=T, got=str(m.dtype).removeprefix("torch."))
    expected = future(T)
    if not torch.equal(m, expected):
        row = int((m != expected).any(-1).nonzero()[0])
        as_text = lambda r: " ".join("T" if b else "F" for b in r.tolist())  # noqa: E731
        v.require("values", False, "check.mask_values", T=T, row=row, got=as_text(m[row]),
                  expected=as_text(expected[row]), likely=lambda: diagnose_mask(m, T))
    v.expect("values", True)


def judge_mask(v, outputs, inputs, jctx):
    calls = outputs["calls"]
    judge_mask_case(v, calls[0], MASK_SIZES[0])
    judge_other_sizes(v, calls, MASK_SIZES, [f"T={T}" for T in MASK_SIZES], judge_mask_case)


# ---------------------------------------------------------------- weights

def probe_weights(ctx, inputs):
    fn = ctx.get("attention_weights")
    calls = []
    for i, c in enumerate(inputs["cases"]):
        scores = ref_scores(c["q"], c["k"])
        T = scores.shape[-1]
        calls.append({
            "causal": ctx.call(fn, scores, future(T), primary=i == 0),
            "other": ctx.call(fn, scores, c["other_mask"], primary=i == 0),
        })
    return {"calls": calls}


def diagnose_weights(w, scores, mask):
    hidden_diagonal = mask | torch.eye(mask.shape[-1], dtype=torch.bool)
    return matching_mistake(w, [
        (lambda: torch.softmax(scores, -1).masked_fill(mask, 0.0), msg("likely.mask_after_softmax")),
        (lambda: torch.softmax(scores.masked_fill(mask, 0.0), -1), msg("likely.fill_zero")),
        (lambda: torch.softmax(scores, -1), msg("likely.no_mask")),
        (lambda: torch.softmax(scores.masked_fill(mask, float("-inf")), -2), msg("likely.softmax_dim")),
        (lambda: torch.softmax(scores.masked_fill(~mask, float("-inf")), -1), msg("likely.mask_inverted_fill")),
        (lambda: torch.softmax(scores.masked_fill(hidden_diagonal, float("-inf")), -1), msg("likely.mask_diagonal")),
    ])


def judge_weights_masked(v, w, scores, mask, what):
    bad = first_nonfinite(w)
    v.require("finite", bad is None, "check.not_finite", what=what, count=bad[1] if bad else 0,
              where=shape_str(bad[0]) if bad else "", likely=lambda: diagnose_weights(w, scores, mask))
    sums = w.double().sum(-1)
    ok = torch.isclose(sums, torch.ones_like(sums), atol=1e-5)
    if not ok.all():
        where = tuple(int(i) for i in (~ok).nonzero()[0])
        v.require("rows-sum-to-1", False, "check.rows_sum", row=where[-1], batch=shape_str(where[:-1]),
                  got=float(sums[where]), likely=lambda: diagnose_weights(w, scores, mask))
    v.expect("rows-sum-to-1", True)
    hidden = w.masked_select(mask.expand_as(w))
    if torch.count_nonzero(hidden):
        where = tuple(int(i) for i in ((w != 0) & mask).nonzero()[0])
        v.require("future-is-zero", False, "check.future", row=where[-2], col=where[-1], got=float(w[where]),
                  likely=lambda: diagnose_weights(w, scores, mask))
    v.expect("future-is-zero", True)


def judge_weights_case(v, call, case):
    scores = ref_scores(case["q"], case["k"])
    T = scores.shape[-1]
    for name, mask in (("causal", future(T)), ("other", case["other_mask"])):
        require_ran(v, call[name], "attention_weights")
        w = require_tensor(v, "shape", "attention_weights(scores, mask)", call[name]["value"], scores.shape,
                           msg("likely.weights_shape"))
        if name == "other" and torch.count_nonzero(w.masked_select(mask.expand_as(w))):
            where = tuple(int(i) for i in ((w != 0) & mask).nonzero()[0])
            v.require("uses-given-mask", False, "check.mask_ignored", row=where[-2], col=where[-1], got=float(w[where]))
        judge_weights_masked(v, w, scores, mask, "attention_weights(scores, mask)")
        expected = ref_weights(scores, mask)
        if not close(w, expected):
            err, where = max_error(w, expected)
            v.require("values", False, "check.values", what="attention_weights(scores, mask)", err=err,
                      where=shape_str(where), tol="1e-5", likely=lambda: diagnose_weights(w, scores, mask))
        v.expect("values", True)
        if name == "other":
            v.expect("uses-given-mask", True)
        inputs_unchanged(v, "attention_weights", ["scores", "mask"], call[name]["args"], (scores, mask))


def judge_weights(v, outputs, inputs, jctx):
    calls, cases = outputs["calls"], inputs["cases"]
    judge_weights_case(v, calls[0], cases[0])
    judge_other_sizes(v, calls, cases, [qkv_label(c) for c in cases], judge_weights_case)
    no_kernel(v, "attention_weights", jctx.source, {"attention_weights"}, jctx.kernels)


# ---------------------------------------------------------------- output

def probe_output(ctx, inputs):
    fn = ctx.get("attention")
    return {"calls": [ctx.call(fn, c["q"], c["k"], c["v"], primary=i == 0) for i, c in enumerate(inputs["cases"])]}


def judge_output_case(v, call, case):
    require_ran(v, call, "attention")
    q, k, vv = case["q"], case["k"], case["v"]
    T = q.shape[-2]
    out, w = require_pair(v, "attention", call["value"], vv.shape, q.shape[:-1] + (T,), "likely.returns_pair_lab02")
    w = require_tensor(v, "shape", "weights", w, q.shape[:-1] + (T,), msg("likely.weights_shape"))
    out = require_tensor(v, "shape", "output", out, vv.shape, msg("likely.out_shape"))
    scores = ref_scores(q, k)
    judge_weights_masked(v, w, scores, future(T), "weights")
    ref_w = ref_weights(scores, future(T))
    if not close(w, ref_w):  # the weights returned must be the ones used, not merely well-formed
        err, where = max_error(w, ref_w)
        v.require("values", False, "check.values", what="weights", err=err, where=shape_str(where), tol="1e-5",
                  likely=lambda: diagnose_scores_from_weights(w, q, k))
    v.expect("values", True)
    expected = F.scaled_dot_product_attention(q, k, vv, is_causal=True)
    err, where = max_error(out, expected)
    if not err < 1e-5:
        likely = msg("likely.out_not_weights_v") if close(w, ref_w) else diagnose_weights(w, scores, future(T))
        if likely["key"] == "likely.unknown":
            likely = diagnose_scores_from_weights(w, q, k)
        v.require("matches-pytorch", False, "check.values", what="output", err=err, where=shape_str(where),
                  tol="1e-5", likely=likely)
    v.expect("matches-pytorch", True)
    inputs_unchanged(v, "attention", ["q", "k", "v"], call["args"], (q, k, vv))


def diagnose_scores_from_weights(w, q, k):
    raw = q @ k.transpose(-2, -1)
    T, dk = q.shape[-2], q.shape[-1]
    for cand, likely in ((raw, msg("likely.scale_none")), (raw / dk, msg("likely.scale_d"))):
        if torch.allclose(ref_weights(cand, future(T)), w, atol=1e-5):
            return likely
    return msg("likely.unknown")


def judge_output(v, outputs, inputs, jctx):
    calls, cases = outputs["calls"], inputs["cases"]
    ref = ref_weights(ref_scores(cases[0]["q"], cases[0]["k"]), future(cases[0]["q"].shape[-2]))
    w = weights_of(calls[0])
    w = w if w is not None and w.shape == ref.shape else None
    # Drawn before judging: a failing step is where the heatmap helps most.
    v.visuals["heatmaps"] = [
        {"label": {"key": "visual.head", "params": {"h": h}},
         "learner": round_matrix(w[0, h]) if w is not None else None, "reference": round_matrix(ref[0, h])}
        for h in range(ref.shape[1])
    ]
    judge_output_case(v, calls[0], cases[0])
    judge_other_sizes(v, calls, cases, [qkv_label(c) for c in cases], judge_output_case)
    no_kernel(v, "attention", jctx.source, {"attention"}, jctx.kernels)


def weights_of(call):
    value = call.get("value")
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], torch.Tensor):
        return value[1]
    return None


STEPS = {
    "scores": StepSpec(probe_scores, judge_scores, ("scaled_scores",)),
    "mask": StepSpec(probe_mask, judge_mask, ("causal_mask",)),
    "weights": StepSpec(probe_weights, judge_weights, ("attention_weights",)),
    "output": StepSpec(probe_output, judge_output, ("attention",)),
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
    w = weights_of(outputs["call"])
    ok = w is not None and w.shape == ref.shape
    v.visuals["heatmaps"] = [
        {"label": {"key": "visual.head_title", "params": {"h": h}},
         "learner": round_matrix(w[0, h]) if ok else None, "reference": round_matrix(ref[0, h])}
        for h in range(ref.shape[1])
    ]
    v.expect("returns", ok, "check.returns_pair", fn="attention", got=describe(outputs["call"].get("value")),
             likely=msg("likely.returns_pair_lab02"))


def probe_exercises(ctx, inputs):
    scores_fn, mask_fn = ctx.get("scaled_scores"), ctx.get("causal_mask")
    weights_fn, attention_fn = ctx.get("attention_weights"), ctx.get("attention")
    g = torch.Generator().manual_seed(11)
    out = {"entropy": []}
    mask = ctx.call(mask_fn, ENTROPY_T, primary=True)["value"]
    for hd in HEAD_DIMS:
        q, k = torch.randn(1, 2, ENTROPY_T, hd, generator=g), torch.randn(1, 2, ENTROPY_T, hd, generator=g)
        scaled = ctx.call(scores_fn, q, k)
        with_scale = ctx.call(weights_fn, scaled.get("value"), mask) if "value" in scaled else scaled
        # Without the scale: the raw dot products, through the learner's own masked softmax.
        without = ctx.call(weights_fn, q @ k.transpose(-2, -1), mask)
        out["entropy"].append({"hd": hd, "with": with_scale.get("value"), "without": without.get("value")})
    c = inputs["cases"][0]
    T = c["q"].shape[-2]
    diag = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=0)
    out["diagonal"] = ctx.call(weights_fn, ref_scores(c["q"], c["k"]), diag)
    changed = c["q"].clone()
    changed[:, 0] = changed[:, 0] * 4.0  # sharpen head 0 only
    shuffled = c["q"].clone()
    shuffled[:, 0] = shuffled[:, 0, torch.randperm(T, generator=g)]
    out["before"] = ctx.call(attention_fn, c["q"], c["k"], c["v"])
    out["scaled_q"] = ctx.call(attention_fn, changed, c["k"], c["v"])
    out["shuffled_q"] = ctx.call(attention_fn, shuffled, c["k"], c["v"])
    return out


def mean_entropy(w):
    """Mean over rows of −Σ w·log w, skipping rows that are not finite."""
    if not isinstance(w, torch.Tensor):
        return None
    w = w.double()
    ent = -(w * torch.log(w.clamp_min(1e-300))).sum(-1)
    ent = ent[torch.isfinite(ent)]
    return round(float(ent.mean()), 4) if ent.numel() else None


def judge_exercises(v, outputs, inputs, jctx):
    ent = [{"hd": e["hd"], "with": mean_entropy(e["with"]), "without": mean_entropy(e["without"])}
           for e in outputs["entropy"]]
    diag = outputs["diagonal"].get("value")
    visuals = {"entropy": ent}
    if isinstance(diag, torch.Tensor) and diag.dim() == 4:
        visuals["diagonal"] = round_matrix(diag[0, 0])
        visuals["diagonal_nan_rows"] = [i for i, row in enumerate(diag[0, 0]) if not torch.isfinite(row).all()]
    heads = {}
    for name in ("before", "scaled_q", "shuffled_q"):
        w = weights_of(outputs[name])
        if w is not None and w.dim() == 4:
            heads[name] = [round_matrix(w[0, h]) for h in range(w.shape[1])]
    visuals["heads"] = heads
    v.visuals["exercises"] = visuals
    v.expect("runs", True)


STEPS["heatmap"] = StepSpec(probe_heatmap, judge_heatmap, ("attention",))
STEPS["exercises"] = StepSpec(probe_exercises, judge_exercises,
                              ("scaled_scores", "causal_mask", "attention_weights", "attention"))
