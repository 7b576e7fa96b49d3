"""The weights panel's entries for a stack of attention maps (one per batch element or head),
the learner's beside the reference's, and the judge_other_sizes of cases that carry their size."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from tutor.kit.judge_tools import Verdict, judge_other_sizes, round_matrix, size_explanation
from tutor.model.view_items import weights


def weights_panels(
    learner: torch.Tensor | None,
    reference: torch.Tensor,
    label: Callable[[int], dict],
    why: dict | None = None,
) -> list[dict]:
    """One panel entry per map of reference (N, T_q, T_k): label(i), the learner's map i beside
    the reference's. learner None: the learner's could not be had, and why (if given) says why."""
    return [
        weights(
            label(i),
            round_matrix(learner[i]) if learner is not None else None,
            round_matrix(reference[i]),
            why=why if learner is None else None,
        )
        for i in range(reference.shape[0])
    ]


def sizes_label(names: Sequence[str], size: Sequence) -> list[str]:
    """A size as a list of name=value, which the catalogs join as each language writes a list."""
    return [f"{n}={s}" for n, s in zip(names, size, strict=False)]


def judge_sized_cases(
    v: Verdict,
    calls: list,
    cases: list,
    sizes: Sequence[Sequence],
    names: Sequence[str],
    judge_case: Callable[..., Any],
    explain: Callable[[Sequence, Sequence, str], dict | None] | None = None,
    *,
    defs: Sequence[str] | None = None,
) -> None:
    """judge_other_sizes for case judges that take the case's size too (judge_case(sub, call,
    case, size)), labelled by names; explain(lab's size, this size, source) says what differs
    at the first size that fails, or, given defs (the learner's functions and classes the
    step runs), size_explanation read in them."""

    def at(i: int, _sub: Verdict, source: str) -> dict | None:
        if explain is not None:
            return explain(sizes[0], sizes[i], source)
        return size_explanation(source, defs, names, sizes[0], sizes[i]) if defs else None

    judge_other_sizes(
        v,
        calls,
        list(zip(cases, sizes, strict=False)),
        [sizes_label(names, size) for size in sizes],
        lambda sub, call, case_and_size: judge_case(sub, call, *case_and_size),
        explain=at if explain or defs else None,
    )
