"""The kit's boolean-mask property: a tensor of the region's shape, of dtype bool, True exactly
on the named hidden region; where it is not, the first wrong row said as T/F."""

from __future__ import annotations

import contextlib

import torch

from tutor.kit import (
    Stop,
    Verdict,
    judge_bool_mask,
    judge_mask_honoured,
    mask_difference,
    mask_row_text,
    mask_size_explanation,
    mask_sizes_explainer,
    msg,
    other_mask,
)
from tutor.kit.regions import future_region

T = 5


def judged(m, **how) -> Verdict:
    v = Verdict()
    with contextlib.suppress(Stop):
        judge_bool_mask(
            v, m, future_region(T), what=f"mask({T})", region=msg("region.future"), **how
        )
    return v


def statuses(v: Verdict) -> dict[str, str]:
    return {c.id: c.status for c in v.checks}


def failure(v: Verdict):
    return next(c.message for c in v.checks if c.status != "pass")


def test_the_causal_mask_passes_every_check():
    v = judged(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))
    assert statuses(v) == {"tensor": "pass", "shape": "pass", "bool": "pass", "values": "pass"}


def test_a_mask_of_numbers_fails_as_not_bool():
    v = judged(torch.triu(torch.ones(T, T), diagonal=1))
    assert statuses(v)["bool"] == "fail"
    assert failure(v).key == "check.mask_not_bool" and failure(v).params["got"] == "float32"


def test_the_past_in_place_of_the_future_names_the_first_wrong_row():
    likely = msg("likely.mine")
    v = judged(torch.tril(torch.ones(T, T, dtype=torch.bool)), likely=likely)
    message = failure(v)
    assert message.key == "check.mask_cells"
    assert message.params["row"] == 0
    assert message.params["got"] == "T F F F F" and message.params["expected"] == "F T T T T"
    assert message.params["region"] == msg("region.future")
    assert message.params["likely"] == likely


def test_a_lessons_own_message_and_names():
    v = judged(torch.zeros(T, T, dtype=torch.bool), key="check.mine", said={"T": T})
    message = failure(v)
    assert message.key == "check.mine" and message.params["T"] == T
    assert "what" not in message.params


def test_not_a_tensor_and_the_wrong_shape_stop_first():
    assert statuses(judged([[True]])) == {"tensor": "fail"}
    v = judged(torch.zeros(T + 1, T + 1, dtype=torch.bool), shape_likely=msg("likely.x"))
    assert statuses(v) == {"tensor": "pass", "shape": "fail"}


def test_a_long_row_is_said_around_its_first_wrong_column():
    row = torch.zeros(100, dtype=torch.bool)
    row[60:] = True
    text = mask_row_text(row, 60)
    assert text.startswith("… ") and text.endswith(" …") and len(text.split()) == 18
    assert mask_row_text(row[:4], 0) == "F F F F"
    assert mask_difference(row, row) is None


def honoured(w, mask, then=None) -> Verdict:
    v = Verdict()
    with contextlib.suppress(Stop):
        judge_mask_honoured(v, w, mask, then=then)
    return v


def test_weights_that_use_the_mask_given_pass_after_the_calls_own_checks():
    mask = other_mask(T, torch.Generator().manual_seed(2))
    assert mask.any() and not mask.diagonal().any()
    w = torch.softmax(torch.randn(2, T, T).masked_fill(mask, float("-inf")), -1)
    order = []
    v = honoured(w, mask, then=lambda: order.append("values"))
    assert order == ["values"] and statuses(v) == {"uses-given-mask": "pass"}


def test_weights_of_another_mask_fail_before_the_calls_own_checks():
    mask = other_mask(T, torch.Generator().manual_seed(2))
    causal = torch.softmax(torch.randn(2, T, T).masked_fill(future_region(T), float("-inf")), -1)
    order = []
    v = honoured(causal, mask, then=lambda: order.append("values"))
    message = failure(v)
    assert order == [] and message.key == "check.given_mask_ignored"
    assert bool(mask[message.params["row"], message.params["col"]])
    assert message.params["likely"] == msg("likely.mask_not_used")


CAPPED = """
import torch

BIG = torch.triu(torch.ones(64, 64, dtype=torch.bool), diagonal=1)


def mask(T):
    return BIG[:T, :T]
"""
WRITTEN_IN = """
import torch


def mask(T):
    return torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
"""


def test_why_a_mask_builder_fails_at_another_length():
    cut = torch.zeros(64, 64, dtype=torch.bool)
    found = mask_size_explanation(CAPPED, ("mask",), cut, 100, 6)
    assert found == msg("likely.mask_fixed_size", size=64, T=100)
    own = mask_size_explanation(CAPPED, ("mask",), cut, 100, 6, capped_key="likely.mine")
    assert own["key"] == "likely.mine"
    six = torch.zeros(6, 6, dtype=torch.bool)
    assert mask_size_explanation(WRITTEN_IN, ("mask",), six, 9, 6)["key"] == "likely.literal"
    right_size = torch.zeros(9, 9, dtype=torch.bool)
    assert (
        mask_size_explanation(CAPPED, ("mask",), right_size, 9, 6)["key"] == "likely.sizes_differ"
    )


def test_the_sizes_explainer_reads_each_lengths_own_call():
    calls = [{"value": torch.zeros(6, 6, dtype=torch.bool)}, {"value": torch.zeros(64, 64)}]
    explain = mask_sizes_explainer(("mask",), calls, [6, 100])
    assert explain(1, None, CAPPED) == msg("likely.mask_fixed_size", size=64, T=100)
    assert explain(1, None, WRITTEN_IN)["key"] == "likely.literal"


KEPT = """
_last = {}


def weights(scores, mask):
    _last["w"] = scores
    return scores
"""


def test_an_ignored_mask_names_the_line_that_keeps_state():
    mask = other_mask(T, torch.Generator().manual_seed(2))
    causal = torch.softmax(torch.randn(2, T, T).masked_fill(future_region(T), float("-inf")), -1)
    v = Verdict(KEPT)
    with contextlib.suppress(Stop):
        judge_mask_honoured(v, causal, mask, defs=("weights",))
    assert failure(v).params["likely"]["key"] == "likely.kept_state_at"
    v = Verdict(KEPT)
    with contextlib.suppress(Stop):
        judge_mask_honoured(v, causal, mask, defs=("other",))
    assert failure(v).params["likely"] == msg("likely.mask_not_used")
