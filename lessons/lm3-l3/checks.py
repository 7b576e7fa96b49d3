"""Checks for lesson lm3-l3: causal multi-head attention in PyTorch.

Every probe calls the learner's code at the notebook's sizes first (the primary
call), then at other sizes, so code that only works for B=2, T=6, d=8 fails.
"""

import torch
import torch.nn.functional as F

from tutor.runner.judge_kit import (
    close, describe, first_nonfinite, inputs_unchanged, judge_other_sizes, likely_for_value, matching_mistake,
    max_error, msg, no_kernel, of_the_inputs, require_pair, require_ran, require_tensor, round_matrix, shape_str,
)
from tutor.runner.spec import StepSpec

# (B, T, d_in, d_k): the notebook's first, then sizes it never tries.
SINGLE_SIZES = [(2, 6, 8, 4), (3, 11, 16, 5), (1, 1, 7, 3), (2, 37, 12, 16)]
# (d_in, d_out, n_heads, context_length, B, T)
MULTI_SIZES = [(8, 8, 2, 16, 2, 6), (12, 24, 3, 40, 3, 33), (5, 16, 4, 8, 1, 8), (8, 8, 1, 16, 2, 1)]
# (B, T, H, hd)
SHAPE_SIZES = [(2, 6, 2, 4), (3, 5, 4, 8), (1, 7, 3, 2)]
SHAPE_KEYS = ("projected_q", "q_split_into_heads", "q_per_head", "scores", "weights",
              "context_per_head", "context_merged")


