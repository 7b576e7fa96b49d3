"""The kit's made-module property (tutor.kit.built_module): a learner's module built by keyword
with the tutor's weights, in eval mode, with the method a step calls; or why not, said in the
lesson's words."""

from __future__ import annotations

import types

import torch
from torch import nn

from tutor.kit import judged, made_module, msg, require_made
from tutor.kit.probe_tools import ProbeContext

W = {"W": torch.full((2, 3), 0.25)}
NAMES = {"lin.weight": "W"}
KEYS = {"no_method": "check.no_method", "build_raised": "check.build_raised"}
LIKELY = {"no_method": msg("likely.no_method"), "build_raised": msg("likely.build")}


class Right(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out, bias=False)

    def step(self, x, state=None):
        return self.lin(x), state


class NoStep(Right):
    step = None  # type: ignore[assignment]


class Raises(Right):
    def __init__(self, d_in, d_out):
        raise ValueError("no")


def make(cls):
    ctx = ProbeContext(types.ModuleType("learner"), "learner.py", "", None)
    return made_module(ctx, cls, ("d_in", "d_out"), (3, 2, 99), W, NAMES, method="step")


def said(made) -> dict | None:
    return judged(
        "", lambda v: require_made(v, made, ("d_in", "d_out"), (3, 2), keys=KEYS, likely=LIKELY)
    ).failed_message()


def test_a_right_module_is_made_with_the_weights_in_eval_mode():
    module, failed = make(Right)
    assert failed == {}
    assert not module.training
    assert torch.equal(module.lin.weight, W["W"])


def test_a_module_without_the_method_is_named():
    module, failed = make(NoStep)
    assert module is None
    assert said(failed["made"])["key"] == "check.no_method"


def test_a_constructor_that_raises_says_its_arguments():
    module, failed = make(Raises)
    assert module is None
    message = said(failed["made"])
    assert message["key"] == "check.build_raised"
    assert message["params"]["args"] == "d_in=3, d_out=2"
