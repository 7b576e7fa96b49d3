"""Tools for a lesson's judges: they run in the judge process, which never runs learner code.

A judge gets the decoded outputs of a probe and the pristine inputs it made itself,
and records checks whose messages are catalog keys with parameters.
"""

from __future__ import annotations

import ast
import functools
import math

import torch

from ..results import Check, Message
from .codec import Opaque, type_name

KERNEL_NAMES = {
    "scaled_dot_product_attention": "F.scaled_dot_product_attention",
    "MultiheadAttention": "nn.MultiheadAttention",
    "multi_head_attention_forward": "nn.MultiheadAttention",
}


class Stop(Exception):
    """A required check failed: the checks after it would only repeat the same fault."""


def msg(key: str, **params) -> dict:
    """A nested message reference, rendered in the reader's language."""
    return {"key": key, "params": params}


def shape_str(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def describe(value) -> dict:
    """What came, as a message: rendered in the reader's language."""
    if isinstance(value, torch.Tensor):
        return msg("value.tensor", dtype=str(value.dtype).removeprefix("torch."), shape=shape_str(value.shape))
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
    def __init__(self):
        self.checks: list[Check] = []
        self.visuals: dict = {}

    def _record(self, check_id: str, ok: bool, key: str, params: dict) -> None:
        if not ok:
            # Diagnoses are costly and only needed on failure: they may come as callables.
            params = {k: v() if callable(v) else v for k, v in params.items()}
        for i, existing in enumerate(self.checks):
            if existing.id == check_id:
                if existing.status == "pass" and not ok:
                    self.checks[i] = Check(check_id, "fail", Message(key, params))
                return
        self.checks.append(Check(check_id, "pass" if ok else "fail", None if ok else Message(key, params)))

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


def require_tensor(v: Verdict, check_id: str, what: str, value, shape: tuple, likely_shape=None) -> torch.Tensor:
    """Tensor, of the expected shape, floating point, finite: or the step stops here."""
    v.require(check_id, isinstance(value, torch.Tensor), "check.not_tensor",
              what=what, got=describe(value), likely=likely_for_value(value))
    v.require(check_id, tuple(value.shape) == tuple(shape), "check.shape", what=what,
              expected=shape_str(shape), got=shape_str(value.shape),
              likely=likely_shape or msg("likely.shape"))
    v.require("dtype", value.dtype == torch.float32 or value.dtype == torch.float64, "check.dtype",
              what=what, expected="float32", got=str(value.dtype).removeprefix("torch."),
              likely=msg("likely.dtype"))
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


def close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol))


def inputs_unchanged(v: Verdict, fn: str, names: list[str], after: tuple, pristine: tuple) -> None:
    for name, a, p in zip(names, after, pristine):
        if isinstance(p, torch.Tensor) and isinstance(a, torch.Tensor):
            same = a.shape == p.shape and bool(torch.equal(a.to(p.dtype), p))
            if not same:
                err = max_error(a, p)[0] if a.shape == p.shape else float("nan")
                v.expect("inputs-unchanged", False, "check.mutated", fn=fn, arg=name, err=err)
                return
    v.expect("inputs-unchanged", True)


@functools.lru_cache(maxsize=8)
def kernels_in_source(source: str, defs: frozenset[str]) -> frozenset[str]:
    """Library attention kernels named inside the given top-level defs, or at module level."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    found: set[str] = set()
    for node in tree.body:
        is_def = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if is_def and node.name not in defs:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue  # importing is harmless; calling is what counts
        for sub in ast.walk(node):
            name = sub.attr if isinstance(sub, ast.Attribute) else sub.id if isinstance(sub, ast.Name) else None
            if name in KERNEL_NAMES:
                found.add(KERNEL_NAMES[name])
    return frozenset(found)


def no_kernel(v: Verdict, fn: str, source: str, defs: set[str], runtime: list[str]) -> None:
    used = sorted(kernels_in_source(source, frozenset(defs)) | set(runtime))
    v.expect("own-formula", not used, "check.kernel", fn=fn, kernel=" / ".join(used))


def round_matrix(t: torch.Tensor, digits: int = 4) -> list:
    """A T×T matrix for the heatmap, non-finite values as None (JSON has no NaN)."""
    return [[round(x, digits) if math.isfinite(x) else None for x in row] for row in t.double().tolist()]
