"""judge_kit.of_the_inputs: a reference value is computed once per input, and never served
for another object, even one that takes a freed object's id."""

from __future__ import annotations

import gc

import torch

from tutor.kit.judge_tools import of_the_inputs


def test_computed_once_per_input_and_never_for_another_object():
    calls = []

    @of_the_inputs
    def double(x):
        calls.append(x)
        return x * 2

    a, b = torch.ones(3), torch.ones(3)
    assert torch.equal(double(a), a * 2) and double(a) is double(a)
    assert len(calls) == 1
    double(b)
    assert len(calls) == 2
    # Objects made and dropped one after the other often share an id: each still gets its own value.
    seen = [double(torch.full((2,), float(i)))[0].item() for i in range(20)]
    gc.collect()
    assert seen == [2.0 * i for i in range(20)]
