"""Checks for lesson kv-cache: generating one token at a time with a KV cache.

The layer is lm3-l3's causal multi-head attention, given complete in the starter; the
learner writes `forward_cached` (one new token and the cache of past keys and values) and
`generate` (the whole sequence, token by token). Every output is judged against the full
causal pass of the same weights, which the tutor computes itself (with PyTorch's
scaled_dot_product_attention), at the notebook's size first, then at sizes it never tries.
"""

import torch

from tutor import kit

LAYER = "CausalMultiHeadAttention"
STEP_FN = "forward_cached"
# (d_in, d_out, n_heads, context_length, B, T): the notebook's first; then wider, more heads,
# one head and one token, and a sequence longer than any list the codec carries (64).
SIZES = [
    (8, 8, 2, 16, 2, 6),
    (12, 24, 3, 40, 3, 17),
    (5, 16, 4, 8, 1, 8),
    (8, 8, 1, 16, 2, 1),
    (6, 32, 8, 80, 1, 65),
]
NAMES = ("d_in", "d_out", "n_heads", "context_length", "B", "T")
ROWS_SIZE = (8, 8, 2, 16, 1, 8)  # the rows experiment
# generate is also run with the tutor's forward_cached up to this length (for the blame)
ALONE_T = 17
PARAM_NAMES = {
    "W_q.weight": "W_q",
    "W_k.weight": "W_k",
    "W_v.weight": "W_v",
    "out_proj.weight": "out_w",
    "out_proj.bias": "out_b",
}
# The learner's layer built by keyword with our weights, in eval mode (as generation runs).
LAYER_MADE = kit.ModuleRecipe(LAYER, NAMES[:4], PARAM_NAMES, STEP_FN)


def make_inputs(seed=0):
    """Deterministic; made in the child before learner code loads, and again in the judge.
    seed: 0 for the lesson's own tensors; another draws them afresh (`attn-tutor grade --seed`)."""
    g = torch.Generator().manual_seed(1_000_003 * seed)
    cases = []
    for d_in, d_out, H, _ctx, B, T in SIZES:
        x = torch.randn(B, T, d_in, generator=g)
        cases.append(case_of(x, kit.attention_weights(g, d_in, d_out), H))
    # At the notebook's size: a second sequence, two tokens to branch on from one cache,
    # and the direction of the gradient.
    d_in, d_out, H, ctx, B, T = SIZES[0]
    again = {
        "x": torch.randn(B, T, d_in, generator=g),
        "branch": torch.randn(2, B, 1, d_in, generator=g),
        "g": torch.randn(B, 1, d_out, generator=g),
    }
    # The rows experiment: one sequence of 8 tokens, 2 heads, sharper scores (the picture shows more).
    d_in, d_out, H, ctx, B, T = ROWS_SIZE
    rows = {
        "x": torch.randn(B, T, d_in, generator=g),
        "w": kit.attention_weights(g, d_in, d_out, sharpen=2, bias=0),
    }
    return {
        "cases": cases,
        "again": again,
        "rows": rows,
        # W_q stretched until a head's largest score is the kit's LARGE_SCORES.
        "large": {
            **cases[0],
            "w": kit.large_scores_weights(cases[0]["x"], cases[0]["w"], SIZES[0][2]),
        },
    }


def case_of(x, w, H) -> dict:
    """A sequence x with weights w, and the keys and values of its full pass: (B, H, T, head_dim)."""
    return {
        "x": x,
        "w": w,
        "k": kit.split_heads(x, w["W_k"], H),
        "v": kit.split_heads(x, w["W_v"], H),
    }


# ---------------------------------------------------------------- the tutor's own layer


# (out, weights) of the full causal pass, computed once for each of the judge's inputs.
reference_full = kit.of_the_inputs(kit.causal_multi_head)


# ---------------------------------------------------------------- step 1: one step with the cache


def diagnose_raised(e: dict, source: str = "") -> dict:
    """A call with a cache raised where the one with an empty cache ran: what the error says."""
    reshaped = kit.torch_error_kind(e.get("detail", "")) == "reshaped"
    if reshaped and kit.reads_attribute(source, STEP_FN, "mask"):
        return kit.msg("likely.mask_full")
    return kit.state_error_likely(e, axis=2)


