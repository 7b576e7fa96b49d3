"""Tools for a lesson's judges: they run in the judge process, which never runs learner code.

A judge gets the decoded outputs of a probe and the pristine inputs it made itself,
and records checks whose messages are catalog keys with parameters.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import math
import unicodedata

import torch

from tutor.engine.codec import Opaque, type_name
from tutor.kit.nesting import _other_sizes_likely, nest_likely  # noqa: F401
from tutor.kit.source_tools import (  # noqa: F401
    discarded_call,
    front_dims,
    kept_state,
    last_dim_of,
    size_literals,
    squeezes,
)
from tutor.model.results import Check, Message

# Fragments of the library's attention kernels' names: F.scaled_dot_product_attention, the
# torch.ops.aten variants (_scaled_dot_product_flash_attention_for_cpu, ...), nn.MultiheadAttention.
KERNEL_FRAGMENTS = {
    "scaled_dot_product": "F.scaled_dot_product_attention",
    "multiheadattention": "nn.MultiheadAttention",
    "multi_head_attention": "nn.MultiheadAttention",
    "flex_attention": "flex_attention",
}


class Stop(Exception):
    """A required check failed: the checks after it would only repeat the same fault."""


def of_the_inputs(fn):
    """For reference values of the judge's own inputs: those are made once and never change,
    so each value is computed once per process. An entry keeps its arguments alive, so that
    their ids, the key, cannot pass to other objects; called with anything else, it only misses."""
    cache: dict = {}

    @functools.wraps(fn)
    def cached(*args):
        key = tuple(map(id, args))
        hit = cache.get(key)
        if hit is None or any(a is not b for a, b in zip(hit[0], args, strict=False)):
            if len(cache) >= 256:
                cache.clear()
            hit = cache[key] = (args, fn(*args))
        return hit[1]

    return cached


# Scores a trained model can reach, past float32's exp range (exp overflows above 88.7): a
# softmax written as exp(s) / sum(exp(s)) gives NaN there, torch.softmax (which subtracts each
# row's maximum first) does not. For the lessons' large-score checks, with likely.softmax_overflow.
LARGE_SCORES = 150.0


def large_scores_factor(scores) -> float:
    """What stretches scores (…, T, T) until the largest a query sees (its own key and the
    earlier ones) is LARGE_SCORES: multiply W_q, or the scores, by it."""
    T = scores.shape[-1]
    seen = (
        scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), 0.0)
        .abs()
        .max()
    )
    return LARGE_SCORES / float(seen)


def msg(key: str, **params) -> dict:
    """A nested message reference, rendered in the reader's language."""
    return {"key": key, "params": params}


