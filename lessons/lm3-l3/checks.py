"""Checks for lesson lm3-l3: causal multi-head attention in PyTorch.

Every probe calls the learner's code at the notebook's sizes first (the primary
call), then at other sizes, so code that only works for B=2, T=6, d=8 fails.
"""

import functools

import torch
import torch.nn.functional as F

from tutor.kit import (
    DTYPES,
    LARGE_INPUT,
    StepSpec,
    after_answer,
    attention_weights,
    build_layer,
    causal_future,
    changed_input,
    chosen_settings,
    close,
    constructor_facts,
    declared_settings,
    discarded_call,
    fixed_dropout,
    future_region,
    judge_attention_weights,
    judge_called_again,
    judge_dropout_modes,
    judge_large_inputs,
    judge_large_output,
    judge_layer_again,
    judge_layer_constructor,
    judge_layer_state,
    judge_layout,
    judge_leak_map,
    judge_named_shapes,
    judge_seeded_layer,
    judge_sized_cases,
    judge_training_story,
    judged,
    large_input_weights,
    large_scores_check,
    large_scores_factor,
    large_scores_likely,
    large_scores_weights,
    last_dim_of,
    leak_map_panel,
    linear_layout,
    literal_explanation,
    load_weights,
    masked_softmax,
    masked_softmax_mistakes,
    matching_mistake,
    measure_score_memory,
    memory_view,
    module_state,
    moved_before,
    msg,
    multi_head_mistakes,
    no_foreign,
    no_kernel,
    note,
    of_the_inputs,
    out_of_pair,
    pair_output,
    pair_weights,
    probe_dropout_modes,
    probe_layer_story,
    probe_leak_map,
    probe_seeded_layer,
    probe_training_story,
    reference_grads,
    reference_leak_outputs,
    require_again_right,
    require_close,
    require_finite,
    require_no_leak,
    require_pair,
    require_pair_output,
    require_ran,
    require_tensor,
    seq_lens,
    shapes_of,
    size_explanation,
    state_dict_copy,
    trace_view,
    traced_forward,
    weights_from_state,
    weights_panels,
)

# (B, T, d_in, d_k): the notebook's first, then sizes it never tries.
# The last ones are drawn after every other input (so the others keep their values): far past
# the notebook's lengths, odd, and (multi-head) the whole context length, past any branch on T.
SINGLE_SIZES = [(2, 6, 8, 4), (3, 11, 16, 5), (1, 1, 7, 3), (2, 37, 12, 16), (1, 97, 8, 8)]
SINGLE_FIRST = 4  # drawn first, in make_inputs' first loop
SINGLE_NAMES = ("B", "T", "d_in", "d_k")
# (d_in, d_out, n_heads, context_length, B, T)
MULTI_SIZES = [
    (8, 8, 2, 16, 2, 6),
    (12, 24, 3, 40, 3, 33),
    (5, 16, 4, 8, 1, 8),
    (8, 8, 1, 16, 2, 1),
    (8, 16, 4, 64, 1, 64),
]
MULTI_NAMES = ("d_in", "d_out", "n_heads", "context_length", "B", "T")
MULTI_FIRST = 4
# The leakage map changes every token in turn, one call each: it is probed up to this T (the
# lab's 6 and the sizes past it), the longer sizes are judged by their last and middle tokens.
# At every size it would be 55 calls a step, and a file that prints a lot would time out.
LEAK_MAP_MAX_T = 16
# (B, T, H, hd)
SHAPE_SIZES = [(2, 6, 2, 4), (3, 5, 4, 8), (1, 7, 3, 2)]
SHAPE_KEYS = (
    "projected_q",
    "q_split_into_heads",
    "q_per_head",
    "scores",
    "weights",
    "context_per_head",
    "context_merged",
)


def make_inputs(seed=0):
    """Deterministic; made in the child before learner code loads, and again in the judge.
    seed: 0 for the lab's own tensors; another draws them afresh (`attn-tutor grade --seed`)."""
    g = torch.Generator().manual_seed(0 + 1_000_003 * seed)
    single = [single_case(g, size) for size in SINGLE_SIZES[:SINGLE_FIRST]]
    multi = [multi_case(g, size) for size in MULTI_SIZES[:MULTI_FIRST]]
    # Drawn after the others, which stay as they were: at the notebook's size, a second set of
    # weights (loaded into the same layer), the gradient's direction, and new values for a
    # second call of causal_attention.
    d_in, d_out, H, ctx, B, T = MULTI_SIZES[0]
    again = {
        "w": {
            k: torch.randn(t.shape, generator=g) / (t.shape[-1] ** 0.5 if t.dim() == 2 else 10)
            for k, t in multi[0]["w"].items()
        },
        "g": torch.randn(B, T, d_out, generator=g),
    }
    B, T, d, dk = SINGLE_SIZES[0]
    single_again = {
        "x": torch.randn(B, T, d, generator=g),
        "W": tuple(torch.randn(d, dk, generator=g) / d**0.5 for _ in range(3)),
    }
    # Last of all: the change made to one token at a time for the leakage maps.
    leak_delta = {
        "single": torch.randn(SINGLE_SIZES[0][0], SINGLE_SIZES[0][2], generator=g) * 3,
        "multi": torch.randn(MULTI_SIZES[0][4], MULTI_SIZES[0][0], generator=g) * 3,
    }
    trace_x = torch.randn(TRACE_SIZE[4], TRACE_SIZE[5], TRACE_SIZE[0], generator=g)
    # After every other draw: the change for each size's full leakage map (the notebook's size
    # keeps the one its view draws with).
    maps = [leak_delta["single"]] + [
        torch.randn(B, d, generator=g) * 3 for B, _T, d, _dk in SINGLE_SIZES[1:SINGLE_FIRST]
    ]
    multi_maps = [
        torch.randn(B, d, generator=g) * 3 for d, _o, _H, _c, B, _T in MULTI_SIZES[:MULTI_FIRST]
    ]
    B, T, _d, dk = SINGLE_SIZES[0]
    single_story_g = torch.randn(B, T, dk, generator=g)  # last: every draw above stays as it was
    for size in SINGLE_SIZES[SINGLE_FIRST:]:
        single.append(single_case(g, size))
        maps.append(torch.randn(size[0], size[2], generator=g) * 3)
    for size in MULTI_SIZES[MULTI_FIRST:]:
        multi.append(multi_case(g, size))
        multi_maps.append(torch.randn(size[4], size[0], generator=g) * 3)
    return {
        "leak_maps": maps,
        "single_story_g": single_story_g,
        "multi_leak_maps": multi_maps,
        "single": single,
        "multi": multi,
        "multi_again": again,
        "single_again": single_again,
        "leak_delta": leak_delta,
        "trace_x": trace_x,
        "single_large": large_scores_case(single[0]),
        "multi_large": large_scores_layer(multi[0], MULTI_SIZES[0][2]),
    }