def make_inputs():
    """Deterministic; made in the child before learner code loads, and again in the judge."""
    g = torch.Generator().manual_seed(0)
    single = []
    for B, T, d, dk in SINGLE_SIZES:
        x = torch.randn(B, T, d, generator=g)
        W = tuple(torch.randn(d, dk, generator=g) / d**0.5 for _ in range(3))
        x2 = x.clone()
        x2[:, -1, :] = torch.randn(B, d, generator=g) * 3
        x3 = x.clone()
        x3[:, T // 2, :] = torch.randn(B, d, generator=g) * 3
        single.append({"x": x, "W": W, "x_last": x2, "x_mid": x3})
    multi = []
    for d_in, d_out, H, ctx, B, T in MULTI_SIZES:
        x = torch.randn(B, T, d_in, generator=g)
        x2 = x.clone()
        x2[:, -1, :] = torch.randn(B, d_in, generator=g) * 3
        w = {
            "W_q": torch.randn(d_out, d_in, generator=g) / d_in**0.5,
            "W_k": torch.randn(d_out, d_in, generator=g) / d_in**0.5,
            "W_v": torch.randn(d_out, d_in, generator=g) / d_in**0.5,
            "out_w": torch.randn(d_out, d_out, generator=g) / d_out**0.5,
            "out_b": torch.randn(d_out, generator=g) * 0.1,
        }
        # The same layer called again on a prefix (at the notebook's size): any length up to
        # context_length must work.
        multi.append({"x": x, "x_last": x2, "x_prefix": x[:, : max(1, T // 2)].clone(), "w": w})
    return {"single": single, "multi": multi}


# ---------------------------------------------------------------- single head

def probe_single(ctx, inputs):
    fn = ctx.get("causal_attention")
    results = []
    for i, case in enumerate(inputs["single"]):
        results.append(ctx.call(fn, case["x"], *case["W"], primary=i == 0))
    return {"calls": results}


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
    """Name the likely mistake behind wrong weights by rebuilding the usual wrong versions."""
    q, k = x @ Wq, x @ Wk
    T, d_in, dk = x.shape[1], x.shape[2], Wq.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    raw = q @ k.transpose(-2, -1)

    def masked_softmax(scores, mask=future, dim=-1):
        return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=dim)

    scaled = raw / dk**0.5
    candidates = [
        (lambda: masked_softmax(scaled, torch.ones(T, T, dtype=torch.bool).triu()), msg("likely.mask_diagonal")),
        (lambda: torch.softmax(scaled, -1).masked_fill(future, 0.0), msg("likely.mask_after_softmax")),
        (lambda: torch.softmax(scaled.masked_fill(future, 0.0), -1), msg("likely.fill_zero")),
        (lambda: torch.softmax(scaled, -1), msg("likely.no_mask")),
        (lambda: masked_softmax(scaled, future.T), msg("likely.mask_transposed")),
        (lambda: masked_softmax(scaled, torch.ones(T, T, dtype=torch.bool).tril(1)), msg("likely.mask_transposed")),
        (lambda: masked_softmax(scaled, torch.ones(T, T, dtype=torch.bool).tril()), msg("likely.mask_transposed")),
        (lambda: masked_softmax(scaled, torch.ones(T, T, dtype=torch.bool).triu(2)), msg("likely.mask_offset")),
        (lambda: masked_softmax(raw / d_in**0.5), msg("likely.scale_d_in", d_in=d_in, d_k=dk)),
        (lambda: masked_softmax(raw), msg("likely.scale_none")),
        (lambda: masked_softmax(raw / dk), msg("likely.scale_d")),
        (lambda: masked_softmax(scaled, dim=-2), msg("likely.softmax_dim")),
        (lambda: masked_softmax(scaled.transpose(-2, -1)), msg("likely.swapped_qk")),
    ]
    if d_in == dk:  # √d_in and √d_k are the same scale then: that mistake cannot show
        candidates = [c for c in candidates if c[1]["key"] != "likely.scale_d_in"]
    return matching_mistake(w, candidates)


def judge_single_case(v, call, case, size):
    x, (Wq, Wk, Wv) = case["x"], case["W"]
    B, T, d, dk = size
    require_ran(v, call, "causal_attention")
    out, w = require_pair(v, "causal_attention", call["value"], (B, T, dk), (B, T, T), "likely.returns_pair")
    ref_out, ref_w = reference_single(x, Wq, Wk, Wv)
    w = require_tensor(v, "shape", "weights", w, (B, T, T), msg("likely.weights_shape"))
    out = require_tensor(v, "shape", "out", out, (B, T, dk), msg("likely.out_shape"))
    bad = first_nonfinite(w)
    if bad is not None and bad[0][1] == 0:
        v.require("first-token", False, "check.first_row", got="NaN", likely=msg("likely.mask_diagonal"))
    v.require("finite", bad is None, "check.not_finite", what="weights", count=bad[1] if bad else 0,
              where=shape_str(bad[0]) if bad else "", likely=lambda: diagnose_weights(w, x, Wq, Wk, Wv))
    sums = w.double().sum(-1)
    ok_rows = torch.isclose(sums, torch.ones_like(sums), atol=1e-5)
    if not ok_rows.all():
        b, row = (int(i) for i in (~ok_rows).nonzero()[0])
        v.require("rows-sum-to-1", False, "check.rows_sum", row=row, batch=b, got=float(sums[b, row]),
                  likely=lambda: diagnose_weights(w, x, Wq, Wk, Wv))
    v.expect("rows-sum-to-1", True)
    upper = torch.triu(w, diagonal=1)
    if (upper != 0).any():
        b, row, col = (int(i) for i in (upper != 0).nonzero()[0])
        v.require("future-is-zero", False, "check.future", row=row, col=col, got=float(w[b, row, col]),
                  likely=lambda: diagnose_weights(w, x, Wq, Wk, Wv))
    v.expect("future-is-zero", True)
    v.require("first-token", torch.allclose(w[:, 0, 0].double(), torch.ones(B, dtype=torch.float64)),
              "check.first_row", got=float(w[0, 0, 0]), likely=lambda: diagnose_weights(w, x, Wq, Wk, Wv))
    if not close(w, ref_w):
        err, where = max_error(w, ref_w)
        v.require("matches-pytorch", False, "check.values", what="weights", err=err, where=shape_str(where),
                  tol="1e-5", likely=lambda: diagnose_weights(w, x, Wq, Wk, Wv))
    if not close(out, ref_out):
        err, where = max_error(out, ref_out)
        v.require("matches-pytorch", False, "check.values", what="out", err=err, where=shape_str(where),
                  tol="1e-5", likely=msg("likely.out_not_weights_v"))
    v.expect("matches-pytorch", True)
    inputs_unchanged(v, "causal_attention", ["x", "Wq", "Wk", "Wv"], call["args"], (x, Wq, Wk, Wv))


def sizes_label(names, size) -> str:
    return ", ".join(f"{n}={s}" for n, s in zip(names, size))


# Kept beside the functions that use them, apart from the imports at the top.
from tutor.runner.judge_kit import last_dim_of, literal_explanation, size_explanation  # noqa: E402


def explain_single(seed, size, source):
    """Why causal_attention fails at a size past the notebook's (B, T, d_in, d_k)."""
    return size_explanation(source, ("causal_attention",), ("B", "T", "d_in", "d_k"), seed, size)


def explain_multi(seed, size, source):
    """Why the layer fails at (d_in, d_out, n_heads, context_length, B, T): a number written in,
    then d_in read where d_out or head_dim is needed (equal at the notebook's sizes), then the rest."""
    names = ("d_in", "d_out", "n_heads", "context_length", "B", "T", "head_dim")
    seed, size = tuple(seed) + (seed[1] // seed[2],), tuple(size) + (size[1] // size[2],)
    defs = ("CausalMultiHeadAttention",)
    literal = literal_explanation(source, defs, names, seed, size)
    if literal:
        return literal
    if seed[0] == seed[1] and size[0] != size[1]:
        found = last_dim_of(source, frozenset(defs), 1)  # forward(self, x): the width of x
        if found:
            return msg("likely.width_d_in", line=found.line, code=found.code, d_in=size[0], d_out=size[1])
    return size_explanation(source, defs, names, seed, size)


EXPLAIN = {("B", "T", "d_in", "d_k"): explain_single,
           ("d_in", "d_out", "n_heads", "context_length", "B", "T"): explain_multi}


def other_sizes(v, calls, cases, sizes, names, judge_case):
    """The shared judge_other_sizes, for case judges that also take the case's sizes; a failure
    names what differs at that size (EXPLAIN, chosen by the sizes' names)."""
    explain = EXPLAIN.get(tuple(names))
    judge_other_sizes(v, calls, list(zip(cases, sizes)), [sizes_label(names, size) for size in sizes],
                      lambda sub, call, case_and_size: judge_case(sub, call, *case_and_size),
                      explain=explain and (lambda i, sub, source: explain(sizes[0], sizes[i], source)))


def weights_in(call, shape):
    """The weights of an (out, weights) pair, when they have the shape to be drawn."""
    value = call.get("value")
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], torch.Tensor):
        if tuple(value[1].shape) == tuple(shape):
            return value[1]
    return None


def judge_single(v, outputs, inputs, jctx):
    calls = outputs["calls"]
    seed = inputs["single"][0]
    B, T = SINGLE_SIZES[0][:2]
    # Drawn before judging: a failing step is where the heatmap helps most.
    w = weights_in(calls[0], (B, T, T))
    ref_w = reference_single(seed["x"], *seed["W"])[1]
    v.visuals["heatmaps"] = [
        {"label": {"key": "visual.batch", "params": {"n": b}},
         "learner": round_matrix(w[b]) if w is not None else None, "reference": round_matrix(ref_w[b])}
        for b in range(B)
    ]
    judge_single_case(v, calls[0], seed, SINGLE_SIZES[0])
    other_sizes(v, calls, inputs["single"], SINGLE_SIZES, ("B", "T", "d_in", "d_k"), judge_single_case)
    no_kernel(v, "causal_attention", jctx.source, {"causal_attention"}, jctx.kernels)


# ---------------------------------------------------------------- leakage

def probe_leakage(ctx, inputs):
    fn = ctx.get("causal_attention")
    calls = []
    for i, case in enumerate(inputs["single"]):
        W = case["W"]
        calls.append({
            "base": ctx.call(fn, case["x"], *W, primary=i == 0),
            "last": ctx.call(fn, case["x_last"], *W, primary=i == 0),
            "mid": ctx.call(fn, case["x_mid"], *W, primary=i == 0),
        })
    return {"calls": calls}


@of_the_inputs
def unmasked(x, Wq, Wk, Wv):
    """The notebook's broken layer: no mask at all."""
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    w = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
    return w @ v


def leak(a, b, pos):
    """Largest change in the outputs before position pos."""
    if pos == 0:
        return 0.0
    return float((a[:, :pos].double() - b[:, :pos].double()).abs().max())


def first_output(call):
    """The `out` of a (out, weights) pair, or None when the call did not give one."""
    value = call.get("value")
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], torch.Tensor):
        return value[0]
    return None


def judge_leakage_case(v, calls, case, size):
    B, T, d, dk = size
    outs = {}
    for name in ("base", "last", "mid"):
        call = calls[name]
        require_ran(v, call, "causal_attention")
        value = call.get("value")
        out = first_output(call)
        if out is None and isinstance(value, tuple) and value:
            likely = likely_for_value(value[0])
            likely = msg("likely.returns_pair") if likely["key"] == "likely.unknown" else likely
        else:
            likely = likely_for_value(value) if value is None else msg("likely.returns_pair")
        v.require("returns", out is not None and out.shape == (B, T, dk), "check.returns_pair",
                  fn="causal_attention", got=describe(value), likely=likely)
        bad = first_nonfinite(out)
        v.require("finite", bad is None, "check.not_finite", what="out", count=bad[1] if bad else 0,
                  where=shape_str(bad[0]) if bad else "",
                  likely=lambda: diagnose_weights(value[1], case["x"], *case["W"]) if isinstance(value[1], torch.Tensor)
                  and value[1].shape == (B, T, T) else msg("likely.unknown"))
        outs[name] = out
    for name, pos in (("last", T - 1), ("mid", T // 2)):
        amount = leak(outs["base"], outs[name], pos)
        v.require("no-leak", amount < 1e-6, "check.leak", pos=pos, got=amount, likely=msg("likely.leak"))


def judge_leakage(v, outputs, inputs, jctx):
    calls = outputs["calls"]
    judge_leakage_case(v, calls[0], inputs["single"][0], SINGLE_SIZES[0])
    seed = inputs["single"][0]
    yours = leak(first_output(calls[0]["base"]), first_output(calls[0]["last"]), SINGLE_SIZES[0][1] - 1)
    broken = leak(unmasked(seed["x"], *seed["W"]), unmasked(seed["x_last"], *seed["W"]), SINGLE_SIZES[0][1] - 1)
    # The notebook's own demonstration that the test catches an unmasked layer, shown beside the learner's figure.
    v.visuals["leak"] = {"yours": yours, "unmasked": broken}
    other_sizes(v, calls, inputs["single"], SINGLE_SIZES, ("B", "T", "d_in", "d_k"), judge_leakage_case)


# ---------------------------------------------------------------- multi-head

def probe_multi(ctx, inputs):
    cls = ctx.get("CausalMultiHeadAttention")
    cases = []
    for i, ((d_in, d_out, H, cl, B, T), case) in enumerate(zip(MULTI_SIZES, inputs["multi"])):
        made = ctx.call(lambda: cls(d_in, d_out, H, cl), primary=i == 0)
        if "error" in made:
            cases.append({"made": made})
            continue
        module = made["value"]
        layout = {}
        for attr in ("W_q", "W_k", "W_v", "out_proj"):
            layer = getattr(module, attr, None)
            layout[attr] = tuple(layer.weight.shape) if isinstance(layer, torch.nn.Linear) else None
        if all(layout.values()) and layout["W_q"] == (d_out, d_in) and layout["out_proj"] == (d_out, d_out):
            # Our own weights, so the judge knows them without trusting the learner's process.
            with torch.no_grad():
                module.W_q.weight.copy_(case["w"]["W_q"])
                module.W_k.weight.copy_(case["w"]["W_k"])
                module.W_v.weight.copy_(case["w"]["W_v"])
                module.out_proj.weight.copy_(case["w"]["out_w"])
                if module.out_proj.bias is not None:
                    module.out_proj.bias.copy_(case["w"]["out_b"])
            module.eval()
            base = ctx.call(module, case["x"], primary=i == 0)
            last = ctx.call(module, case["x_last"], primary=i == 0)
            # Once is enough: keeping state from the first call is a bug of the code, not of a size.
            prefix = ctx.call(module, case["x_prefix"]) if i == 0 else None
        else:
            base = last = prefix = None
        n_params = sum(p.numel() for p in module.parameters())
        cases.append({"made": {"value": None}, "layout": layout, "base": base, "last": last, "prefix": prefix,
                      "params": n_params})
    counts = {}
    if "CausalMultiHeadAttention" in vars(ctx.module):
        for heads in (1, 4):
            made = ctx.call(lambda: sum(p.numel() for p in cls(8, 8, heads, 16).parameters()))
            counts[heads] = made.get("value")
    return {"cases": cases, "counts": counts}


@of_the_inputs
def reference_multi(x, w, H):
    B, T, _ = x.shape
    d_out = w["W_q"].shape[0]
    hd = d_out // H
    q, k, v = (
        (x @ w[n].T).view(B, T, H, hd).transpose(1, 2) for n in ("W_q", "W_k", "W_v")
    )
    ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, d_out)
    scores = q @ k.transpose(2, 3) / hd**0.5
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return ctx @ w["out_w"].T + w["out_b"], weights


def diagnose_multi(y, x, w, H):
    B, T, _ = x.shape
    d_out = w["W_q"].shape[0]
    hd = d_out // H
    q, k, v = ((x @ w[n].T).view(B, T, H, hd).transpose(1, 2) for n in ("W_q", "W_k", "W_v"))
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)

    def attend(scale=hd**0.5, mask=future, fill=float("-inf"), merge="ok", proj=True, after=False, dim=-1):
        s = q @ k.transpose(2, 3) / scale
        if after:
            wts = torch.softmax(s, -1).masked_fill(mask, 0.0)
        else:
            wts = torch.softmax(s.masked_fill(mask, fill), dim)
        c = wts @ v
        c = c.transpose(1, 2).reshape(B, T, d_out) if merge == "ok" else c.reshape(B, T, d_out)
        if proj == "no bias":
            return c @ w["out_w"].T
        return c @ w["out_w"].T + w["out_b"] if proj else c

    candidates = [
        (lambda: attend(scale=d_out**0.5), msg("likely.scale_d_out")),
        (lambda: attend(scale=1.0), msg("likely.scale_none")),
        (lambda: attend(mask=torch.zeros(T, T, dtype=torch.bool)), msg("likely.no_mask")),
        (lambda: attend(fill=0.0), msg("likely.fill_zero")),
        (lambda: attend(after=True), msg("likely.mask_after_softmax")),
        (lambda: attend(mask=future.T), msg("likely.mask_transposed")),
        (lambda: attend(mask=torch.ones(T, T, dtype=torch.bool).triu()), msg("likely.mask_diagonal")),
        (lambda: attend(dim=-2), msg("likely.softmax_dim")),
        (lambda: attend(merge="bad"), msg("likely.merge_heads")),
        (lambda: attend(proj=False), msg("likely.no_out_proj")),
        (lambda: attend(proj="no bias"), msg("likely.no_out_bias")),
    ]
    if H == 1:  # one head: head_dim is d_out, so that scale is right
        candidates = [c for c in candidates if c[1]["key"] != "likely.scale_d_out"]
    return matching_mistake(y, candidates)


def call_again(v, got, expected, what):
    """The same layer, called once more after a right first call, must still be right."""
    likely = msg("likely.call_again")
    got = require_tensor(v, "call-again", what, got, tuple(expected.shape), likely)
    if not close(got, expected):
        err, where = max_error(got, expected)
        v.require("call-again", False, "check.values", what=what, err=err, where=shape_str(where), tol="1e-5",
                  likely=likely)
    v.expect("call-again", True)


def judge_prefix(v, case, inp, size):
    """The notebook's layer, called once more on a prefix of x. Judged after the other sizes:
    code with the notebook's numbers written in fails there, with the message that fits."""
    H = size[2]
    prefix, t = case["prefix"], inp["x_prefix"].shape[1]
    if "error" in prefix:
        e = prefix["error"]
        v.require("call-again", False, "check.call_again_raised", t=t, kind=e["kind"], detail=e["detail"],
                  line=e["frames"][-1]["line"] if e["frames"] else "?", likely=msg("likely.call_again"))
    call_again(v, prefix["value"], reference_multi(inp["x_prefix"], inp["w"], H)[0], msg("value.again_prefix", t=t))


def judge_multi_case(v, case, inp, size):
    d_in, d_out, H, cl, B, T = size
    args = f"{d_in}, {d_out}, {H}, {cl}"
    require_ran(v, case["made"], f"CausalMultiHeadAttention({args})")
    expected_layout = {"W_q": (d_out, d_in), "W_k": (d_out, d_in), "W_v": (d_out, d_in), "out_proj": (d_out, d_out)}
    for attr, shape in expected_layout.items():
        got = case["layout"][attr]
        v.require("constructor", got is not None and tuple(got) == shape, "check.constructor", args=args,
                  attr=attr, expected=shape_str(shape), got=shape_str(got) if got else "None")
    for name in ("base", "last"):
        call = case[name]
        require_ran(v, call, "forward")
    expected_params = 3 * d_in * d_out + d_out * d_out + d_out
    v.require("parameters", case["params"] == expected_params, "check.params_count",
              expected=expected_params, got=case["params"])
    x = inp["x"]
    value = case["base"]["value"]
    shape_likely = msg("likely.forward_tuple") if isinstance(value, tuple) else msg("likely.multi_shape")
    y = require_tensor(v, "shape", "forward(x)", value, (B, T, d_out), shape_likely)
    y2 = case["last"]["value"]
    bad = first_nonfinite(y)
    v.require("finite", bad is None, "check.not_finite", what="forward(x)", count=bad[1] if bad else 0,
              where=shape_str(bad[0]) if bad else "", likely=lambda: diagnose_multi(y, x, inp["w"], H))
    ref, _ = reference_multi(x, inp["w"], H)
    right = close(y, ref)
    if isinstance(y2, torch.Tensor) and y2.shape == y.shape:
        if right:  # a right first call and a wrong second one is no leak: forward changed the layer
            call_again(v, y2, reference_multi(inp["x_last"], inp["w"], H)[0], msg("value.again_last"))
        amount = leak(y, y2, T - 1)
        v.require("no-leak", amount < 1e-6, "check.leak", pos=T - 1, got=amount, likely=lambda: diagnose_multi(y, x, inp["w"], H))
    if not right:
        err, where = max_error(y, ref)
        v.require("matches-pytorch", False, "check.values", what="forward(x)", err=err, where=shape_str(where),
                  tol="1e-5", likely=lambda: diagnose_multi(y, x, inp["w"], H))
    v.expect("matches-pytorch", True)
    inputs_unchanged(v, "forward", ["x"], case["base"]["args"], (x,))


def judge_multi(v, outputs, inputs, jctx):
    cases = outputs["cases"]
    soft = (cases[0].get("base") or {}).get("softmax")
    _, ref_w = reference_multi(inputs["multi"][0]["x"], inputs["multi"][0]["w"], MULTI_SIZES[0][2])
    have = isinstance(soft, torch.Tensor) and soft.shape == ref_w.shape
    # Drawn before judging: a failing step is where the heatmap helps most.
    v.visuals["heatmaps"] = [
        {"label": {"key": "visual.batch_head", "params": {"b": 0, "h": h}},
         "learner": round_matrix(soft[0, h]) if have else None,
         "reference": round_matrix(ref_w[0, h])}
        for h in range(ref_w.shape[1])
    ]
    judge_multi_case(v, cases[0], inputs["multi"][0], MULTI_SIZES[0])
    counts = outputs["counts"]
    v.expect("heads-share-parameters", counts.get(1) is not None and counts.get(1) == counts.get(4),
             "check.params_heads", one=counts.get(1), four=counts.get(4))
    other_sizes(v, cases, inputs["multi"], MULTI_SIZES, ("d_in", "d_out", "n_heads", "context_length", "B", "T"),
                      judge_multi_case)
    no_kernel(v, "forward", jctx.source, {"CausalMultiHeadAttention"}, jctx.kernels)
    judge_prefix(v, cases[0], inputs["multi"][0], MULTI_SIZES[0])


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
    shapes = [x, split, per_head, scores, torch.softmax(scores, -1), context, merged]
    return {k: tuple(t.shape) for k, t in zip(SHAPE_KEYS, shapes)}


SHAPE_MISTAKES = {
    "q_per_head": "likely.per_head_transpose",
    "scores": "likely.scores_shape",
    "weights": "likely.weights_same_as_scores",
    "context_per_head": "likely.context_shape",
    "context_merged": "likely.merged_shape",
}


def judge_shapes_case(v, call, _case, size):
    require_ran(v, call, "expected_shapes")
    got = call["value"]
    v.require("returns-dict", isinstance(got, dict), "check.shapes_not_dict", got=describe(got))
    missing = [k for k in SHAPE_KEYS if k not in got]
    v.require("all-keys", not missing, "check.shapes_missing", keys=", ".join(missing))
    truth = true_shapes(*size)
    for key in SHAPE_KEYS:
        value = got[key]
        if isinstance(value, list) and all(isinstance(i, int) for i in value):
            v.require("tuples", False, "check.shapes_type", key=key, expected=shape_str(truth[key]),
                      got=str(value), type="list")
        is_shape = isinstance(value, tuple) and all(isinstance(i, int) and not isinstance(i, bool) for i in value)
        v.require("tuples", is_shape, "check.shapes_type", key=key, expected=shape_str(truth[key]),
                  got=describe(value) if not isinstance(value, tuple) else str(value), type=describe(value))
        v.require("values", tuple(value) == truth[key], "check.shapes_value", key=key,
                  expected=shape_str(truth[key]), got=shape_str(value),
                  likely=msg(SHAPE_MISTAKES.get(key, "likely.shape_stage")))


def judge_shapes(v, outputs, inputs, jctx):
    calls = outputs["calls"]
    judge_shapes_case(v, calls[0], None, SHAPE_SIZES[0])
    other_sizes(v, calls, [None] * len(calls), SHAPE_SIZES, ("B", "T", "H", "hd"), judge_shapes_case)


# A save's checked steps run in this order in one child, and the judge takes each step as the
# child finishes it (worker.py). Multi-head is last because it takes longest to judge: shapes
# (0.5 ms to run) is then judged while multi-head runs, not after it. The app keeps the lesson's order.
STEPS = {
    "single-head": StepSpec(probe_single, judge_single, ("causal_attention",)),
    "leakage": StepSpec(probe_leakage, judge_leakage, ("causal_attention",)),
    "shapes": StepSpec(probe_shapes, judge_shapes, ("expected_shapes",)),
    "multi-head": StepSpec(probe_multi, judge_multi, ("CausalMultiHeadAttention",)),
}


# ---------------------------------------------------------------- experiments (no verdict, just data)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
MEMORY_DEFAULTS = {"heads": 12, "batch": 1, "dtype": "float32", "t_min": 64, "t_max": 1024}
MEASURE_LIMIT = 1 << 24  # score elements per run; larger settings show only the formula
MEASURE_BUDGET = 2.0  # seconds for the measured column, within the step's time limit


def memory_settings(params) -> dict:
    s = dict(MEMORY_DEFAULTS)
    s.update({k: v for k, v in (params or {}).items() if k in MEMORY_DEFAULTS})
    return s


class SquareTensors:
    """Records the largest (…, T, T) tensor that matmul, softmax or masked_fill produce:
    the score tensor the learner's code really builds."""

    TARGETS = [(torch, "matmul"), (torch, "bmm"), (torch, "einsum"), (torch, "softmax"), (F, "softmax"),
               (torch.Tensor, "__matmul__"), (torch.Tensor, "matmul"), (torch.Tensor, "softmax"),
               (torch.Tensor, "masked_fill"), (torch, "masked_fill"), (torch.Tensor, "__truediv__"),
               (torch.Tensor, "__mul__")]

    def __init__(self, T):
        self.T = T
        self.bytes = 0
        self.saved = []

    def __enter__(self):
        for owner, name in self.TARGETS:
            original = getattr(owner, name)
            self.saved.append((owner, name, original))
            setattr(owner, name, self._wrap(original))
        return self

    def _wrap(self, original):
        def recording(*args, **kwargs):
            out = original(*args, **kwargs)
            if isinstance(out, torch.Tensor) and out.dim() >= 2 and out.shape[-2:] == (self.T, self.T):
                self.bytes = max(self.bytes, out.numel() * out.element_size())
            return out
        return recording

    def __exit__(self, *exc):
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)


