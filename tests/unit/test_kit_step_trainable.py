"""The kit's trainable-step property (tutor.kit.step_trainable): one call of a module's step
method from a state of constants, gradients on, then backward; the parameters' gradients
against the reference step's. The step here: a Linear over every token so far, summed."""

from __future__ import annotations

import types

import torch
from torch import nn

from tutor.kit import (
    Verdict,
    judge_step_trained,
    judged,
    msg,
    probe_step_trained,
    reference_grads,
)
from tutor.kit.probe_tools import ProbeContext

X_T = torch.tensor([[[0.5, -1.0]]])
STATE = (torch.tensor([[[1.0, 2.0], [3.0, -4.0]]]),)
G = torch.tensor([[[0.7, -0.2]]])
W = {"W": torch.tensor([[1.0, 0.5], [-0.5, 2.0]]), "b": torch.tensor([0.1, -0.3])}
NAMES = {"lin.weight": "W", "lin.bias": "b"}


class Right(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        with torch.no_grad():
            self.lin.weight.copy_(W["W"])
            self.lin.bias.copy_(W["b"])

    def step(self, x_t, state=None):
        s = torch.cat([state[0], x_t], dim=1)
        return torch.tanh(self.lin(s)).sum(1, keepdim=True), (s,)


class Detached(Right):
    def step(self, x_t, state=None):
        out, s = super().step(x_t, state)
        return out.detach(), s


class InPlace(Right):
    def step(self, x_t, state=None):
        s = torch.cat([state[0], x_t], dim=1)
        h = torch.tanh(self.lin(s))
        h.mul_(1.0)  # tanh's backward needs its output as it was
        return h.sum(1, keepdim=True), (s,)


def want() -> dict:
    def forward(x, w):
        s = torch.cat([STATE[0], x], dim=1)
        return torch.tanh(s @ w["W"].T + w["b"]).sum(1, keepdim=True)

    return reference_grads(forward, X_T, W, G, NAMES)[0]


def judge(cls) -> Verdict:
    ctx = ProbeContext(types.ModuleType("learner"), "learner.py", "", None)
    train = probe_step_trained(ctx, cls(), "step", X_T, STATE, G)
    culprit = lambda: msg("likely.culprit")  # noqa: E731
    return judged("", lambda v: judge_step_trained(v, train, want(), culprit=culprit))


def test_a_step_that_trains_passes():
    v = judge(Right)
    assert v.passed()
    assert [c.id for c in v.checks] == ["trainable"]


def test_a_detached_output_is_not_trainable():
    v = judge(Detached)
    assert not v.passed()
    assert v.failed_message()["key"] == "check.layer_not_trainable"


def test_an_in_place_op_that_breaks_backward_is_named():
    v = judge(InPlace)
    assert not v.passed()
    assert v.failed_message()["key"] == "check.layer_backward_raised"
    assert v.failed_message()["params"]["likely"]["key"] == "likely.story_inplace"


def test_nothing_is_judged_without_a_module():
    ctx = ProbeContext(types.ModuleType("learner"), "learner.py", "", None)
    assert probe_step_trained(ctx, None, "step", X_T, STATE, G) is None
    v = judged("", lambda v: judge_step_trained(v, None, want()))
    assert v.checks == []