def large_inputs(x, Wq, Wk, Wv) -> tuple:
    """x a thousand times larger, Wq and Wk as much smaller: the scores as they were (large
    scores are their own check), the values and the output a thousand times larger."""
    s = LARGE_INPUT
    return x * s, Wq / s, Wk / s, Wv


def single_case(g, size) -> dict:
    B, T, d, dk = size
    x = torch.randn(B, T, d, generator=g)
    W = tuple(torch.randn(d, dk, generator=g) / d**0.5 for _ in range(3))
    x2 = x.clone()
    x2[:, -1, :] = torch.randn(B, d, generator=g) * 3
    x3 = x.clone()
    x3[:, T // 2, :] = torch.randn(B, d, generator=g) * 3
    return {"x": x, "W": W, "x_last": x2, "x_mid": x3}


def multi_case(g, size) -> dict:
    d_in, d_out, _H, _ctx, B, T = size
    x = torch.randn(B, T, d_in, generator=g)
    x2 = x.clone()
    x2[:, -1, :] = torch.randn(B, d_in, generator=g) * 3
    w = attention_weights(g, d_in, d_out)
    # The same layer called again on a prefix (at the notebook's size): any length up to
    # context_length must work.
    return {"x": x, "x_last": x2, "x_prefix": x[:, : max(1, T // 2)].clone(), "w": w}


def large_scores_case(case) -> dict:
    """The lab's case with Wq stretched until its largest score is the kit's LARGE_SCORES."""
    x, (Wq, Wk, Wv) = case["x"], case["W"]
    scores = (x @ Wq) @ (x @ Wk).transpose(-2, -1) / Wq.shape[1] ** 0.5
    stretch = large_scores_factor(scores)
    return {"x": x, "W": (Wq * stretch, Wk, Wv), "scores": scores * stretch}


def large_scores_layer(case, H) -> dict:
    """As large_scores_case, for the layer's W_q (the largest score of any head)."""
    return {"x": case["x"], "w": large_scores_weights(case["x"], case["w"], H)}


# ---------------------------------------------------------------- leakage maps
def single_leak_entry(outputs_map, base_call, case, delta) -> list:
    """The leakage map's panel entry, or none when the probe's calls did not all come back (a
    value so large that the report was cut before them)."""
    moved = outputs_map.get("value") if isinstance(outputs_map, dict) else None
    if moved is None:
        return []
    return [
        leak_map_panel(
            msg("visual.leak_map"),
            pair_output(base_call),
            moved,
            *single_leak_reference(case["x"], *case["W"], delta),
        )
    ]


@of_the_inputs
def single_leak_reference(x, Wq, Wk, Wv, delta):
    """The reference's outputs for x and for each of token_changes(x, delta): the same for every
    save, so computed once (uncached below: the changed copies are new tensors each time)."""
    return reference_leak_outputs(
        lambda x: reference_single.__wrapped__(x, Wq, Wk, Wv)[0], x, delta
    )


# ---------------------------------------------------------------- single head


def probe_single(ctx, inputs):
    fn = ctx.get("causal_attention")
    results = []
    for i, case in enumerate(inputs["single"]):
        results.append(ctx.call(fn, case["x"], *case["W"], primary=i == 0))
    again = inputs[
        "single_again"
    ]  # the notebook's size once more, new values: nothing kept from before
    seed = inputs["single"][0]
    large = inputs["single_large"]
    return {
        "calls": results,
        "again": ctx.call(fn, again["x"], *again["W"]),
        "large": ctx.call(fn, large["x"], *large["W"]),
        "large_x": ctx.call(fn, *large_inputs(seed["x"], *seed["W"])),
        # The weights as a layer's parameters: updated in place by the story's step.
        "story": probe_training_story(
            ctx,
            fn,
            [seed["x"], *seed["W"]],
            inputs["single_story_g"],
            trained=(1, 2, 3),
            pick=out_of_pair,
            grads=False,  # a function in NumPy is right here: only values are judged
        ),
        "leak_map": probe_leak_map(
            ctx, fn, seed["x"], inputs["leak_delta"]["single"], *seed["W"], pick=out_of_pair
        )
        if ctx.views
        else None,
    }


@of_the_inputs
def reference_single(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = (q @ k.transpose(-2, -1)) / k.shape[-1] ** 0.5
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return out, weights


def diagnose_weights(w, x, Wq, Wk, Wv):
    """Name the likely mistake behind wrong weights by rebuilding the usual wrong versions: the
    kit's masked-softmax mistakes on the scaled scores, then this step's mask, scale and order."""
    T, d_in, dk = x.shape[1], x.shape[2], Wq.shape[1]
    raw = (x @ Wq) @ (x @ Wk).transpose(-2, -1)
    scaled, future, inf = raw / dk**0.5, future_region(T), float("-inf")
    ones = torch.ones(T, T, dtype=torch.bool)
    flipped = msg("likely.mask_transposed")
    scales = [
        (d_in**0.5, msg("likely.scale_d_in", d_in=d_in, d_k=dk)),
        (1.0, msg("likely.scale_none")),
        (dk, msg("likely.scale_d")),
        (T**0.5, msg("likely.scale_seq_len", T=T, d_k=dk)),
    ]  # where √d_in or √T is √d_k, that mistake cannot show
    candidates = [
        *masked_softmax_mistakes(scaled, future),
        *(
            (lambda m=m: masked_softmax(scaled, m), flipped)
            for m in (future.T, ones.tril(1), ones.tril())
        ),
        (lambda: masked_softmax(scaled, ones.triu(2)), msg("likely.mask_offset")),
        *((lambda s=s: masked_softmax(raw / s, future), m) for s, m in scales if s != dk**0.5),
        (lambda: masked_softmax(raw, future) / dk**0.5, msg("likely.scale_after_softmax")),
        (lambda: masked_softmax(scaled.transpose(-2, -1), future), msg("likely.swapped_qk")),
        (
            lambda: torch.softmax(scaled, -1).masked_fill(future, inf),
            msg("likely.inf_after_softmax"),
        ),
        (
            lambda: torch.softmax(scaled + future.float() * inf, -1),
            msg("likely.additive_mask_nan"),
        ),
        (
            lambda: torch.softmax(scaled.masked_fill(future, inf), -2).masked_fill(future, inf),
            msg("likely.inf_after_softmax"),
        ),
    ]
    return matching_mistake(w, candidates)


def judge_single_case(v, call, case, size):
    x, (Wq, Wk, Wv) = case["x"], case["W"]
    B, T, d, dk = size
    require_ran(v, call, "causal_attention")
    out, w = require_pair(
        v, "causal_attention", call["value"], (B, T, dk), (B, T, T), "likely.returns_pair"
    )
    ref_out, ref_w = reference_single(x, Wq, Wk, Wv)
    w = require_tensor(v, "shape", "weights", w, (B, T, T), msg("likely.weights_shape"))
    out = require_tensor(v, "shape", "out", out, (B, T, dk), msg("likely.out_shape"))
    # Before the values: wrong values from inputs changed in place are that mistake, not another.
    changed = changed_input(
        v, "causal_attention", ["x", "Wq", "Wk", "Wv"], call["args"], (x, Wq, Wk, Wv)
    )
    if changed:
        diagnose = lambda: msg("likely.mutated_input", arg=changed)  # noqa: E731
    else:
        diagnose = lambda: unless_discarded(  # noqa: E731
            diagnose_weights(w, x, Wq, Wk, Wv), v.source, "causal_attention"
        )
    # exp(-100) is tiny but not 0: a large negative fill instead of -inf.
    tiny = None if changed else msg("likely.fill_large_negative")
    judge_attention_weights(
        v, w, [causal_future(T)], what="weights", likely=diagnose, tiny_likely=tiny
    )
    v.require(
        "first-token",
        torch.allclose(w[:, 0, 0].double(), torch.ones(B, dtype=torch.float64)),
        "check.first_row",
        got=float(w[0, 0, 0]),
        likely=diagnose,
    )
    require_close(v, "matches-pytorch", "weights", w, ref_w, likely=diagnose)
    out_likely = (
        msg("likely.mutated_input", arg=changed) if changed else msg("likely.out_not_weights_v")
    )
    require_close(v, "matches-pytorch", "out", out, ref_out, likely=out_likely)


def explain_single(seed, size, source):
    """Why causal_attention fails at a size past the notebook's (B, T, d_in, d_k)."""
    return size_explanation(source, ("causal_attention",), SINGLE_NAMES, seed, size)


def explain_multi(seed, size, source):
    """Why the layer fails at (d_in, d_out, n_heads, context_length, B, T): a number written in,
    then d_in read where d_out or head_dim is needed (equal at the notebook's sizes), then the rest."""
    names = (*MULTI_NAMES, "head_dim")
    seed, size = tuple(seed) + (seed[1] // seed[2],), tuple(size) + (size[1] // size[2],)
    defs = ("CausalMultiHeadAttention",)
    literal = literal_explanation(source, defs, names, seed, size)
    if literal:
        return literal
    if seed[0] == seed[1] and size[0] != size[1]:
        found = last_dim_of(source, frozenset(defs), 1)  # forward(self, x): the width of x
        if found:
            return msg(
                "likely.width_d_in", line=found.line, code=found.code, d_in=size[0], d_out=size[1]
            )
    return size_explanation(source, defs, names, seed, size)


def judge_single(v, outputs, inputs, jctx):
    calls = outputs["calls"]
    seed = inputs["single"][0]
    B, T = SINGLE_SIZES[0][:2]
    # Drawn before judging: a failing step is where the heatmap helps most.
    if jctx.views:
        w = pair_weights(calls[0], (B, T, T))
        ref_w = reference_single(seed["x"], *seed["W"])[1]
        v.visuals["heatmaps"] = weights_panels(
            w, ref_w, lambda b: msg("visual.batch", n=b)
        ) + single_leak_entry(
            outputs.get("leak_map"), calls[0], seed, inputs["leak_delta"]["single"]
        )
    judge_single_case(v, calls[0], seed, SINGLE_SIZES[0])
    judge_sized_cases(
        v, calls, inputs["single"], SINGLE_SIZES, SINGLE_NAMES, judge_single_case, explain_single
    )
    no_kernel(v, "causal_attention", jctx.source, {"causal_attention"}, jctx.kernels)
    judge_called_again(
        v,
        "causal_attention",
        {"call": outputs["again"]},
        None,
        judge_single_case,
        inputs["single_again"],
        SINGLE_SIZES[0],
        source="",
    )
    judge_large_scores(v, outputs["large"], inputs["single_large"])
    judge_large_inputs(
        v,
        outputs.get("large_x"),
        reference_single.__wrapped__(*large_inputs(seed["x"], *seed["W"]))[0],
        what="causal_attention(x, Wq, Wk, Wv)",
    )
    judge_training_story(
        v,
        outputs.get("story"),
        [seed["x"], *seed["W"]],
        lambda ins, _state, _p: reference_single.__wrapped__(*ins)[0],
        inputs["single_story_g"],
        what="causal_attention(x, Wq, Wk, Wv)",
        names=["x", "Wq", "Wk", "Wv"],
        trained=(1, 2, 3),
        grads=False,
    )


def judge_large_scores(v, call, case):
    """Judged like the lab's call; NaN or rows that do not sum to 1 there are the softmax's fault."""

    def likely():
        value = call.get("value")
        w = value[1] if isinstance(value, tuple) and len(value) == 2 else None
        if not isinstance(w, torch.Tensor):
            return None
        T = case["x"].shape[1]
        return large_scores_likely(
            w, case["scores"], torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        )

    large_scores_check(
        v,
        judged("", judge_single_case, call, case, SINGLE_SIZES[0]),
        "check.large_scores",
        overflow=("finite", "rows-sum-to-1"),
        likely=likely,
    )


# ---------------------------------------------------------------- leakage


def probe_leakage(ctx, inputs):
    fn = ctx.get("causal_attention")
    calls = []
    for i, case in enumerate(inputs["single"]):
        W = case["W"]
        calls.append(
            {
                "base": ctx.call(fn, case["x"], *W, primary=i == 0),
                "last": ctx.call(fn, case["x_last"], *W, primary=i == 0),
                "mid": ctx.call(fn, case["x_mid"], *W, primary=i == 0),
                # Every token changed in turn: the verdict's map, and the view's at the lab's size.
                "map": probe_leak_map(
                    ctx, fn, case["x"], inputs["leak_maps"][i], *W, pick=out_of_pair
                )
                if case["x"].shape[1] <= LEAK_MAP_MAX_T
                else None,
            }
        )
    return {"calls": calls}


@of_the_inputs
def unmasked(x, Wq, Wk, Wv):
    """The notebook's broken layer: no mask at all."""
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    w = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
    return w @ v


def judge_leakage_case(v, calls, case, size):
    B, T, d, dk = size
    outs = {}
    for name in ("base", "last", "mid"):
        call = calls[name]
        require_ran(v, call, "causal_attention")
        value = call.get("value")
        out = require_pair_output(v, call, "causal_attention", (B, T, dk), "likely.returns_pair")
        require_finite(
            v,
            "out",
            out,
            likely=lambda value=value: (
                diagnose_weights(value[1], case["x"], *case["W"])
                if isinstance(value[1], torch.Tensor) and value[1].shape == (B, T, T)
                else msg("likely.unknown")
            ),
        )
        outs[name] = out
    for name, pos in (("last", T - 1), ("mid", T // 2)):
        require_no_leak(v, outs["base"], outs[name], pos, likely=msg("likely.no_leak"))
    if calls["map"] is not None:
        require_ran(v, calls["map"], "causal_attention")
        moved = calls["map"].get("value")
        judge_leak_map(v, outs["base"], moved, [(msg("region.future"), future_region(T))])
    # No leak is also what a function that returns its first answer again shows.
    if close(outs["base"], reference_single(case["x"], *case["W"])[0]):
        for name in ("last", "mid"):
            ref = reference_single(case[f"x_{name}"], *case["W"])[0]
            what = msg("value.again_new_x")
            require_close(v, "call-again", what, outs[name], ref, likely=msg("likely.kept_state"))
        v.expect("call-again", True)


def judge_leakage(v, outputs, inputs, jctx):
    calls = outputs["calls"]
    seed = inputs["single"][0]
    # Drawn before judging: a leak is where the map helps most.
    if jctx.views:
        v.visuals["heatmaps"] = single_leak_entry(
            calls[0].get("map"), calls[0]["base"], seed, inputs["leak_delta"]["single"]
        )
    judge_leakage_case(v, calls[0], seed, SINGLE_SIZES[0])
    if jctx.views:
        yours = moved_before(
            pair_output(calls[0]["base"]), pair_output(calls[0]["last"]), SINGLE_SIZES[0][1] - 1
        )
        broken = moved_before(
            unmasked(seed["x"], *seed["W"]),
            unmasked(seed["x_last"], *seed["W"]),
            SINGLE_SIZES[0][1] - 1,
        )
        # The notebook's own demonstration that the test catches an unmasked layer, shown beside the learner's figure.
        v.visuals["leak"] = {"yours": yours, "unmasked": broken}
    judge_sized_cases(
        v, calls, inputs["single"], SINGLE_SIZES, SINGLE_NAMES, judge_leakage_case, explain_single
    )
    no_foreign(v, "causal_attention", jctx.kernels)


# ---------------------------------------------------------------- multi-head

SIGNATURE = [
    ["d_in", None],
    ["d_out", None],
    ["n_heads", None],
    ["context_length", None],
    ["dropout", 0.0],
]
DROPOUT_P = 0.3  # with dropout in train mode: judged with fixed_dropout in place of torch's
NOTEBOOK_SEED = 1  # self-check 3: torch.manual_seed(1), then the layer with its own initial weights
KEYWORDS = [name for name, _ in SIGNATURE[:4]]  # the layer built as the notebook does
PARAM_NAMES = {
    "W_q.weight": "W_q",
    "W_k.weight": "W_k",
    "W_v.weight": "W_v",
    "out_proj.weight": "out_w",
    "out_proj.bias": "out_b",
}

# ---------------------------------------------------------------- shape trace

# (d_in, d_out, n_heads, context_length, B, T): every dimension a different number, so that a
# shape says which dimension went where (the notebook's B = H = 2 would hide a swap).
TRACE_SIZE = (6, 12, 3, 16, 2, 5)


def lab_trace(size) -> list[tuple[str, tuple]]:
    """The lab's forward, op by op, with the shape each makes."""
    d_in, d_out, H, _, B, T = size
    hd = d_out // H
    split = [
        ("linear", (B, T, d_out)),
        ("view(B, T, H, hd)", (B, T, H, hd)),
        ("transpose(1, 2)", (B, H, T, hd)),
    ]
    return split * 3 + [
        ("k.transpose(2, 3)", (B, H, hd, T)),
        ("q @ kᵀ", (B, H, T, T)),
        ("/ √hd", (B, H, T, T)),
        ("mask[:T, :T]", (T, T)),
        ("masked_fill", (B, H, T, T)),
        ("softmax", (B, H, T, T)),
        ("dropout", (B, H, T, T)),
        ("w @ v", (B, H, T, hd)),
        ("transpose(1, 2)", (B, T, H, hd)),
        ("contiguous", (B, T, H, hd)),
        ("view(B, T, d_out)", (B, T, d_out)),
        ("out_proj", (B, T, d_out)),
    ]


def lab_trace_view(ops, size, wrong: bool) -> list:
    d_in, d_out, H, _, B, T = size
    title = msg("ui.trace_title", B=B, T=T, H=H, hd=d_out // H, d_in=d_in)
    return trace_view(ops, lab_trace(size), wrong=wrong, title=title)


# Our own weights, so the judge knows them without trusting the learner's process; a parameter
# the layer holds as None stays None.
load_ours = functools.partial(load_weights, names=PARAM_NAMES, skip_none=True)


def layout_of(d_in, d_out) -> dict:
    """The Linear layers' weight shapes as the lab's constructor makes them."""
    return {
        "W_q": (d_out, d_in),
        "W_k": (d_out, d_in),
        "W_v": (d_out, d_in),
        "out_proj": (d_out, d_out),
    }


def probe_multi(ctx, inputs):
    cls = ctx.get("CausalMultiHeadAttention")
    cases = []
    for i, (size, case) in enumerate(zip(MULTI_SIZES, inputs["multi"], strict=False)):
        if i >= MULTI_FIRST and ctx.kernels:  # own-formula fails; a kernel's compile costs time
            break
        d_in, d_out = size[:2]
        made = ctx.call(lambda size=size: build_layer(cls, KEYWORDS, size), primary=i == 0)
        if "error" in made:
            cases.append({"made": made})
            continue
        module = made["value"]
        out = {
            "made": {"value": None},
            "layout": linear_layout(module, layout_of(d_in, d_out)),
            "params": sum(p.numel() for p in module.parameters()),
        }
        cases.append(out)
        if not out["layout"]["ok"]:
            continue
        if i == 0:
            out["constructor"] = constructor_facts(
                cls, module, ("d_out", "n_heads", "head_dim"), "mask"
            )
        load_ours(module, case["w"])
        # Every call with fixed_dropout in place of torch's: no randomness reaches a verdict.
        before = ctx.call(lambda m=module: module_state(m)).get("value") if i == 0 else None
        out["base"] = ctx.call(module, case["x"], primary=i == 0, dropout=True)
        if case["x"].shape[1] <= LEAK_MAP_MAX_T:
            out["map"] = probe_leak_map(
                ctx, module, case["x"], inputs["multi_leak_maps"][i], dropout=True
            )
        if i:
            continue
        # The notebook's size: the layer as it is used, not only one frozen call.
        out["last"] = ctx.call(module, case["x_last"], primary=True, dropout=True)
        out["prefix"] = ctx.call(
            module, case["x_prefix"], dropout=True
        )  # the same layer, a shorter input
        load_ours(module, large_input_weights(case["w"], ("W_q", "W_k")))
        out["large_x"] = ctx.call(module, case["x"] * LARGE_INPUT, dropout=True)
        load_ours(module, case["w"])
        out["state"] = ctx.call(lambda m=module: state_dict_copy(m)).get("value")
        out["module_state"] = [before, ctx.call(lambda m=module: module_state(m)).get("value")]
        load_ours(module, inputs["multi_again"]["w"])
        out["new_weights"] = ctx.call(
            module, case["x"], dropout=True
        )  # nothing kept from the old weights
        load_ours(module, inputs["multi_large"]["w"])
        out["large"] = ctx.call(module, inputs["multi_large"]["x"], dropout=True)
        load_ours(module, inputs["multi_again"]["w"])  # the leakage map's layer
        out["dropout"] = probe_dropout(ctx, cls, size, case)
        out["notebook"] = probe_notebook(ctx, cls, size, case, inputs["multi_again"]["g"])
        out["story"] = probe_story(ctx, cls, size, case, inputs["multi_again"]["g"])
        if not ctx.views:
            continue
        # Last, as only the views use them: the shape trace, then the layer with the second
        # weights, each token changed in turn.
        traced = ctx.call(lambda: build_layer(cls, KEYWORDS, TRACE_SIZE))
        if "value" in traced:
            out["trace"] = ctx.call(
                lambda x, traced=traced: traced_forward(traced["value"], x),
                inputs["trace_x"],
                dropout=True,
            )
        out["leak_map"] = probe_leak_map(
            ctx, module, case["x"], inputs["leak_delta"]["multi"], dropout=True
        )
    counts = {}
    if ctx.defines("CausalMultiHeadAttention"):
        for heads in (1, 4):
            made = ctx.call(
                lambda heads=heads: sum(p.numel() for p in cls(8, 8, heads, 16).parameters())
            )
            counts[heads] = made.get("value")
    return {"cases": cases, "counts": counts}


def probe_dropout(ctx, cls, size, case):
    """A new layer with dropout: in eval mode on a short input, then on the whole one, then in train mode."""
    build = lambda: build_layer(cls, KEYWORDS, size, dropout=DROPOUT_P)  # noqa: E731
    return probe_dropout_modes(
        ctx, build, lambda m: load_ours(m, case["w"]), case["x"], case["x_prefix"]
    )


def probe_story(ctx, cls, size, case, g):
    """A new layer with dropout through the kit's training story (no_grad, train, a step, again)."""
    build = lambda: build_layer(cls, KEYWORDS, size, dropout=DROPOUT_P)  # noqa: E731
    return probe_layer_story(ctx, build, lambda m: load_ours(m, case["w"]), case["x"], g)


def story_reference(inputs, state, p, H):
    w = weights_from_state(state, PARAM_NAMES)
    return reference_multi.__wrapped__(inputs[0], w, H, p)[0]


def probe_notebook(ctx, cls, size, case, g):
    """Self-check 3 as the notebook runs it: torch.manual_seed(1), built by keyword, its own
    weights, train mode, gradients on; then one backward, as training would."""
    build = lambda: build_layer(cls, KEYWORDS, size)  # noqa: E731
    return probe_seeded_layer(ctx, build, NOTEBOOK_SEED, g, case["x"], case["x_last"])


@of_the_inputs
def reference_multi(x, w, H, p=0.0):
    """(output, weights) of the lab's layer with weights w; p > 0: fixed_dropout on the weights."""
    B, T, _ = x.shape
    d_out = w["W_q"].shape[0]
    hd = d_out // H
    q, k, v = ((x @ w[n].T).view(B, T, H, hd).transpose(1, 2) for n in ("W_q", "W_k", "W_v"))
    scores = q @ k.transpose(2, 3) / hd**0.5
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    if p:
        ctx = fixed_dropout.apply(weights, p) @ v
    else:
        ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ctx = ctx.transpose(1, 2).reshape(B, T, d_out)
    return ctx @ w["out_w"].T + w["out_b"], weights


_BY_VALUE: dict = {}


def of_these_weights(x, w, H, g):
    """The reference's output, its weights' gradients and x's, for weights the layer made itself: keyed on their
    bytes, since a correct constructor under torch.manual_seed(1) makes the same ones every save."""
    key = (id(x), id(g), H, tuple((k, t.numpy().tobytes()) for k, t in sorted(w.items())))
    hit = _BY_VALUE.get(key)
    if hit is None:
        if len(_BY_VALUE) >= 16:
            _BY_VALUE.clear()
        forward = lambda x, w: reference_multi.__wrapped__(x, w, H)[0]  # noqa: E731
        hit = _BY_VALUE[key] = (forward(x, w), *reference_grads(forward, x, w, g, PARAM_NAMES))
    return hit


def diagnose_multi(y, x, w, H, source=""):
    likely = matching_mistake(y, multi_head_mistakes(x, w, H))
    return unless_discarded(likely, source, "CausalMultiHeadAttention")


def unless_discarded(likely: dict, source: str, fn: str) -> dict:
    """No mask in effect, from a masked_fill in fn whose result is thrown away: that line."""
    found = likely["key"] == "likely.no_mask" and discarded_call(
        source, frozenset({fn}), "masked_fill"
    )
    return (
        msg("likely.masked_fill_discarded_line", line=found.line, code=found.code)
        if found
        else likely
    )


def judge_state(v, case, inp, size):
    """forward must leave the layer's weights and buffers as they were."""
    expected = {name: inp["w"][key] for name, key in PARAM_NAMES.items()}
    expected["mask"] = torch.triu(torch.ones(size[3], size[3]), diagonal=1).bool()
    judge_layer_state(v, case.get("state"), expected, case.get("module_state"))


def judge_constructor(v, facts, size):
    d_in, d_out, H, cl = size[:4]
    judge_layer_constructor(
        v,
        facts,
        signature=SIGNATURE,
        attrs={"d_out": d_out, "n_heads": H, "head_dim": d_out // H},
        dropout=0.0,
        buffer=torch.triu(torch.ones(cl, cl), diagonal=1).bool(),
    )


def judge_dropout(v, case, inp, size):
    """With dropout in train mode: dropout on the attention weights, once, with the layer's p;
    in eval mode: none. fixed_dropout stands in for torch's, so the reference gives the same."""
    B, T, _ = inp["x"].shape
    judge_dropout_modes(
        v,
        case,
        lambda p: reference_multi(inp["x"], inp["w"], size[2], p)[0],
        p=DROPOUT_P,
        weights_numel=B * size[2] * T * T,
    )


def judge_notebook(v, nb, inp, size, g):
    """Self-check 3 as written: the reference is rebuilt from the layer's own weights after the
    call; then the gradients of one backward pass must be the reference's."""
    judge_seeded_layer(
        v,
        nb,
        lambda w: of_these_weights(inp["x"], w, size[2], g),
        names=PARAM_NAMES,
        built="CausalMultiHeadAttention(d_in=…, d_out=…, n_heads=…, context_length=…)",
    )


def judge_multi_case(v, case, inp, size, source=""):
    d_in, d_out, H, cl, B, T = size
    args = f"d_in={d_in}, d_out={d_out}, n_heads={H}, context_length={cl}"
    require_ran(v, case["made"], f"CausalMultiHeadAttention({args})")
    judge_layout(v, case["layout"], layout_of(d_in, d_out), key="check.constructor", args=args)
    require_ran(v, case["base"], "forward")
    expected_params = 3 * d_in * d_out + d_out * d_out + d_out
    v.require(
        "parameters",
        case["params"] == expected_params,
        "check.params_count",
        expected=expected_params,
        got=case["params"],
    )
    x = inp["x"]
    value = case["base"]["value"]
    shape_likely = (
        msg("likely.forward_tuple") if isinstance(value, tuple) else msg("likely.multi_shape")
    )
    y = require_tensor(v, "shape", "forward(x)", value, (B, T, d_out), shape_likely)
    mutated = changed_input(v, "forward", ["x"], case["base"]["args"], (x,))
    written_in = [c["p"] for c in case["base"].get("dropouts", []) if c["training"] and c["p"]]
    if written_in:  # the layer was built with dropout 0
        diagnose = lambda: msg("likely.story_dropout_p", got=written_in[0], p=0.0)  # noqa: E731
    else:
        diagnose = lambda: diagnose_multi(y, x, inp["w"], H, source)  # noqa: E731
    require_finite(v, "forward(x)", y, likely=diagnose)
    ref, _ = reference_multi(x, inp["w"], H)
    right = close(y, ref)
    if "last" in case:
        require_ran(v, case["last"], "forward")
        y2 = case["last"]["value"]
        if isinstance(y2, torch.Tensor) and y2.shape == y.shape:
            if (
                right
            ):  # a right first call and a wrong second one is no leak: forward changed the layer
                require_again_right(
                    v,
                    y2,
                    reference_multi(inp["x_last"], inp["w"], H)[0],
                    msg("value.again_last"),
                    msg("likely.layer_call_again"),
                )
            require_no_leak(v, y, y2, T - 1, likely=diagnose)
    if "map" in case:
        require_ran(v, case["map"], "forward")
        judge_leak_map(v, y, case["map"].get("value"), [(msg("region.future"), future_region(T))])
    likely = msg("likely.mutated_input", arg=mutated) if mutated else diagnose
    require_close(v, "matches-pytorch", "forward(x)", y, ref, likely=likely)


def multi_leak_entry(first, seed, size, inputs) -> dict:
    moved = first["leak_map"].get("value")
    reference = multi_leak_reference(
        seed["x"], inputs["multi_again"]["w"], size[2], inputs["leak_delta"]["multi"]
    )
    base = first.get("new_weights", {}).get("value")
    return leak_map_panel(msg("visual.leak_map"), base, moved, *reference)


@of_the_inputs
def multi_leak_reference(x, w, H, delta):
    """As single_leak_reference, for the layer with weights w."""
    return reference_leak_outputs(lambda x: reference_multi.__wrapped__(x, w, H)[0], x, delta)


def judge_multi(v, outputs, inputs, jctx):
    cases = outputs["cases"]
    judge_case = functools.partial(judge_multi_case, source=jctx.source)
    first = cases[0]
    if jctx.views:
        soft = (first.get("base") or {}).get("softmax")
        seed, size = inputs["multi"][0], MULTI_SIZES[0]
        _, ref_w = reference_multi(seed["x"], seed["w"], size[2])
        have = isinstance(soft, torch.Tensor) and soft.shape == ref_w.shape
        # Drawn before judging: a failing step is where the heatmap helps most.
        # The weights are the last softmax the forward pass ran: without one, they cannot be had.
        v.visuals["heatmaps"] = weights_panels(
            soft[0] if have else None,
            ref_w[0],
            lambda h: msg("visual.batch_head", b=0, h=h),
            why=msg("visual.weights_not_captured"),
        )
        if "leak_map" in first:
            v.visuals["heatmaps"].append(multi_leak_entry(first, seed, size, inputs))
    try:
        judge_multi_checks(v, outputs, inputs, jctx, judge_case)
    finally:  # after the verdict: a route other than the lab's is only pointed at when the layer is wrong
        if "trace" in first:  # only probed for the views
            v.visuals["view"] = lab_trace_view(
                first["trace"].get("value"), TRACE_SIZE, wrong=not v.passed()
            )


def judge_multi_checks(v, outputs, inputs, jctx, judge_case):
    cases = outputs["cases"]
    seed, size = inputs["multi"][0], MULTI_SIZES[0]
    first = cases[0]
    if "constructor" in first:
        judge_constructor(v, first["constructor"], size)
    judge_case(v, first, seed, size)
    counts = outputs["counts"]
    v.expect(
        "heads-share-parameters",
        counts.get(1) is not None and counts.get(1) == counts.get(4),
        "check.params_heads",
        one=counts.get(1),
        four=counts.get(4),
    )
    judge_sized_cases(
        v, cases, inputs["multi"], MULTI_SIZES, MULTI_NAMES, judge_case, explain_multi
    )
    trained = ((first.get("notebook") or {}).get("step") or {}).get("value")
    in_graph = trained.get("kernels") or [] if isinstance(trained, dict) else []
    no_kernel(
        v,
        "forward",
        jctx.source,
        {"CausalMultiHeadAttention"},
        sorted(set(jctx.kernels) | set(in_graph)),
    )
    judge_state(v, first, seed, size)
    judge_layer_again(
        v,
        first,
        lambda x, w: reference_multi(x, w, size[2])[0],
        x=seed["x"],
        x_prefix=seed["x_prefix"],
        w=seed["w"],
        new_w=inputs["multi_again"]["w"],
    )
    judge_notebook(v, first["notebook"], seed, size, inputs["multi_again"]["g"])
    judge_dropout(v, first["dropout"], seed, size)
    large = inputs["multi_large"]
    judge_large_output(
        v,
        first["large"],
        reference_multi(large["x"], large["w"], size[2])[0],
        fn="forward",
        what="forward(x)",
        key="check.large_scores_multi",
    )
    judge_large_inputs(
        v,
        first.get("large_x"),
        reference_multi.__wrapped__(
            seed["x"] * LARGE_INPUT, large_input_weights(seed["w"], ("W_q", "W_k")), size[2]
        )[0],
        what="forward(x)",
    )
    judge_training_story(
        v,
        first.get("story"),
        [seed["x"]],
        functools.partial(story_reference, H=size[2]),
        inputs["multi_again"]["g"],
        what="forward(x)",
        names=["x"],
        p=DROPOUT_P,
    )


# ---------------------------------------------------------------- shapes


def probe_shapes(ctx, inputs):
    fn = ctx.get("expected_shapes")
    return {"calls": [ctx.call(fn, *size, primary=i == 0) for i, size in enumerate(SHAPE_SIZES)]}


def true_shapes(B, T, H, hd):
    """Measured on real tensors, as the notebook does, not written down."""
    x = torch.zeros(B, T, H * hd)
    split = x.view(B, T, H, hd)
    per_head = split.transpose(1, 2)
    scores = per_head @ per_head.transpose(2, 3)
    context = scores @ per_head
    merged = context.transpose(1, 2).contiguous().view(B, T, H * hd)
    return shapes_of(
        SHAPE_KEYS, [x, split, per_head, scores, torch.softmax(scores, -1), context, merged]
    )


SHAPE_MISTAKES = {
    "q_per_head": "likely.per_head_transpose",
    "scores": "likely.scores_shape",
    "weights": "likely.weights_same_as_scores",
    "context_per_head": "likely.context_shape",
    "context_merged": "likely.merged_shape",
}


def judge_shapes_case(v, call, _case, size):
    require_ran(v, call, "expected_shapes")
    judge_named_shapes(
        v,
        call["value"],
        true_shapes(*size),
        likely=lambda key, got: shape_mistake(key, got, size),
    )


def shape_mistake(key: str, got: tuple, size) -> dict:
    """The likely mistake for a wrong entry: for the scores, the one the wrong shape shows."""
    if key == "scores":
        B, T, H, hd = size
        if len(got) == 3:
            return msg("likely.scores_no_head")
        if len(got) == 4 and got[-1] == hd != T:
            return msg("likely.scores_hd")
    return msg(SHAPE_MISTAKES.get(key, "likely.shape_stage"))


def judge_shapes(v, outputs, inputs, jctx):
    calls = outputs["calls"]
    judge_shapes_case(v, calls[0], None, SHAPE_SIZES[0])
    judge_sized_cases(
        v, calls, [None] * len(calls), SHAPE_SIZES, ("B", "T", "H", "hd"), judge_shapes_case
    )


# A save's checked steps run in this order in one child, and the judge takes each step as the
# child finishes it (worker.py). Multi-head is last because it takes longest to judge: shapes
# (0.5 ms to run) is then judged while multi-head runs, not after it. The app keeps the lesson's order.
STEPS = {
    "single-head": StepSpec(
        probe_single, judge_single, ("causal_attention",), own_formula="causal_attention"
    ),
    "leakage": StepSpec(probe_leakage, judge_leakage, ("causal_attention",)),
    "shapes": StepSpec(probe_shapes, judge_shapes, ("expected_shapes",)),
    "multi-head": StepSpec(
        probe_multi, judge_multi, ("CausalMultiHeadAttention",), own_formula="forward"
    ),
}


# ---------------------------------------------------------------- experiments (no verdict, just data)

# The app sends the memory step's current settings; a run without them gets lesson.toml's defaults.
MEMORY_DEFAULTS = declared_settings(__file__, "memory")
MEASURE_LIMIT = 1 << 24  # score elements per run; larger settings show only the formula
# Seconds for the measured column, within the step's time limit. A settings key waits for this
# run: ~0.5 s at the default settings, nearly all of it T = 1024 (MEASURE_LIMIT bounds the
# larger settings before this does).
MEASURE_BUDGET = 2.0


def memory_settings(params) -> dict:
    return chosen_settings(MEMORY_DEFAULTS, params, {"dtype": DTYPES})


def probe_memory(ctx, inputs):
    s = memory_settings(ctx.params)
    # The formula's columns do not need the learner's class: a missing or unfinished one only
    # leaves the measured column empty (so no primary call, and a missing class is no failure).
    try:
        cls = ctx.get("CausalMultiHeadAttention")
    except Exception:  # the harness's NameMissing, ForeignCode: nothing of the learner's
        return {"settings": s, "measured": []}
    heads, batch = int(s["heads"]), int(s["batch"])
    width = 4 * heads  # the head width does not change the size of the scores
    measured = measure_score_memory(
        ctx,
        lambda T: cls(width, width, heads, T),
        seq_lens(*map(int, s["range"])),
        width=width,
        batch=batch,
        dtype=DTYPES[s["dtype"]],
        count=lambda T: batch * heads * T * T,
        limit=MEASURE_LIMIT,
        budget=MEASURE_BUDGET,
    )
    return {"settings": s, "measured": [[t, b] for t, b in measured.items()]}


def judge_memory(v, outputs, inputs, jctx):
    settings = memory_settings(outputs["settings"])
    measured = {t: b for t, b in outputs["measured"]}
    v.visuals["view"] = memory_view(settings, measured, layer="CausalMultiHeadAttention")
    v.expect("runs", True)


def probe_reflect(ctx, inputs):
    cls = ctx.get("CausalMultiHeadAttention")
    made = ctx.call(lambda: cls(768, 768, 12, 1024), primary=True)
    module = made["value"]
    qkv = 0
    for attr in ("W_q", "W_k", "W_v"):
        layer = getattr(module, attr, None)
        if isinstance(layer, torch.nn.Module):
            qkv += sum(p.numel() for p in layer.parameters())
    return {
        "head_dim": getattr(module, "head_dim", None),
        "qkv": qkv,
        "total": sum(p.numel() for p in module.parameters()),
    }


def judge_reflect(v, outputs, inputs, jctx):
    # Question 4's numbers from the learner's own class: its answer, so shown only after it.
    if isinstance(outputs.get("head_dim"), int):
        v.visuals["view"] = [
            after_answer(
                4,
                note(
                    msg(
                        "visual.reflect_numbers",
                        head_dim=outputs["head_dim"],
                        qkv=f"{outputs['qkv']:,}",
                        total=f"{outputs['total']:,}",
                    )
                ),
            )
        ]
    v.expect("runs", True)


STEPS["memory"] = StepSpec(probe_memory, judge_memory, ("CausalMultiHeadAttention",))
STEPS["reflect"] = StepSpec(probe_reflect, judge_reflect, ("CausalMultiHeadAttention",))
