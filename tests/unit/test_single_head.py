"""The kit's single-head mistakes (tutor.kit.single_head): right weights match none of them,
and each usual wrong version is named by its own likely mistake."""

from __future__ import annotations

import pytest
import torch

from tutor.kit import future_region, masked_softmax, single_head_likely

g = torch.Generator().manual_seed(3)
X = torch.randn(2, 7, 10, generator=g)
WQ, WK, WV = (torch.randn(10, 4, generator=g) / 10**0.5 for _ in range(3))
RAW = (X @ WQ) @ (X @ WK).transpose(-2, -1)
FUTURE = future_region(7)


def key(w: torch.Tensor) -> str:
    return single_head_likely(w, X, WQ, WK, WV)["key"]


def test_right_weights_match_no_mistake():
    assert key(masked_softmax(RAW / 2.0, FUTURE)) == "likely.unknown"


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        (lambda: masked_softmax(RAW / 10**0.5, FUTURE), "likely.scale_d_in"),
        (lambda: masked_softmax(RAW / 7**0.5, FUTURE), "likely.scale_seq_len"),
        (lambda: masked_softmax(RAW, FUTURE) / 2.0, "likely.scale_after_softmax"),
        (lambda: masked_softmax(RAW / 2.0, torch.ones(7, 7).bool().triu(2)), "likely.mask_offset"),
        (
            lambda: torch.softmax(RAW / 2.0 + FUTURE.float() * float("-inf"), -1),
            "likely.additive_mask_nan",
        ),
        (
            lambda: torch.softmax(RAW / 2.0, -1).masked_fill(FUTURE, float("-inf")),
            "likely.inf_after_softmax",
        ),
    ],
)
def test_each_wrong_version_is_named(wrong, said):
    assert key(wrong()) == said
