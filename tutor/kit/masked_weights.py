"""Weights a masked softmax gives: well-formed (finite, rows summing to 1, zero where the mask
hides a key) and close to the reference, each failure named by the masked-softmax mistake the
weights match. For a function that returns them (attention_weights) or returns them beside
its output (attention's pair)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tutor.kit.judge_tools import Verdict, msg
from tutor.kit.magnitude import require_close
from tutor.kit.regions import Region, judge_attention_weights
from tutor.kit.softmax_mistakes import masked_softmax_likely


def judge_masked_weights(
    v: Verdict,
    w: torch.Tensor,
    scores: torch.Tensor,
    mask: torch.Tensor,
    expected: torch.Tensor,
    *,
    what: str,
    defs: Sequence[str],
    likely: object = None,
    region: Region | None = None,
) -> None:
    """Weights w of a softmax over scores with mask (True where hidden): judge_attention_weights
    with mask as the hidden region (the causal future's check and message unless region), then
    close to expected (check values). The likely mistake: masked_softmax_likely on the source
    of defs; for values, likely where given (a message or a callable)."""
    hidden = region or Region(msg("region.future"), mask, "future-is-zero", "check.future", False)
    found = lambda: masked_softmax_likely(w, scores, mask, source=v.source, defs=defs)  # noqa: E731
    judge_attention_weights(v, w, [hidden], what=what, likely=found)
    require_close(v, "values", what, w, expected, likely=found if likely is None else likely)
