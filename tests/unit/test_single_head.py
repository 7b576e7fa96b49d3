"""The kit's single-head mistakes (tutor.kit.single_head): right weights match none of them,
and each usual wrong version is named by its own likely mistake."""

from __future__ import annotations

import pytest
import torch

from tutor.kit import (
    LARGE_SCORES,
    draw_single_head_case,
    future_region,
    masked_softmax,
    single_head_large_scores,
    single_head_likely,
)

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


def test_a_drawn_case_changes_one_token_each_and_large_scores_reach_the_kits():
    case = draw_single_head_case(torch.Generator().manual_seed(0), 2, 5, 6, 3)
    x, Wq, Wk, Wv = case["args"]
    assert x.shape == (2, 5, 6) and Wq.shape == Wk.shape == Wv.shape == (6, 3)
    for name, pos in (("x_last", 4), ("x_mid", 2)):
        moved = (case[name] != x).any(-1).any(0)
        assert moved.nonzero().flatten().tolist() == [pos]
    large = single_head_large_scores(*case["args"])
    seen = large["scores"].masked_fill(future_region(5), float("-inf"))
    assert float(seen.max()) == pytest.approx(LARGE_SCORES)
    assert torch.equal(large["args"][0], x) and large["args"][2] is Wk
