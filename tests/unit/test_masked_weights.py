"""The kit's judge_masked_weights: weights of a masked softmax, well-formed and close to the
reference; each usual mistake fails the check that names it, with its diagnosis."""

from __future__ import annotations

import contextlib

import torch

from tutor.kit import Verdict, causal_future, judge_masked_weights, masked_softmax
from tutor.kit.judge_tools import Stop

SCORES = torch.randn(2, 5, 5, generator=torch.Generator().manual_seed(0))
MASK = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)


def judged(w: torch.Tensor, **kw) -> Verdict:
    v = Verdict("")
    with contextlib.suppress(Stop):
        ref = masked_softmax(SCORES, MASK)
        judge_masked_weights(v, w, SCORES, MASK, ref, what="w", defs=("f",), **kw)
    return v


def failed(v: Verdict) -> list[str]:
    return [c.id for c in v.checks if c.status != "pass"]


def test_right_weights_pass_and_each_mistake_fails_its_check():
    assert judged(masked_softmax(SCORES, MASK)).passed()
    unmasked = judged(torch.softmax(SCORES, -1))
    assert failed(unmasked) == ["future-is-zero"]
    assert failed(judged(masked_softmax(SCORES, MASK) * 1.01)) == ["rows-sum-to-1"]
    scaled = judged(masked_softmax(SCORES * 2, MASK), likely={"key": "likely.mine", "params": {}})
    assert failed(scaled) == ["values"]
    assert scaled.failed_message()["params"]["likely"]["key"] == "likely.mine"


def test_a_region_of_the_lessons_own_is_judged_by_its_check():
    region = causal_future(5)
    window = type(region)(region.name, MASK, "window-is-zero", "check.hidden_weight")
    assert failed(judged(torch.softmax(SCORES, -1), region=window)) == ["window-is-zero"]
