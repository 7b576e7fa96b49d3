"""Tools for a lesson's judges: they run in the judge process, which never runs learner code.

A judge gets the decoded outputs of a probe and the pristine inputs it made itself,
and records checks whose messages are catalog keys with parameters.
"""

from __future__ import annotations

import contextlib
import functools
import math

import torch

from tutor.engine.codec import Opaque, type_name
from tutor.kit.nesting import _other_sizes_likely, msg, nest_likely  # noqa: F401
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


def shape_str(shape) -> str:
    """A shape (or an index) as the messages write it: `(2, 6, 8)`, `(3,)`, `()`."""
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
            if c.status != "pass" and c.message is not None:
                return {"key": c.message.key, "params": c.message.params}
        return None


def likely_for_value(value) -> dict:
    """The likely mistake for a value that is not a tensor: no return (None), NumPy, a list;
    else likely.unknown."""
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
        reason: dict = sub.failed_message() or {}
        said: object = ""
        if failed.id in overflow:
            found = likely() if callable(likely) else likely
            reason, said = nest_likely(reason, found or msg("likely.softmax_large"))
        v.require("large-scores", False, key, top=f"{LARGE_SCORES:g}", reason=reason, likely=said)
    v.expect("large-scores", True)


def judge_other_sizes(
    v: Verdict, calls: list, cases: list, labels: list, judge_case, explain=None
) -> None:
    """Judge the sizes after the notebook's one; report the first that fails as one check.

    explain(case_index, sub_verdict, source) -> the likely mistake at that size, or None:
    what differs there (the rank, a width, T, the batch), a number of the lab's only where
    the source really has one (see size_explanation). Without one, the failure's own.
    """
    for i, (call, case, label) in enumerate(zip(calls[1:], cases[1:], labels[1:], strict=False), 1):
        sub = judged(v.source, judge_case, call, case)
        if not sub.passed():
            reason = sub.failed_message() or {}
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
        now=[f"{n}={b}" for n, b in by_value[size_of[label]]],
    )


def state_explanation(source: str, defs) -> dict | None:
    """likely.kept_state_at with the line of `defs` that keeps state between calls (a module
    global, an attribute on self or the function), or None when the source shows none."""
    found = kept_state(source, frozenset(defs))
    return msg("likely.kept_state_at", line=found.line, code=found.code) if found else None


def squeeze_explanation(source: str, defs, names, seed, size) -> dict | None:
    """A bare `squeeze()`, at a size with a 1 where the lab has none."""
    ones = [n for n, a, b in zip(names, seed, size, strict=False) if b == 1 and a != 1]
    found = squeezes(source, frozenset(defs)) if ones else None
    return msg("likely.squeeze", line=found.line, code=found.code, ones=ones) if found else None


def differ_explanation(names, seed, size) -> dict:
    """What differs at this size, the lab's value in brackets: T=9 (6), d_k=32 (8)."""
    return msg(
        "likely.sizes_differ",
        diff=[f"{n}={b} ({a})" for n, a, b in zip(names, seed, size, strict=False) if a != b],
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
    """value as a tensor of the expected shape and a floating dtype (float32 or float64), or the
    step stops here (check_id for the type and shape, `dtype` for the dtype). It does not check
    finiteness: first_nonfinite and the `finite` check do, where a step asks for it."""
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


def first_nonfinite(t: torch.Tensor) -> tuple[tuple[int, ...], int] | None:
    """(index of the first NaN or infinity, how many there are), or None when t is finite."""
    bad = ~torch.isfinite(t)
    if not bad.any():
        return None
    return tuple(int(i) for i in bad.nonzero()[0]), int(bad.sum())


def max_error(a: torch.Tensor, b: torch.Tensor) -> tuple[float, tuple[int, ...]]:
    """(largest |a - b|, its index), in float64, a NaN counted as infinitely far; a and b must
    have the same shape."""
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


def round_matrix(t: torch.Tensor, digits: int = 4) -> list:
    """A T×T matrix for the heatmap, non-finite values as None (JSON has no NaN)."""
    return [
        [round(x, digits) if math.isfinite(x) else None for x in row] for row in t.double().tolist()
    ]


# Split by topic (no module over 600 lines); re-exported: lessons import them through tutor.kit.
from tutor.kit.kernels import kernels_in_source, no_kernel  # noqa: E402, F401
from tutor.kit.regions import (  # noqa: E402, F401
    LEAK_LIMIT,
    future_region,
    judge_leak_map,
    leak_map,
    state_unchanged,
)


def failure_code(e: dict) -> str:
    """The code of the learner's innermost line in a call's error ("" when no frame is the
    learner's): a message's `code` parameter, which the record keeps as where it failed."""
    return e["frames"][-1]["code"].strip() if e.get("frames") else ""


def require_call_ran(
    v: Verdict, call: dict, key: str, *, likely: object, check_id: str = "runs", **params
) -> None:
    """A call that raised stops the step with key {params…} {kind} {detail} {line} {code}
    {likely}: the error's fields and its line's code (failure_code); likely may be a callable,
    evaluated then. Unlike require_ran, in the lesson's words and with its diagnosis."""
    if "error" in call:
        e = call["error"]
        found = {**failure_params(e), "code": failure_code(e)}
        v.require(check_id, False, key, **params, **found, likely=likely)
