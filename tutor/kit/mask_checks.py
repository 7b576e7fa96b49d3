"""A boolean mask as a step's result: a tensor, of the region's shape, of dtype bool, True
exactly on a named hidden region (the causal future, a window, padding); where it is not, the
first wrong row said as text a learner can compare with what the mask prints."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from tutor.kit.judge_tools import (
    Verdict,
    describe,
    differ_explanation,
    likely_for_value,
    literal_explanation,
    msg,
    shape_str,
    state_explanation,
)

ROW_TEXT_WIDTH = 16  # entries of a mask row said in a message: a row of 100 would not fit


def mask_row_text(row: torch.Tensor, col: int) -> str:
    """A mask row as T/F, at most ROW_TEXT_WIDTH entries around column col, "…" where cut."""
    flags = ["T" if b else "F" for b in row.tolist()]
    n = ROW_TEXT_WIDTH
    if len(flags) <= n:
        return " ".join(flags)
    start = max(0, min(col - n // 2, len(flags) - n))
    return (
        ("… " if start else "")
        + " ".join(flags[start : start + n])
        + (" …" if start + n < len(flags) else "")
    )


def mask_difference(got: torch.Tensor, expected: torch.Tensor) -> dict | None:
    """The first row where two masks of one shape differ, both rows as mask_row_text around
    the first column that differs: {"row", "got", "expected"}; None when they are equal."""
    wrong = got != expected
    if not bool(wrong.any()):
        return None
    row = int(wrong.any(-1).nonzero()[0])
    col = int(wrong[row].nonzero()[0])
    return {
        "row": row,
        "got": mask_row_text(got[row], col),
        "expected": mask_row_text(expected[row], col),
    }


def judge_bool_mask(
    v: Verdict,
    m: Any,
    hidden: torch.Tensor,
    *,
    what: str,
    region: dict | None = None,
    likely: Any = None,
    shape_likely: Any = None,
    check_id: str = "values",
    key: str = "check.mask_cells",
    dtype_key: str = "check.mask_not_bool",
    said: dict | None = None,
) -> None:
    """m must be the bool tensor that is True exactly where hidden is (a (T_q, T_k) region no
    query may see, named by region: msg("region.future"), msg("region.window"), ...). Checks,
    each stopping the judge: tensor (check.not_tensor), shape (check.shape, shape_likely),
    bool (dtype_key {what} {got}), then check_id (key {what} {region} {row} {got} {expected}
    {likely}: the first wrong row, as T/F around its first wrong column). said: the parameters
    that name the mask in the dtype and values messages, in place of {what} (a lesson's own
    message may name it otherwise); region is left out of them when None."""
    said = {"what": what} if said is None else said
    v.require(
        "tensor",
        isinstance(m, torch.Tensor),
        "check.not_tensor",
        what=what,
        got=describe(m),
        likely=likely_for_value(m),
    )
    shape = tuple(hidden.shape)
    v.require(
        "shape",
        tuple(m.shape) == shape,
        "check.shape",
        what=what,
        expected=shape_str(shape),
        got=shape_str(m.shape),
        likely=shape_likely,
    )
    dtype = str(m.dtype).removeprefix("torch.")
    v.require("bool", m.dtype == torch.bool, dtype_key, **said, got=dtype)
    found = mask_difference(m, hidden)
    if found is not None:
        named = {} if region is None else {"region": region}
        v.require(check_id, False, key, **said, **named, **found, likely=likely)
    v.expect(check_id, True)


def other_mask(T: int, g: torch.Generator, p: float = 0.4) -> torch.Tensor:
    """A (T, T) bool mask that is not the causal one (each key hidden with probability p, the
    diagonal never): given to a function that takes a mask, it shows whether the function
    uses the mask it is given (judge_mask_honoured)."""
    mask = torch.rand(T, T, generator=g) < p
    mask.fill_diagonal_(False)
    return mask


def judge_mask_honoured(
    v: Verdict,
    w: torch.Tensor,
    mask: torch.Tensor,
    *,
    then: Callable[[], None] | None = None,
    likely: Any = None,
    defs: Sequence[str] = (),
    check_id: str = "uses-given-mask",
    key: str = "check.given_mask_ignored",
) -> None:
    """Weights w (…, T_q, T_k) from a function given mask (True where hidden) must be 0 on
    every hidden cell: else check_id fails at once (key {row} {col} {got} {likely}; likely
    defaults to the line of defs that keeps state between calls, a result kept from a call
    with another mask, else likely.mask_not_used), before the generic checks of the call,
    which would only say that a weight is wrong. then: those checks; the pass is recorded
    after them, so that a failure of theirs stops the judge first."""
    leaked = (w != 0) & mask
    if bool(leaked.any()):
        where = tuple(int(i) for i in leaked.nonzero()[0])
        v.require(
            check_id,
            False,
            key,
            row=where[-2],
            col=where[-1],
            got=float(w[where]),
            likely=likely
            or (lambda: state_explanation(v.source, defs) or msg("likely.mask_not_used")),
        )
    if then is not None:
        then()
    v.expect(check_id, True)


def mask_size_explanation(
    source: str,
    defs: Sequence[str],
    m: Any,
    T: int,
    lab_T: int,
    *,
    capped_key: str = "likely.mask_fixed_size",
) -> dict:
    """Why a function that builds a (T, T) mask, right at the lab's lab_T, is wrong at T (m:
    what it returned there): lab_T written in, state kept from an earlier call, a mask of fixed
    size cut down (a square smaller than T: capped_key {size} {T}), else what differs."""
    names, lab, here = ("T",), (lab_T,), (T,)
    found = literal_explanation(source, defs, names, lab, here) or state_explanation(source, defs)
    if found:
        return found
    if isinstance(m, torch.Tensor) and m.dim() == 2 and m.shape[0] == m.shape[1] < T:
        return msg(capped_key, size=int(m.shape[0]), T=T)
    return differ_explanation(names, lab, here)


def mask_sizes_explainer(
    defs: Sequence[str], calls: Sequence[dict], lengths: Sequence[int]
) -> Callable[[int, Any, str], dict]:
    """explain for judge_other_sizes, for a function that builds a (T, T) mask and is called at
    each of lengths (the first the lab's): mask_size_explanation at lengths[i], from what
    calls[i] returned."""

    def explain(i: int, _sub: Any, source: str) -> dict:
        return mask_size_explanation(source, defs, calls[i].get("value"), lengths[i], lengths[0])

    return explain


def causal_mask_mistakes(T: int) -> list[tuple[torch.Tensor, dict]]:
    """(wrong mask, likely) pairs for a (T, T) causal mask (True strictly above the diagonal):
    the diagonal hidden too (`diagonal=0`), and the past marked in place of the future
    (`tril`, below, on or one above the diagonal)."""
    ones = torch.ones(T, T, dtype=torch.bool)
    past = msg("likely.causal_mask_past")
    return [
        (torch.triu(ones), msg("likely.causal_mask_diagonal")),
        (torch.tril(ones, diagonal=-1), past),
        (torch.tril(ones), past),
        (torch.tril(ones, diagonal=1), past),
    ]


def causal_mask_likely(m: torch.Tensor, T: int) -> dict:
    """The first of causal_mask_mistakes that mask m equals, else likely.unknown (also when m
    is not (T, T))."""
    if tuple(m.shape) == (T, T):
        for wrong, likely in causal_mask_mistakes(T):
            if torch.equal(m, wrong):
                return likely
    return msg("likely.unknown")
