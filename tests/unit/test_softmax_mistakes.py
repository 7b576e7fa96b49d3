"""The kit's masked-softmax mistakes: weights rebuilt the usual wrong ways are each named, a
large negative fill is told from -inf, and no mask at all from a masked_fill thrown away."""

from __future__ import annotations

import pytest
import torch

from tutor.kit import masked_softmax, masked_softmax_likely, masked_softmax_mistakes, msg
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
