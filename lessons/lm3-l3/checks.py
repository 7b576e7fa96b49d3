"""Checks for lesson lm3-l3: causal multi-head attention in PyTorch.

Every probe calls the learner's code at the notebook's sizes first (the primary
call), then at other sizes, so code that only works for B=2, T=6, d=8 fails.
"""

import torch
import torch.nn.functional as F

from tutor.kit import (
    LARGE_INPUT,
    LayerUse,
    PairFunction,
    StepSpec,
    after_answer,
    declared_settings,
    draw_layer_case,
    draw_single_head_case,
    fixed_dropout,
    judge_layer_memory,
    judge_layer_use,
    judge_named_shapes_at,
    judge_pair_function,
    judge_pair_leakage,
    large_scores_weights,
    matching_mistake,
    msg,
    multi_head_mistakes,
    note,
    of_the_inputs,
    probe_layer_memory,
    probe_layer_use,
    probe_named_shapes,
    probe_pair_function,
    probe_pair_leakage,
    shapes_of,
    single_head_large_scores,
    single_head_likely,
    trace_view,
    unless_discarded,
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
# The shape trace's (d_in, d_out, n_heads, context_length, B, T): every dimension a different number, so that a
# shape says which dimension went where (the notebook's B = H = 2 would hide a swap).
TRACE_SIZE = (6, 12, 3, 16, 2, 5)
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
    single = [draw_single_head_case(g, *size) for size in SINGLE_SIZES[:SINGLE_FIRST]]
    multi = [draw_layer_case(g, *size[:2], *size[4:]) for size in MULTI_SIZES[:MULTI_FIRST]]
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
    single_again = (
        torch.randn(B, T, d, generator=g),
        *(torch.randn(d, dk, generator=g) / d**0.5 for _ in range(3)),
    )
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
        single.append(draw_single_head_case(g, *size))
        maps.append(torch.randn(size[0], size[2], generator=g) * 3)
    for size in MULTI_SIZES[MULTI_FIRST:]:
        multi.append(draw_layer_case(g, *size[:2], *size[4:]))
        multi_maps.append(torch.randn(size[4], size[0], generator=g) * 3)
    x, *W = single[0]["args"]
    return {
        "single": {  # as the kit's probe_pair_function and probe_pair_leakage take them
            "cases": [{**case, "leak": leak} for case, leak in zip(single, maps, strict=True)],
            "again": single_again,
            "large": single_head_large_scores(x, *W),
            "large_x": (x * LARGE_INPUT, W[0] / LARGE_INPUT, W[1] / LARGE_INPUT, W[2]),
            "g": single_story_g,
            "view_delta": leak_delta["single"],
        },
        "layer": {  # as the kit's probe_layer_use takes them
            "trace_x": trace_x,
            "cases": [{**case, "leak": leak} for case, leak in zip(multi, multi_maps, strict=True)],
            "new_w": again["w"],
            "g": again["g"],
            "large": {
                "x": multi[0]["x"],
                "w": large_scores_weights(multi[0]["x"], multi[0]["w"], H),
            },
            "view_delta": leak_delta["multi"],
        },
    }


# ---------------------------------------------------------------- single head and leakage


@of_the_inputs
def reference_single(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = (q @ k.transpose(-2, -1)) / k.shape[-1] ** 0.5
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return out, weights


def first_row(v, w, likely):
    """The first token can only see itself: `weights[:, 0, 0]` is 1."""
    ones = torch.ones(w.shape[0], dtype=torch.float64)
    ok = torch.allclose(w[:, 0, 0].double(), ones)
    v.require("first-token", ok, "check.first_row", got=float(w[0, 0, 0]), likely=likely)


@of_the_inputs
def unmasked(x, Wq, Wk, Wv):
    """The notebook's broken layer: no mask at all."""
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    w = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
    return w @ v


# causal_attention(x, Wq, Wk, Wv) -> (out, weights), as the kit's PairFunction: both steps.
SINGLE = PairFunction(
    name="causal_attention",
    arg_names=("x", "Wq", "Wk", "Wv"),
    sizes=SINGLE_SIZES,
    size_names=SINGLE_NAMES,
    reference=reference_single,
    diagnose=single_head_likely,
    keys={
        "returns_pair": "likely.returns_pair",
        "again_new_x": "value.again_new_x",
        "large_scores": "check.large_scores",
        "batch_label": "visual.batch",
    },
    trained=(1, 2, 3),  # the weights, as a layer's parameters
    leak_map_max_t=LEAK_MAP_MAX_T,
    extra=first_row,
    broken=unmasked,
)


def probe_single(ctx, inputs):
    return probe_pair_function(ctx, SINGLE, inputs["single"])


def judge_single(v, outputs, inputs, jctx):
    judge_pair_function(v, SINGLE, outputs, inputs["single"], jctx)


def probe_leakage(ctx, inputs):
    return probe_pair_leakage(ctx, SINGLE, inputs["single"])


def judge_leakage(v, outputs, inputs, jctx):
    judge_pair_leakage(v, SINGLE, outputs, inputs["single"], jctx)


# ---------------------------------------------------------------- multi-head


@of_the_inputs
def reference_multi(x, w, size, p=0.0):
    """(output, weights) of the lab's layer with weights w; p > 0: fixed_dropout on the weights."""
    B, T, _ = x.shape
    d_out, H = w["W_q"].shape[0], size[2]
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


def diagnose_multi(y, x, w, size, source=""):
    likely = matching_mistake(y, multi_head_mistakes(x, w, size[2]))
    return unless_discarded(likely, source, "CausalMultiHeadAttention")


# The layer as the notebook builds and uses it (the kit's LayerUse); with dropout in train
# mode it is judged with fixed_dropout in place of torch's, p = 0.3; self-check 3 seeds 1.
LAYER = LayerUse(
    name="CausalMultiHeadAttention",
    signature=[
        ["d_in", None],
        ["d_out", None],
        ["n_heads", None],
        ["context_length", None],
        ["dropout", 0.0],
    ],
    sizes=MULTI_SIZES,
    size_names=MULTI_NAMES,
    params={
        "W_q.weight": "W_q",
        "W_k.weight": "W_k",
        "W_v.weight": "W_v",
        "out_proj.weight": "out_w",
        "out_proj.bias": "out_b",
    },
    layout=lambda s: {"W_q": s[1::-1], "W_k": s[1::-1], "W_v": s[1::-1], "out_proj": (s[1],) * 2},
    attrs=lambda s: {"d_out": s[1], "n_heads": s[2], "head_dim": s[1] // s[2]},
    buffer="mask",
    buffer_of=lambda s: torch.triu(torch.ones(s[3], s[3]), diagonal=1).bool(),
    reference=reference_multi,
    diagnose=diagnose_multi,
    first=MULTI_FIRST,
    leak_map_max_t=LEAK_MAP_MAX_T,
    trace_size=TRACE_SIZE,
    trace_view=lambda ops, wrong: lab_trace_view(ops, wrong),
    keys={
        "layout": "check.constructor",
        "params_count": "check.params_count",
        "params_heads": "check.params_heads",
        "out_shape": "likely.multi_shape",
        "out_tuple": "likely.forward_tuple",
        "again_last": "value.again_last",
        "large_scores": "check.large_scores_multi",
        "head_label": "visual.batch_head",
        "width": "likely.width_d_in",
    },
)

# ---------------------------------------------------------------- shape trace


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


def lab_trace_view(ops, wrong: bool) -> list:
    d_in, d_out, H, _, B, T = TRACE_SIZE
    title = msg("ui.trace_title", B=B, T=T, H=H, hd=d_out // H, d_in=d_in)
    return trace_view(ops, lab_trace(TRACE_SIZE), wrong=wrong, title=title)


def probe_multi(ctx, inputs):
    return probe_layer_use(ctx, LAYER, inputs["layer"])


def judge_multi(v, outputs, inputs, jctx):
    judge_layer_use(v, LAYER, outputs, inputs["layer"], jctx)


# ---------------------------------------------------------------- shapes


def probe_shapes(ctx, inputs):
    return probe_named_shapes(ctx, "expected_shapes", SHAPE_SIZES)


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
    judge_named_shapes_at(
        v,
        outputs,
        fn="expected_shapes",
        sizes=SHAPE_SIZES,
        names=("B", "T", "H", "hd"),
        truth=true_shapes,
        likely=shape_mistake,
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


def probe_memory(ctx, inputs):
    build = lambda cls, width, heads, T: cls(width, width, heads, T)  # noqa: E731
    return probe_layer_memory(
        ctx, LAYER.name, MEMORY_DEFAULTS, build, limit=MEASURE_LIMIT, budget=MEASURE_BUDGET
    )


def judge_memory(v, outputs, inputs, jctx):
    judge_layer_memory(v, outputs, MEMORY_DEFAULTS, layer=LAYER.name)


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
