"""The usual wrong ways to turn scores and a mask into attention weights, rebuilt to name the
one a learner's weights match: for any step whose function computes softmax(scores with the
hidden keys at -inf) from scores and a bool mask it is given or builds (True where hidden)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from tutor.kit.judge_tools import (
    LARGE_SCORES,
    Verdict,
    close,
    discarded_call,
    first_nonfinite,
    large_scores_likely,
    matching_mistake,
    msg,
    require_ran,
    require_tensor,
    shape_str,
)
from tutor.kit.magnitude import require_close

TINY_HIDDEN = 1e-6  # below it, a hidden weight is exp of a large negative fill, not of -inf


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """softmax over the keys with the hidden ones (mask True) at -inf: the right weights."""
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)


def masked_softmax_mistakes(
    scores: torch.Tensor, mask: torch.Tensor
) -> list[tuple[Callable[[], torch.Tensor], dict]]:
    """(make, likely) pairs for matching_mistake: masked after the softmax, filled with 0, no
    mask, softmax over the queries, the mask inverted (-inf or -1e9), the diagonal hidden too.
    A lesson adds its own before or after them."""
    hidden_diagonal = mask | torch.eye(mask.shape[-1], dtype=torch.bool)
    inf = float("-inf")
    return [
        (
            lambda: torch.softmax(scores, -1).masked_fill(mask, 0.0),
            msg("likely.mask_after_softmax"),
        ),
        (lambda: torch.softmax(scores.masked_fill(mask, 0.0), -1), msg("likely.fill_zero")),
        (lambda: torch.softmax(scores, -1), msg("likely.no_mask")),
        (lambda: torch.softmax(scores.masked_fill(mask, inf), -2), msg("likely.softmax_dim")),
        (
            lambda: torch.softmax(scores.masked_fill(~mask, inf), -1),
            msg("likely.mask_inverted_fill"),
        ),
        (
            lambda: torch.softmax(scores.masked_fill(~mask, -1e9), -1),
            msg("likely.mask_inverted_fill"),
        ),
        (lambda: masked_softmax(scores, hidden_diagonal), msg("likely.mask_diagonal")),
    ]


def masked_softmax_likely(
    w: torch.Tensor,
    scores: torch.Tensor,
    mask: torch.Tensor,
    *,
    source: str = "",
    defs: Sequence[str] = (),
    discarded_key: str = "likely.masked_fill_discarded_line",
) -> dict:
    """Why weights w are not masked_softmax(scores, mask), compared in float64: right but for
    hidden weights below TINY_HIDDEN (likely.fill_large_negative: a large negative fill),
    else the first of masked_softmax_mistakes that w matches; where that is no mask at all and
    the source of defs has a masked_fill whose result is thrown away, that line (discarded_key
    {line} {code}). Else likely.unknown."""
    w, scores = w.double(), scores.double()
    if w.shape == scores.shape:
        hidden = w.masked_select(mask.expand_as(w))
        if (
            hidden.numel()
            and 0 < float(hidden.abs().max()) < TINY_HIDDEN
            and close(w, masked_softmax(scores, mask))
        ):
            return msg("likely.fill_large_negative")
    likely = matching_mistake(w, masked_softmax_mistakes(scores, mask))
    if likely["key"] == "likely.no_mask":
        found = discarded_call(source, frozenset(defs), "masked_fill")
        if found:
            return msg(discarded_key, line=found.line, code=found.code)
    return likely


def judge_large_scores_weights(
    v: Verdict,
    call: dict,
    scores: torch.Tensor,
    mask: torch.Tensor,
    expected: torch.Tensor,
    *,
    fn: str,
    defs: Sequence[str] = (),
    check_id: str = "large-scores",
) -> None:
    """Weights from fn(scores, mask) where the scores reach LARGE_SCORES (large_scores_factor)
    and mask is True where hidden: the call ran, a tensor of the scores' shape (check_id,
    likely.weights_shape), with no NaN or infinity (check_id: check.large_scores_nonfinite
    {fn} {top} {count} {where} {likely}, large_scores_likely's), then close to expected
    (check.values; masked_softmax_likely over the source of defs)."""
    require_ran(v, call, fn)
    shape_likely = msg("likely.weights_shape")
    w = require_tensor(
        v, check_id, f"{fn}(scores, mask)", call["value"], scores.shape, shape_likely
    )
    bad = first_nonfinite(w)
    v.require(
        check_id,
        bad is None,
        "check.large_scores_nonfinite",
        fn=fn,
        top=f"{LARGE_SCORES:g}",
        count=bad[1] if bad else 0,
        where=shape_str(bad[0]) if bad else "",
        likely=lambda: large_scores_likely(w, scores, mask),
    )
    require_close(
        v,
        check_id,
        f"{fn}(scores reaching {LARGE_SCORES:g}, mask)",
        w,
        expected,
        likely=lambda: masked_softmax_likely(w, scores, mask, source=v.source, defs=defs),
    )