def shape_str(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def describe(value) -> dict:
    """What came, as a message: rendered in the reader's language."""
    if isinstance(value, torch.Tensor):
        return msg(
            "value.tensor",
            dtype=str(value.dtype).removeprefix("torch."),
            shape=shape_str(value.shape),
        )
    if isinstance(value, Opaque):
        return msg("value.opaque", type=str(value))
    if isinstance(value, tuple):
        return msg("value.tuple", n=len(value))
    if isinstance(value, list):
        return msg("value.list", n=len(value))
    if value is None:
        return msg("value.none")
    return msg("value.other", type=type_name(value))


class Verdict:
    def __init__(self, source: str = ""):
        self.checks: list[Check] = []
        self.visuals: dict = {}
        self.source = source  # the learner's file, for diagnoses that read it (source_kit)

    def _record(self, check_id: str, ok: bool, key: str, params: dict) -> None:
        if not ok:
            # Diagnoses are costly and only needed on failure: they may come as callables.
            params = {k: v() if callable(v) else v for k, v in params.items()}
        for i, existing in enumerate(self.checks):
            if existing.id == check_id:
                if existing.status == "pass" and not ok:
                    self.checks[i] = Check(check_id, "fail", Message(key, params))
                return
        self.checks.append(
            Check(check_id, "pass" if ok else "fail", None if ok else Message(key, params))
        )

    def expect(self, check_id: str, ok: bool, message_key: str = "", /, **params) -> bool:
        self._record(check_id, bool(ok), message_key, params)
        return bool(ok)

    def require(self, check_id: str, ok: bool, message_key: str = "", /, **params) -> None:
        if not self.expect(check_id, ok, message_key, **params):
            raise Stop

    def passed(self) -> bool:
        return all(c.status == "pass" for c in self.checks)

    def failed_message(self) -> dict | None:
        for c in self.checks:
            if c.status != "pass":
                return {"key": c.message.key, "params": c.message.params}
        return None


def likely_for_value(value) -> dict:
    if value is None:
        return msg("likely.forgot_return")
    if isinstance(value, Opaque) and value.type.startswith("numpy"):
        return msg("likely.numpy")
    if isinstance(value, list):
        return msg("likely.list")
    return msg("likely.unknown")


def row_place(index: tuple) -> dict:
    """Where a row of the weights lies, by its leading indexes: a sequence of the batch, its
    head, or (more leading dimensions) the matrix at that index; for a message's {where}."""
    index = tuple(int(i) for i in index)
    if not index:
        return msg("value.in_weights")
    if len(index) == 1:
        return msg("value.in_sequence", b=index[0])
    if len(index) == 2:
        return msg("value.in_sequence_head", b=index[0], h=index[1])
    return msg("value.in_matrix", index=shape_str(index))


def failure_params(e: dict) -> dict:
    """kind, detail and the learner's innermost line of a call's error, for a message."""
    return {
        "kind": e["kind"],
        "detail": e["detail"],
        "line": e["frames"][-1]["line"] if e["frames"] else "?",
    }


def require_ran(v: Verdict, call: dict, fn: str) -> None:
    """A call that raised (at a size past the notebook's: those end the probe) fails the step here."""
    if "error" in call:
        v.require("runs", False, "check.raised", fn=fn, **failure_params(call["error"]))


def judged(source: str, judge_case, *args) -> Verdict:
    """judge_case(sub, *args) on a verdict of its own, stopped at its first required failure."""
    sub = Verdict(source)
    with contextlib.suppress(Stop):
        judge_case(sub, *args)
    return sub


def large_scores_likely(weights, scores, mask) -> dict:
    """Why weights came out NaN for scores that reach LARGE_SCORES (mask: True where hidden), by
    rebuilding the two usual softmaxes that fail there, in the scores' own dtype: exp written by
    hand, or torch.softmax over every key with the future cut out and renormalized after."""

    def by_hand():
        e = torch.exp(scores).masked_fill(mask, 0.0)
        return e / e.sum(-1, keepdim=True)

    def renormalized():
        p = torch.softmax(scores, -1).masked_fill(mask, 0.0)
        return p / p.sum(-1, keepdim=True)

    found = matching_mistake(
        weights,
        [
            (by_hand, msg("likely.softmax_overflow")),
            (renormalized, msg("likely.softmax_renormalized")),
        ],
    )
    return msg("likely.softmax_large") if found["key"] == "likely.unknown" else found


def large_scores_check(
    v: Verdict, sub: Verdict, key: str, overflow: tuple[str, ...] = ("finite",), likely=None
) -> None:
    """The large-scores check: sub, the step's own checks judged (judged()) on the call whose
    scores reach LARGE_SCORES. Its first failure is said in key's {reason} (with {top}); where
    that failure is one of overflow's checks, its likely mistake is `likely` (a message or a
    function giving one; large_scores_likely where the weights can be had), else
    likely.softmax_large, which names both usual causes."""
    if not sub.passed():
        failed = next(c for c in sub.checks if c.status != "pass")
        reason, said = sub.failed_message(), ""
        if failed.id in overflow:
            found = likely() if callable(likely) else likely
            reason, said = nest_likely(reason, found or msg("likely.softmax_large"))
        v.require("large-scores", False, key, top=f"{LARGE_SCORES:g}", reason=reason, likely=said)
    v.expect("large-scores", True)


def judge_other_sizes(
    v: Verdict, calls: list, cases: list, labels: list[str], judge_case, explain=None
) -> None:
    """Judge the sizes after the notebook's one; report the first that fails as one check.

    explain(case_index, sub_verdict, source) -> the likely mistake at that size, or None:
    what differs there (the rank, a width, T, the batch), a number of the lab's only where
    the source really has one (see size_explanation). Without one, the failure's own.
    """
    for i, (call, case, label) in enumerate(zip(calls[1:], cases[1:], labels[1:], strict=False), 1):
        sub = judged(v.source, judge_case, call, case)
        if not sub.passed():
            reason = sub.failed_message()
            reason, likely = nest_likely(reason, _other_sizes_likely(explain, i, sub, reason))
            v.require(
                "other-sizes", False, "check.other_sizes", sizes=label, reason=reason, likely=likely
            )
    v.expect("other-sizes", True)


def _fmt(value) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


def literal_explanation(source: str, defs, names, seed, size) -> dict | None:
    """A number of the lab's written in the definitions of defs, where a size that differs
    here should be read from a shape. names, seed, size: parallel tuples, e.g. ("T", "d_k"),
    (6, 8), (9, 32). 0 and 1 are everywhere (`dim=1`, `diagonal=1`): never a sign."""
    by_value: dict = {}
    for n, a, b in zip(names, seed, size, strict=False):
        if a != b and a not in (0, 1):
            by_value.setdefault(a, []).append((n, b))
    wanted, size_of = [], {}
    for a, named in by_value.items():
        label = "/".join(n for n, _ in named)
        # The scale: math.sqrt(8) has the 8 itself; `/ 2.83`, `/ 2` (√4) and `* 0.354` (1/√8) do not.
        for value, shown in (
            (a, label),
            (math.sqrt(a), "√" + label),
            (1 / math.sqrt(a), "1/√" + label),
        ):
            wanted.append((value, shown))
            size_of[shown] = a
    found = size_literals(source, frozenset(defs), tuple(wanted))
    if not found:
        return None
    label, value, where = found[0]
    return msg(
        "likely.literal",
        value=_fmt(value),
        name=label,
        line=where.line,
        code=where.code,
        now=", ".join(f"{n}={b}" for n, b in by_value[size_of[label]]),
    )


def state_explanation(source: str, defs) -> dict | None:
    found = kept_state(source, frozenset(defs))
    return msg("likely.kept_state_at", line=found.line, code=found.code) if found else None


def squeeze_explanation(source: str, defs, names, seed, size) -> dict | None:
    """A bare `squeeze()`, at a size with a 1 where the lab has none."""
    ones = [n for n, a, b in zip(names, seed, size, strict=False) if b == 1 and a != 1]
    found = squeezes(source, frozenset(defs)) if ones else None
    return (
        msg("likely.squeeze", line=found.line, code=found.code, ones=", ".join(ones))
        if found
        else None
    )


def differ_explanation(names, seed, size) -> dict:
    """What differs at this size, the lab's value in brackets: T=9 (6), d_k=32 (8)."""
    return msg(
        "likely.sizes_differ",
        diff=", ".join(
            f"{n}={b} ({a})" for n, a, b in zip(names, seed, size, strict=False) if a != b
        ),
    )


def size_explanation(source: str, defs, names, seed, size) -> dict:
    """Why code right at the lab's sizes (seed) fails at size, in the generic order: a number
    of the lab's written in, a bare squeeze() at a size of 1, state kept from an earlier call,
    else what differs at this size."""
    return (
        literal_explanation(source, defs, names, seed, size)
        or squeeze_explanation(source, defs, names, seed, size)
        or state_explanation(source, defs)
        or differ_explanation(names, seed, size)
    )


def require_pair(
    v: Verdict, fn: str, value, out_shape: tuple, weights_shape: tuple, usual: str
) -> tuple:
    """(out, weights) as the lab asks, or the step stops with why not."""
    if isinstance(value, tuple) and len(value) == 2:
        first, second = value
        swapped = (
            isinstance(first, torch.Tensor)
            and isinstance(second, torch.Tensor)
            and tuple(first.shape) == tuple(weights_shape)
            and tuple(second.shape) == tuple(out_shape)
            and tuple(out_shape) != tuple(weights_shape)
        )
        v.require(
            "returns",
            not swapped,
            "check.returns_pair",
            fn=fn,
            got=describe(value),
            likely=msg("likely.pair_order"),
        )
        v.expect("returns", True)
        return value
    likely = msg(usual) if isinstance(value, (tuple, torch.Tensor)) else likely_for_value(value)
    if likely["key"] == "likely.unknown":
        likely = msg(usual)
    v.require("returns", False, "check.returns_pair", fn=fn, got=describe(value), likely=likely)
    return value


def require_tensor(
    v: Verdict, check_id: str, what: str, value, shape: tuple, likely_shape=None
) -> torch.Tensor:
    """Tensor, of the expected shape, floating point, finite: or the step stops here."""
    v.require(
        check_id,
        isinstance(value, torch.Tensor),
        "check.not_tensor",
        what=what,
        got=describe(value),
        likely=likely_for_value(value),
    )
    v.require(
        check_id,
        tuple(value.shape) == tuple(shape),
        "check.shape",
        what=what,
        expected=shape_str(shape),
        got=shape_str(value.shape),
        likely=likely_shape or msg("likely.shape"),
    )
    v.require(
        "dtype",
        value.dtype == torch.float32 or value.dtype == torch.float64,
        "check.dtype",
        what=what,
        expected="float32",
        got=str(value.dtype).removeprefix("torch."),
        likely=msg("likely.dtype"),
    )
    return value


def first_nonfinite(t: torch.Tensor):
    bad = ~torch.isfinite(t)
    if not bad.any():
        return None
    return tuple(int(i) for i in bad.nonzero()[0]), int(bad.sum())


def max_error(a: torch.Tensor, b: torch.Tensor):
    diff = (a.double() - b.double()).abs()
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
    flat = int(diff.argmax())
    where = []
    for size in reversed(diff.shape):  # torch.unravel_index costs ~0.5 s on its first call
        where.append(flat % size)
        flat //= size
    return float(diff.max()), tuple(reversed(where))


def matching_mistake(got: torch.Tensor, candidates) -> dict:
    """The likely mistake whose rebuilt result equals what came (NaN matching NaN), else unknown.

    candidates: (make, likely) pairs; make is called only while nothing has matched yet.
    """
    got = torch.nan_to_num(got.double(), 7.0)  # in double: code in float64 is compared, not a crash
    for make, likely in candidates:
        cand = make()
        if cand.shape == got.shape and torch.allclose(
            torch.nan_to_num(cand.double(), 7.0), got, atol=1e-5
        ):
            return likely
    return msg("likely.unknown")


# The notebooks' floor: LM3-L3 asserts torch.allclose(out, ref, atol=1e-5), which keeps
# allclose's rtol=1e-5; 实验 02 asserts torch.allclose(row_sums, ones) (atol=1e-8, rtol=1e-5)
# and a largest error below 1e-5. No check of the tutor may be looser than these.
ATOL = 1e-5
RTOL = 1e-5
SUMS_ATOL = 1e-8


def close(a: torch.Tensor, b: torch.Tensor, atol: float = ATOL, rtol: float = RTOL) -> bool:
    """Same shape and |a - b| < atol + rtol·|b| everywhere, in float64: torch.allclose(a, b,
    atol=1e-5) by default, held with < (so rtol=0 is the notebooks' `error < atol`). NaN is
    never close, nor is an infinity to anything."""
    if a.shape != b.shape:
        return False
    a, b = a.double(), b.double()
    return bool(((a - b).abs() < atol + rtol * b.abs()).all())


def rows_sum_to_one(weights: torch.Tensor) -> torch.Tensor:
    """Per row of weights (…, T_k): whether it sums to 1 as 实验 02's assert asks,
    torch.allclose(sums, ones) (atol=1e-8, rtol=1e-5), the stricter of the notebooks'."""
    sums = weights.double().sum(-1)
    return (sums - 1.0).abs() <= SUMS_ATOL + RTOL


def changed_input(v: Verdict, fn: str, names: list[str], after: tuple, pristine: tuple) -> str:
    """Check inputs-unchanged; the name of the first input the call changed in place, or ""."""
    for name, a, p in zip(names, after, pristine, strict=False):
        if isinstance(p, torch.Tensor) and isinstance(a, torch.Tensor):
            same = a.shape == p.shape and bool(torch.equal(a.to(p.dtype), p))
            if not same:
                err = max_error(a, p)[0] if a.shape == p.shape else float("nan")
                v.expect(
                    "inputs-unchanged",
                    False,
                    "check.mutated",
                    fn=fn,
                    arg=name,
                    err=err,
                    likely=msg("likely.mutated"),
                )
                return name
    v.expect("inputs-unchanged", True)
    return ""


def _bound_names(tree) -> set[str]:
    """Names the file gives things of its own: classes, functions, arguments, variables, attributes.
    CausalMultiHeadAttention (in super(CausalMultiHeadAttention, self)), a helper written by hand
    and called scaled_dot_product_attention, a variable multi_head_attention_out: all contain a
    kernel's name and are the learner's own code. A kernel reached through such a name is still
    caught when it runs (probe_kit's traps)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            names.add(node.attr)
    return names


def _kernel_words(node, own: set[str]) -> set[str]:
    """Library kernels the code names: attributes and names only. A string is never a call:
    a profiler label (record_function("scaled_dot_product_attention")) or a log line only
    mentions the kernel, and getattr(F, "scaled_dot_" + ...) is caught when it runs (the traps)."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute):
            word = sub.attr
        elif isinstance(sub, ast.Name):
            word = sub.id
        else:
            continue
        if word in own:
            continue
        for fragment, label in KERNEL_FRAGMENTS.items():
            if fragment in word.lower():
                found.add(label)
    return found


def _defines(node, names: frozenset[str]) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name in names
    targets = (
        node.targets
        if isinstance(node, ast.Assign)
        else [node.target]
        if isinstance(node, ast.AnnAssign)
        else []
    )
    return any(isinstance(t, ast.Name) and t.id in names for t in targets)


def _mentions_a_kernel(source: str) -> bool:
    """Whether the parse could find a kernel at all: every word it looks at is in the text, as
    Python reads identifiers (NFKC: a full-width letter is the ASCII one). The parse was a fifth
    of the judge's time in `grade`; most files name no kernel."""
    text = unicodedata.normalize("NFKC", source).lower()
    return any(fragment in text for fragment in KERNEL_FRAGMENTS)


@functools.lru_cache(maxsize=2)
def _parsed(source: str):
    """(tree, its bound names), or None: a file's steps are judged one after another, and
    parsing it again for each was a fifth of the judge's time in `grade`."""
    from tutor.kit.source_tools import parse_source

    tree = parse_source(source)
    if tree is None:
        return None
    try:
        return tree, _bound_names(tree)
    except RecursionError:
        return None


@functools.lru_cache(maxsize=8)
def kernels_in_source(source: str, defs: frozenset[str]) -> frozenset[str]:
    """Library attention kernels named in the definitions of the step's functions.

    Only those definitions: a notebook self-check pasted below them may well call the
    kernel as its reference. Helpers they call are covered by the run-time trap instead.
    """
    if not _mentions_a_kernel(source):
        return frozenset()
    parsed = _parsed(source)
    if parsed is None:
        return frozenset()
    tree, own = parsed
    found: set[str] = set()
    for node in tree.body:
        if _defines(node, defs):
            found |= _kernel_words(node, own)
    return frozenset(found)


def no_kernel(v: Verdict, fn: str, source: str, defs: set[str], runtime: list[str]) -> None:
    used = sorted(kernels_in_source(source, frozenset(defs)) | set(runtime))
    v.expect("own-formula", not used, "check.kernel", fn=fn, kernel=" / ".join(used))


def round_matrix(t: torch.Tensor, digits: int = 4) -> list:
    """A T×T matrix for the heatmap, non-finite values as None (JSON has no NaN)."""
    return [
        [round(x, digits) if math.isfinite(x) else None for x in row] for row in t.double().tolist()
    ]


# ---------------------------------------------------------------- leakage over every position

LEAK_LIMIT = 1e-6  # LM3-L3's self-check 2: `good < 1e-6`


def future_region(T_q: int, T_k: int | None = None) -> torch.Tensor:
    """(T_q, T_k) bool, True where key j comes after query i (queries are the last T_q of the
    T_k positions): the causal future, a hidden region for judge_leakage."""
    T_k = T_q if T_k is None else T_k
    i = torch.arange(T_q).unsqueeze(1) + (T_k - T_q)
    return torch.arange(T_k).unsqueeze(0) > i


def leak_map(base, moved, query_axis: int = 1) -> torch.Tensor | None:
    """M[i, j]: how far output i (along query_axis) moved when input position j changed, the
    largest change over every other axis. moved: the outputs for each change, as a list or
    stacked along dim 0 (probe_leak_map); None unless each is a tensor of base's shape."""
    if not isinstance(base, torch.Tensor) or base.dim() <= query_axis:
        return None
    if isinstance(moved, torch.Tensor):  # probe_kit.probe_leak_map's stacked copies
        if moved.dim() != base.dim() or moved.shape[0] != base.shape[0] * base.shape[query_axis]:
            return None
        moved = list(moved.split(base.shape[0]))
    if not moved or any(not isinstance(m, torch.Tensor) or m.shape != base.shape for m in moved):
        return None
    with torch.no_grad():
        diff = (torch.stack(moved).double() - base.double()).abs()  # (changes, *base.shape)
        diff = torch.nan_to_num(diff, nan=float("inf"))
        others = tuple(d for d in range(1, diff.dim()) if d != query_axis + 1)
        return (diff.amax(dim=others) if others else diff).T.contiguous()


def judge_leak_map(
    v: Verdict,
    base,
    moved,
    regions: list[tuple[dict, torch.Tensor]],
    *,
    query_axis: int = 1,
    limit: float = LEAK_LIMIT,
    likely=None,
    check_id: str = "no-leak",
) -> None:
    """No hidden input moves any output: base, the output on x; moved, the outputs with each
    input position changed in turn (probe_kit.probe_leak_map's, or a list); regions, (its name as a message, (T_q, T_k)
    bool: True where key j is hidden from query i), e.g. (msg("region.future"), future_region(T)).
    Every cell of every region is judged, not a few positions: the first region whose largest
    movement reaches limit fails, at its worst cell. likely: a message, or a callable giving one."""
    got = leak_map(base, moved, query_axis)
    if got is None:
        return  # the shape and finiteness checks before this one say why
    for region, hidden in regions:
        if tuple(hidden.shape) != tuple(got.shape):
            raise ValueError(f"region of shape {tuple(hidden.shape)} for a map {tuple(got.shape)}")
        inside = got.masked_fill(~hidden, 0.0)
        top = float(inside.max()) if inside.numel() else 0.0
        if not top < limit:
            flat = int(inside.argmax())
            i, j = divmod(flat, got.shape[1])
            v.require(
                check_id,
                False,
                "check.leak_region",
                key=j,
                query=i,
                got=top,
                region=region,
                limit=f"{limit:g}",
                likely=likely or msg("likely.leak_region"),
            )
    v.expect(check_id, True)


# ---------------------------------------------------------------- module state


def state_unchanged(
    v: Verdict, before, after, *, check_id: str = "state-unchanged", likely=None
) -> bool:
    """forward left the module as it was: before and after, probe_kit.module_state of the same
    module around the calls, hold the same names, each with the same dtype, shape and values.
    Outputs alone miss a buffer registered in forward, or a bool mask made an additive float
    one: a checkpoint then fails to load, or loads into a mask that no longer masks."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return True  # the calls around it failed, and say so
    likely = likely or msg("likely.module_state")
    for name in sorted(set(before) ^ set(after)):
        change = msg("state.added" if name in after else "state.removed", name=name.lstrip("#"))
        v.expect(check_id, False, "check.module_state_keys", change=change, likely=likely)
        return False
    for name in sorted(before):
        a, b = before[name], after[name]
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            continue
        change = None
        if a.dtype != b.dtype:
            change = msg("state.dtype", before=_dtype(a), after=_dtype(b))
        elif a.shape != b.shape:
            change = msg("state.shape", before=shape_str(a.shape), after=shape_str(b.shape))
        elif not torch.equal(a, b):
            err = max_error(a, b)[0] if a.dtype.is_floating_point else 1.0
            change = msg("state.values", err=f"{err:.3g}")
        if change is not None:
            v.expect(
                check_id,
                False,
                "check.module_state_entry",
                name=name.lstrip("#"),
                change=change,
                likely=likely,
            )
            return False
    v.expect(check_id, True)
    return True


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")
