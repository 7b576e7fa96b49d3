"""Why a function right at the lab's input shape is wrong at another, the rank included: for
inputs whose leading dimensions are batch-like (a batch, heads, or none at all) and whose last
two are the matrix each leading index holds, as attention's q, k, v are."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tutor.kit.judge_tools import (
    differ_explanation,
    literal_explanation,
    msg,
    squeeze_explanation,
    state_explanation,
)
from tutor.kit.source_tools import front_dims


def rank_explanation(
    source: str,
    defs: Sequence[str],
    rank: int,
    lab_rank: int,
    *,
    at_key: str = "likely.rank_from_front",
    key: str = "likely.rank_fixed",
) -> dict:
    """Code right for lab_rank-D inputs given rank-D ones: the first line of defs that counts
    dimensions from the front (at_key {line} {code} {rank} {lab_rank}), else key {rank}
    {lab_rank}."""
    found = front_dims(source, frozenset(defs))
    if found:
        return msg(at_key, line=found.line, code=found.code, rank=rank, lab_rank=lab_rank)
    return msg(key, rank=rank, lab_rank=lab_rank)


def shape_explanation(
    source: str,
    defs: Sequence[str],
    names: Sequence[str],
    lab_shape: Sequence[int],
    shape: Sequence[int],
    **rank_keys: str,
) -> dict:
    """The likely mistake of code right at lab_shape and wrong at shape (names: lab_shape's
    dimensions, from the front). A number of the lab's written in (only the matrix's two last
    dimensions compared where the ranks differ); else, ranks differing, rank_explanation
    (rank_keys: its keys); else a bare squeeze() at a size of 1, state kept between calls,
    else what differs here."""
    other_rank = len(shape) != len(lab_shape)
    names = tuple(names)[-2:] if other_rank else tuple(names)
    here, lab = tuple(shape)[-len(names) :], tuple(lab_shape)[-len(names) :]
    literal = literal_explanation(source, defs, names, lab, here)
    if literal:
        return literal
    if other_rank:
        return rank_explanation(source, defs, len(shape), len(lab_shape), **rank_keys)
    return (
        squeeze_explanation(source, defs, names, lab, here)
        or state_explanation(source, defs)
        or differ_explanation(names, lab, here)
    )


def shapes_explainer(
    defs: Sequence[str],
    names: Sequence[str],
    shapes: Sequence[Sequence[int]],
    *,
    first: Callable[[int], dict | None] | None = None,
) -> Callable[[int, Any, str], dict]:
    """explain for judge_other_sizes, case i being inputs of shapes[i] (the first the lab's,
    names its dimensions): first(i) where given and it names a culprit (a helper to fix, say),
    else shape_explanation of defs at shapes[i]."""

    def explain(i: int, _sub: Any, source: str) -> dict:
        found = first(i) if first is not None else None
        return found or shape_explanation(source, defs, names, shapes[0], shapes[i])

    return explain
