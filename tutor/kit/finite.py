"""An output's values judged where nothing more specific applies: finite first (a NaN says
more than a large error), then close to the reference's; and the same on the call whose scores
reach LARGE_SCORES, said as the large-scores check."""

from __future__ import annotations

from typing import Any

import torch

from tutor.kit.judge_tools import (
    Verdict,
    first_nonfinite,
    judged,
    large_scores_check,
    msg,
    require_ran,
    require_tensor,
    shape_str,
)
from tutor.kit.magnitude import require_close


def require_finite(
    v: Verdict, what: Any, t: torch.Tensor, *, likely: Any, check_id: str = "finite"
) -> None:
    """t has no NaN or infinite value; else check.not_finite {what} {count} {where} {likely},
    where being the first such index (likely: a message or a callable giving one)."""
    bad = first_nonfinite(t)
    v.require(
        check_id,
        bad is None,
        "check.not_finite",
        what=what,
        count=bad[1] if bad else 0,
        where=shape_str(bad[0]) if bad else "",
        likely=likely,
    )


def require_finite_close(v: Verdict, what: Any, y: torch.Tensor, expected: torch.Tensor) -> None:
    """Finite (check finite), then close to expected (check values), with no diagnosis of their
    own (likely.unknown): for a call whose mistake the caller names from which check failed."""
    require_finite(v, what, y, likely=msg("likely.unknown"))
    require_close(v, "values", what, y, expected, likely=msg("likely.unknown"))


def judge_large_output(
    v: Verdict, call: dict, expected: torch.Tensor, *, fn: str, what: Any, key: str
) -> None:
    """A layer's output on inputs whose scores reach LARGE_SCORES: it ran (fn names it), has
    expected's shape, then is finite and close, said inside key (large_scores_check: NaN there
    is the softmax's fault)."""
    require_ran(v, call, fn)
    y = require_tensor(v, "large-scores", what, call["value"], tuple(expected.shape))
    large_scores_check(v, judged(v.source, require_finite_close, what, y, expected), key)