def diagnose_step_out(y, at: kit.StepAt) -> dict:
    """The usual wrong versions of one step (kit cached_query_mistakes); the first that matches."""
    mistakes = kit.cached_query_mistakes(at.x_t, at.case["w"], at.size[2], *at.state)
    found = kit.matching_mistake(y, mistakes)
    return found if found["key"] != "likely.unknown" else state_on_layer(at.source) or found


def step_likely(at: kit.StepAt) -> dict:
    """forward_cached's likely mistakes at one call (kit StepUse's likely)."""
    B, d_out = at.size[4], at.size[1]
    return {
        "raised": lambda e: diagnose_raised(e, at.source),
        # The output of every query (a T × T mask slice broadcasts the one new query).
        "out_shape": lambda out: kit.msg(
            "likely.mask_full"
            if torch.is_tensor(out) and out.shape == (B, at.t + 1, d_out)
            else "likely.step_shape"
        ),
        # Beyond the kit's state faults (the cache's shape or values).
        "state_shape": lambda: state_on_layer(at.source) or kit.msg("likely.cache_shape"),
        "out_values": lambda out: diagnose_step_out(out, at),
        "state_values": kit.msg("likely.cache_values"),
    }


CACHED = kit.StepUse(
    LAYER_MADE,
    SIZES,
    NAMES,
    full=lambda x, w, size: reference_full(x, w, size[2])[0],
    step=lambda x, past, w, size: kit.cached_attention_step(x, past, w, size[2]),
    names=("k", "v"),
    args=("x", "cache"),
    likely=step_likely,
    large_scores_key="check.large_scores",
)


def probe_cached(ctx, inputs):
    # Called from this file, as every probe is: learner code that searches its callers' frames
    # for the checks' helpers finds them and fails as borrowed code, not as an unwritten TODO.
    return CACHED.probe(ctx, inputs)


# ---------------------------------------------------------------- step 2: generate


def reference_step(layer):
    """A correct forward_cached for the learner's layer (our weights are in it), lent to its
    generate (the blame run): is generate right when the step it calls is?"""

    def forward_cached(x, cache=None):
        w = kit.weights_from_state(layer.state_dict(), PARAM_NAMES)
        return kit.cached_attention_step(x, cache, w, layer.n_heads)

    return kit.lend(forward_cached)


def probe_generate(ctx, inputs):
    gen, cls = ctx.get("generate"), ctx.get(LAYER)  # an empty file: the message names generate
    cases = inputs["cases"]

    def make(i, primary):
        return LAYER_MADE.make(ctx, cls, SIZES[i], cases[i]["w"], primary=primary)

    out = kit.probe_generation(
        ctx,
        gen,
        make,
        [c["x"] for c in cases],
        step=STEP_FN,
        reference_step=reference_step,
        alone_up_to=ALONE_T,
        again=inputs["again"]["x"],  # a new sequence on the same layer: nothing may be kept
        names=("x", "cache"),
    )
    return {"cases": out}


def diagnose_outputs(y, case, size) -> dict:
    x, w, H = case["x"], case["w"], size[2]
    alone = kit.msg("likely.loop_state_not_passed", fn="generate", step=STEP_FN)
    candidates = [
        (lambda: reference_full(x, w, H)[0].flip(1), kit.msg("likely.outputs_reversed")),
        # Each token alone (no cache passed on): its weights are [1], its output its own value.
        (lambda: x @ w["W_v"].T @ w["out_w"].T + w["out_b"], alone),
    ]
    return kit.matching_mistake(y, candidates)


