"""The kit's masked-softmax mistakes: weights rebuilt the usual wrong ways are each named, a
large negative fill is told from -inf, and no mask at all from a masked_fill thrown away."""

from __future__ import annotations

import contextlib

import pytest
import torch

from tutor.kit import (
    Stop,
    Verdict,
    judge_large_scores_weights,
    large_scores_factor,
    masked_softmax,
    masked_softmax_likely,
    masked_softmax_mistakes,
    msg,
)
from tutor.kit.regions import future_region

T = 6
SCORES = torch.randn(2, T, T, generator=torch.Generator().manual_seed(1))
MASK = future_region(T)
SOURCE = """
def weights(scores, mask):
    scores.masked_fill(mask, float("-inf"))
    return scores.softmax(-1)
"""


@pytest.mark.parametrize(
    ("wrong", "key"),
    [
        (torch.softmax(SCORES, -1).masked_fill(MASK, 0.0), "likely.mask_after_softmax"),
        (torch.softmax(SCORES.masked_fill(MASK, 0.0), -1), "likely.fill_zero"),
        (torch.softmax(SCORES, -1), "likely.no_mask"),
        (torch.softmax(SCORES.masked_fill(MASK, float("-inf")), -2), "likely.softmax_dim"),
        (torch.softmax(SCORES.masked_fill(~MASK, -1e9), -1), "likely.mask_inverted_fill"),
        (masked_softmax(SCORES, MASK | torch.eye(T, dtype=torch.bool)), "likely.mask_diagonal"),
        (torch.softmax(SCORES.masked_fill(MASK, -30.0), -1), "likely.fill_large_negative"),
    ],
)
def test_each_usual_mistake_is_named(wrong, key):
    assert masked_softmax_likely(wrong, SCORES, MASK)["key"] == key


def test_right_weights_match_no_mistake():
    right = masked_softmax(SCORES, MASK)
    assert masked_softmax_likely(right, SCORES, MASK) == msg("likely.unknown")
    assert len(masked_softmax_mistakes(SCORES, MASK)) == 7


def test_no_mask_with_a_masked_fill_thrown_away_names_its_line():
    found = masked_softmax_likely(
        torch.softmax(SCORES, -1), SCORES, MASK, source=SOURCE, defs=("weights",)
    )
    assert found["key"] == "likely.masked_fill_discarded_line" and found["params"]["line"] == 3
    own = masked_softmax_likely(
        torch.softmax(SCORES, -1),
        SCORES,
        MASK,
        source=SOURCE,
        defs=("weights",),
        discarded_key="likely.mine",
    )
    assert own["key"] == "likely.mine"


def large_verdict(w):
    scores = torch.randn(1, 2, 6, 6, generator=torch.Generator().manual_seed(3))
    scores = scores * large_scores_factor(scores)
    mask = future_region(6)
    v = Verdict()
    with contextlib.suppress(Stop):
        judge_large_scores_weights(
            v, {"value": w(scores, mask)}, scores, mask, masked_softmax(scores, mask), fn="f"
        )
    return {c.id: c for c in v.checks}


def test_weights_at_large_scores_pass_with_torch_softmax():
    checks = large_verdict(masked_softmax)
    assert checks["large-scores"].status == "pass"


def test_exp_by_hand_overflows_at_large_scores():
    def by_hand(scores, mask):
        e = torch.exp(scores).masked_fill(mask, 0.0)
        return e / e.sum(-1, keepdim=True)

    failed = large_verdict(by_hand)["large-scores"]
    assert failed.status == "fail" and failed.message.key == "check.large_scores_nonfinite"
    assert failed.message.params["likely"] == msg("likely.softmax_overflow")


def test_finite_but_wrong_weights_at_large_scores_fail_as_values():
    failed = large_verdict(lambda s, m: torch.softmax(s, -1))["large-scores"]
    assert failed.status == "fail" and failed.message.key == "check.values"
    assert failed.message.params["likely"] == msg("likely.no_mask")