def probe_memory(ctx, inputs):
    import time

    cls = ctx.get("CausalMultiHeadAttention")
    s = memory_settings(ctx.params)
    dtype = DTYPES.get(s["dtype"], torch.float32)
    measured = {}
    deadline = time.monotonic() + MEASURE_BUDGET
    T = int(s["t_min"])
    g = torch.Generator().manual_seed(3)
    while T <= int(s["t_max"]):
        if s["batch"] * s["heads"] * T * T > MEASURE_LIMIT or time.monotonic() > deadline:
            break
        width = 4 * int(s["heads"])  # the head width does not change the size of the scores
        made = ctx.call(lambda: cls(width, width, int(s["heads"]), T).to(dtype).eval(), primary=T == s["t_min"])
        if "error" in made:
            break
        x = torch.randn(int(s["batch"]), T, width, generator=g).to(dtype)
        with SquareTensors(T) as seen:
            run = ctx.call(made["value"], x, primary=T == s["t_min"])
        if "error" in run:
            break
        measured[T] = seen.bytes or None
        T *= 2
    return {"settings": s, "measured": [[t, b] for t, b in measured.items()]}


def judge_memory(v, outputs, inputs, jctx):
    v.visuals["memory"] = {"settings": outputs["settings"], "measured": outputs["measured"]}
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
    return {"head_dim": getattr(module, "head_dim", None), "qkv": qkv,
            "total": sum(p.numel() for p in module.parameters())}


def judge_reflect(v, outputs, inputs, jctx):
    v.visuals["reflect"] = {k: outputs.get(k) for k in ("head_dim", "qkv", "total")}
    v.expect("runs", True)


STEPS["memory"] = StepSpec(probe_memory, judge_memory, ("CausalMultiHeadAttention",))
STEPS["reflect"] = StepSpec(probe_reflect, judge_reflect, ("CausalMultiHeadAttention",))