def judge_generate_case(v, got, case, size, alone=True):
    d_in, d_out, H, cl, B, T = size
    LAYER_MADE.require(v, got, size)
    kit.judge_generation_call(
        v,
        got,
        reference_full(case["x"], case["w"], H)[0],
        (case["k"], case["v"]),
        fn="generate",
        step=STEP_FN,
        likely={
            "returns": kit.msg("likely.generate_pair"),
            "out_shape": kit.msg("likely.outputs_shape"),
            "out_values": lambda out: diagnose_outputs(out, case, size),
            "state": lambda shapes: (
                kit.state_fault_likely("layout", axis=2, names=("k", "v"))
                if shapes[:1] == [(B, T, H, d_out // H)]
                else kit.msg("likely.generate_cache")
            ),
            "state_values": kit.msg("likely.generate_cache"),
            "step_first": kit.msg("likely.step_first"),
        },
        names="kv",
        alone=alone,
    )


def judge_generate(v, outputs, inputs, jctx):
    cases = outputs["cases"]
    judge_generate_case(v, cases[0], inputs["cases"][0], SIZES[0])
    defs = ("generate", LAYER)
    kit.judge_sized_cases(v, cases, inputs["cases"], SIZES, NAMES, judge_generate_case, defs=defs)
    case = case_of(inputs["again"]["x"], inputs["cases"][0]["w"], SIZES[0][2])
    kit.judge_loop_again(
        v,
        cases[0].get("again"),
        lambda sub, got: judge_generate_case(sub, got, case, SIZES[0], False),
        fn="generate",
        key="check.new_sequence",
        culprit=lambda: (
            state_on_layer(jctx.source) or kit.state_explanation(jctx.source, ("generate", LAYER))
        ),
    )
    kit.no_kernel(v, "generate", jctx.source, {"generate", LAYER}, jctx.kernels)


def state_on_layer(source: str) -> dict | None:
    """`self.<name> = ...` (or `layer.<name> = ...`) in forward_cached or generate: state on the layer."""
    found = kit.attribute_store(
        source, frozenset({STEP_FN, "generate"}), frozenset({"self", "layer"})
    )
    return kit.msg("likely.state_on_layer", line=found.line, code=found.code) if found else None


# ---------------------------------------------------------------- step 3: the cache's discipline


BRANCH_FROM = 3  # two tokens tried from the cache of the first 3 (as beam search does)


def probe_discipline(ctx, inputs):
    cls = ctx.get(LAYER)
    size, case, again = SIZES[0], inputs["cases"][0], inputs["again"]
    layer, failed = LAYER_MADE.make(ctx, cls, size, case["w"], primary=True)
    if layer is None:
        return failed
    out = kit.probe_step_discipline(
        ctx,
        layer.forward_cached,
        case["x"],
        again["x"],
        again["branch"],
        branch_from=BRANCH_FROM,
        state=lambda: kit.state_dict_copy(layer),
        # Built with dropout, in eval mode (as generation runs): none may fire.
        eval_step=lambda: LAYER_MADE.method_of(ctx, cls, size, case["w"], dropout=EVAL_DROPOUT),
    )
    # Trainable: one step from a cache of 5 tokens, gradients on.
    out["train"] = CACHED.probe_trained(ctx, cls, case, again["g"])
    return out


EVAL_DROPOUT = 0.3  # a layer built with it runs in eval mode: no dropout may fire


def judge_discipline(v, outputs, inputs, jctx):
    size, case, again = SIZES[0], inputs["cases"][0], inputs["again"]
    H, cl = size[2], size[3]
    LAYER_MADE.require(v, outputs, size)

    def kept(*_):  # on a failure only: it reads the source
        return state_on_layer(jctx.source) or kit.msg("likely.kept_state_cache")

    kit.judge_step_discipline(
        v,
        outputs,
        case["x"],
        again["x"],
        again["branch"],
        lambda x: reference_full(x, case["w"], H)[0],
        branch_from=BRANCH_FROM,
        likely={
            "raised": lambda e: diagnose_raised(e, jctx.source),
            "growth": kit.msg("likely.cache_shape"),  # beyond the kit's growth faults
            "mutated": lambda i: (
                kit.msg("likely.mutated_cache") if i else kit.msg("likely.mutated_x")
            ),
            "reused": lambda: state_on_layer(jctx.source) or kit.msg("likely.cache_buffer"),
            "loop_values": kit.msg("likely.step_wrong"),
            "kept": kept,
        },
        names=("x", "k", "v"),
        fn=STEP_FN,
        state_shape=lambda n: (size[4], H, n, size[1] // H),
    )
    # forward_cached leaves the layer's weights and mask as they were, and adds no buffer.
    expected = {name: case["w"][key] for name, key in PARAM_NAMES.items()}
    expected["mask"] = torch.triu(torch.ones(cl, cl), diagonal=1).bool()
    kit.judge_layer_state(
        v,
        outputs.get("state"),
        expected,
        None,
        key="check.layer_changed",
        likely=lambda _: kit.msg("likely.layer_changed"),
        added=("check.layer_buffers", kit.msg("likely.cache_buffer_registered")),
    )
    kit.no_kernel(v, STEP_FN, jctx.source, {LAYER}, jctx.kernels)
    judge_trainable(v, outputs.get("train"), case, again)


def judge_trainable(v, train, case, again):
    culprit = lambda: state_on_layer(v.source)  # noqa: E731
    # The engine's words, but for the step's own way of leaving the graph (`no_grad()`).
    keys = {"grad_blocked": "likely.grad_blocked"}
    CACHED.judge_trained(v, train, case, again["g"], keys=keys, culprit=culprit)


# A save's checked steps run in this order in one child; the app keeps the lesson's order.
STEPS = {
    "cached-attention": CACHED.spec(probe_cached),
    "generate": kit.StepSpec(probe_generate, judge_generate, ("generate",), own_formula="generate"),
    "cache-discipline": kit.StepSpec(
        probe_discipline, judge_discipline, (LAYER,), own_formula=STEP_FN
    ),
}


# ---------------------------------------------------------------- experiments (no verdict, just data)

COST_HEAD_DIM = 32
COST_LIMIT = 4e9  # FLOPs of recomputing one length (× the batch); longer ones show only the formula


def cost_width(s) -> int:
    return s["heads"] * COST_HEAD_DIM


def cost_data(s):
    g = torch.Generator().manual_seed(5)
    return lambda T: (torch.randn(s["batch"], T, cost_width(s), generator=g),)


def cost_formulas(s, T) -> list:
    mb = 2 * s["batch"] * T * cost_width(s) * 4 / 1e6  # k and v, float32
    return [str(T), f"{mb:.3f}", *map(kit.human, kit.decoding_flops(T, cost_width(s)))]


# Generation with the cache, then the full pass again for each token, at lengths doubling.
COST = kit.TimingStep(
    defaults={"heads": 4, "batch": 1, "t_max": 128},  # as lesson.toml's settings
    lengths=lambda s: kit.doubling(16, s["t_max"]),
    build=lambda ctx, s, T: ctx.get(LAYER)(cost_width(s), cost_width(s), s["heads"], T).eval(),
    data=cost_data,
    ways=lambda ctx: [ctx.get("generate"), kit.recompute_each],
    too_big=lambda s, T: s["batch"] * kit.decoding_flops(T, cost_width(s))[1] > COST_LIMIT,
    formulas=cost_formulas,
    columns=("visual.cost_T", "visual.cost_mb", "visual.cost_flops_cache")
    + ("visual.cost_flops_full", "visual.cost_ms_cache", "visual.cost_ms_full"),
    title="visual.cost_title",
    settings_note=lambda s: kit.msg("visual.cost_settings", **s, d=cost_width(s), hd=COST_HEAD_DIM),
    waiting="visual.cost_waiting",
    after="visual.cost_note",
    budget=1.5,  # seconds of measuring, within the step's time limit
    name="T",
    visual="cost",
)


def probe_rows(ctx, inputs):
    cls = ctx.get(LAYER)
    case = inputs["rows"]
    layer, failed = LAYER_MADE.make(ctx, cls, ROWS_SIZE, case["w"], primary=True)
    if layer is None:
        return failed
    calls, _ = kit.step_through(ctx, layer.forward_cached, case["x"], primary=True, softmax=True)
    return {"rows": [c["softmax"] for c in calls]}


def judge_rows(v, outputs, inputs, jctx):
    case, H, T = inputs["rows"], ROWS_SIZE[2], ROWS_SIZE[5]
    ref = reference_full(case["x"], case["w"], H)[1][0]
    label = lambda h: kit.msg("visual.rows_head", h=h)  # noqa: E731
    maps, shown = kit.stepped_weights_view(outputs.get("rows") or [], ref, label)
    v.visuals["heatmaps"] = maps
    view = [kit.heading(kit.msg("visual.rows_title")), kit.note(kit.msg("visual.rows_note", T=T))]
    v.visuals["view"] = view + (shown or [kit.waiting(kit.msg("visual.rows_waiting"))])
    v.expect("runs", True)


STEPS["cost"] = kit.timing_step_spec(COST, ("CausalMultiHeadAttention", "generate"))
STEPS["rows"] = kit.StepSpec(probe_rows, judge_rows, ("CausalMultiHeadAttention",))
