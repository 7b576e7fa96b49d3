"""The kit's tables of wrong scaled scores and wrong causal masks: each wrong version is named,
the right one is not, and what matches none is likely.unknown."""

from __future__ import annotations

import math

import torch

from tutor.kit import (
    causal_mask_likely,
    masked_softmax,
    scale_from_weights_likely,
    scaled_scores_likely,
)

g = torch.Generator().manual_seed(0)
Q, K = torch.randn(3, 2, 5, 4, generator=g), torch.randn(3, 2, 5, 4, generator=g)
RAW = Q @ K.transpose(-2, -1)
FUTURE = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)


def key(found: dict) -> str:
    return found["key"]


def test_the_right_scores_match_no_mistake():
    assert key(scaled_scores_likely(RAW / math.sqrt(4), Q, K, lab_d_k=8)) == "likely.unknown"


def test_each_wrong_scale_is_named():
    assert key(scaled_scores_likely(RAW, Q, K)) == "likely.scale_none"
    assert key(scaled_scores_likely(RAW / 4, Q, K)) == "likely.scale_d"
    assert key(scaled_scores_likely(RAW * 2, Q, K)) == "likely.scores_scale_multiplied"
    swapped = K @ Q.transpose(-2, -1) / 2
    assert key(scaled_scores_likely(swapped, Q, K)) == "likely.swapped_qk"
    assert key(scaled_scores_likely(RAW / math.sqrt(5), Q, K)) == "likely.scores_scale_seq_len"


def test_the_labs_d_k_written_in_only_where_it_is_given():
    eight = RAW / math.sqrt(8)
    assert key(scaled_scores_likely(eight, Q, K)) == "likely.unknown"
    found = scaled_scores_likely(eight, Q, K, lab_d_k=8)
    assert found == {"key": "likely.scores_scale_literal", "params": {"d_k": 8}}


def test_a_leading_dimension_in_place_of_d_k_is_named_with_its_index():
    found = scaled_scores_likely(RAW / math.sqrt(3), Q, K)
    assert key(found) == "likely.scores_scale_other_dim"
    assert found["params"]["dim"] == 0 and found["params"]["n"] == 3


def test_a_wrong_scale_is_found_from_the_weights():
    assert key(scale_from_weights_likely(masked_softmax(RAW, FUTURE), Q, K, FUTURE)) == (
        "likely.scale_none"
    )
    right = masked_softmax(RAW / 2, FUTURE)
    assert key(scale_from_weights_likely(right, Q, K, FUTURE)) == "likely.unknown"


def test_wrong_causal_masks_are_named():
    ones = torch.ones(5, 5, dtype=torch.bool)
    assert key(causal_mask_likely(torch.triu(ones), 5)) == "likely.causal_mask_diagonal"
    assert key(causal_mask_likely(torch.tril(ones), 5)) == "likely.causal_mask_past"
    assert key(causal_mask_likely(FUTURE, 5)) == "likely.unknown"
    assert key(causal_mask_likely(torch.triu(ones), 6)) == "likely.unknown"
