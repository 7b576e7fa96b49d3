"""The kit's weights property (judge_attention_weights): finite, rows summing to 1, and exactly
0 in every named hidden region, each region judged by its own check with its own message; and
hidden_cells, what a map of those weights draws masked. A sliding-window lesson is the case
the causal checks could not say: a weight outside the window."""

from __future__ import annotations

import pytest
import torch

from tutor.kit import (
    Region,
    Stop,
    Verdict,
    causal_future,
    hidden_cells,
    judge_attention_weights,
    msg,
)
from tutor.kit.regions import future_region

T, WINDOW = 6, 3


def before_window(T: int, w: int) -> torch.Tensor:
    i, j = torch.arange(T).unsqueeze(1), torch.arange(T).unsqueeze(0)
    return j <= i - w


def regions() -> list[Region]:
    outside = Region(msg("region.window"), before_window(T, WINDOW), "window-is-zero")
    return [causal_future(T), outside]


def softmax_over(scores: torch.Tensor, hidden: torch.Tensor, fill=float("-inf")) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(hidden, fill), dim=-1)


def judged(w: torch.Tensor, **how) -> Verdict:
    v = Verdict()
    try:
        judge_attention_weights(v, w, regions(), what="weights", likely=msg("likely.x"), **how)
    except Stop:
        pass
    return v


def statuses(v: Verdict) -> dict[str, str]:
    return {c.id: c.status for c in v.checks}


SCORES = torch.randn(2, T, T, generator=torch.Generator().manual_seed(3))
EVERY_HIDDEN = future_region(T) | before_window(T, WINDOW)


def test_windowed_weights_pass_every_check():
    v = judged(softmax_over(SCORES, EVERY_HIDDEN))
    assert statuses(v) == {
        "finite": "pass",
        "rows-sum-to-1": "pass",
        "future-is-zero": "pass",
        "window-is-zero": "pass",
    }


def test_a_weight_outside_the_window_fails_the_windows_own_check_naming_it():
    v = judged(softmax_over(SCORES, future_region(T)))  # causal only: sees before the window
    assert statuses(v)["future-is-zero"] == "pass"
    check = next(c for c in v.checks if c.id == "window-is-zero")
    assert check.status == "fail"
    assert check.message.key == "check.hidden_weight"
    params = check.message.params
    assert (params["row"], params["col"]) == (3, 0)  # the first query with a key before its window
    assert params["region"] == msg("region.window")
    assert params["got"] > 0 and params["likely"] == msg("likely.x")


def test_the_future_keeps_its_own_message_without_a_region_parameter():
    v = judged(torch.softmax(SCORES, dim=-1))  # no mask at all
    check = next(c for c in v.checks if c.id == "future-is-zero")
    assert check.status == "fail" and check.message.key == "check.future"
    assert "region" not in check.message.params
    assert (check.message.params["row"], check.message.params["col"]) == (0, 1)


def test_a_tiny_weight_in_a_region_gets_the_large_negative_diagnosis():
    w = softmax_over(SCORES * 0, EVERY_HIDDEN, fill=-30.0)  # exp(-30) ≈ 1e-13: not 0
    v = judged(w, tiny_likely=msg("likely.fill_large_negative"))
    failed = [c for c in v.checks if c.status == "fail"]
    assert [c.id for c in failed] == ["future-is-zero"]
    assert failed[0].message.params["likely"] == msg("likely.fill_large_negative")


def test_non_finite_and_rows_stop_before_the_regions():
    w = softmax_over(SCORES, EVERY_HIDDEN)
    nan = w.clone()
    nan[1, 2, 0] = float("nan")
    assert statuses(judged(nan)) == {"finite": "fail"}
    halved = w * 0.5
    v = judged(halved)
    assert statuses(v) == {"finite": "pass", "rows-sum-to-1": "fail"}
    rows = next(c for c in v.checks if c.id == "rows-sum-to-1").message.params
    assert rows["row"] == 0 and abs(rows["got"] - 0.5) < 1e-6


def test_a_region_of_the_wrong_shape_is_the_lessons_error():
    v = Verdict()
    with pytest.raises(ValueError, match="region of shape"):
        judge_attention_weights(v, torch.ones(2, 4, 4) / 4, regions(), what="weights")


def test_hidden_cells_is_every_regions_cells():
    cells = hidden_cells(regions())
    assert cells == EVERY_HIDDEN.tolist()
    assert cells[5] == [True, True, True, False, False, False]
