"""tutor.kit.kept_references: a reference's result kept per content of what went in, and the
training story's reference computed once per learner state, never served for another."""

from __future__ import annotations

import contextlib
import types

import pytest
import torch

from tutor.kit import kept_references
from tutor.kit.judge_tools import Stop, Verdict
from tutor.kit.kept_references import Same, content_key, kept
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.training import judge_training_story, probe_training_story


@pytest.fixture(autouse=True)
def _nothing_kept():
    kept_references.forget()
    yield
    kept_references.forget()


def test_equal_contents_give_equal_keys_and_any_difference_another():
    t = torch.arange(6.0).reshape(2, 3)
    assert content_key(t) == content_key(t.clone())
    assert content_key({"a": t, "b": 1}) == content_key({"b": 1, "a": t.clone()})
    assert content_key([t, None, 0.5, "x"]) == content_key([t.clone(), None, 0.5, "x"])
    different = [
        t + 1e-6,
        t.double(),
        t.reshape(3, 2),
        t.clone().requires_grad_(True),
        t.t(),  # the same bytes in memory, other values in order
        [t],
        {"a": t},
    ]
    keys = {content_key(t)} | {content_key(d) for d in different}
    assert len(keys) == len(different) + 1
    assert content_key(True) != content_key(1) and content_key(1) != content_key(1.0)


def test_a_result_is_made_once_per_content_and_again_when_it_changes():
    made = []

    def make():
        made.append(1)
        return object()

    x = torch.ones(4)
    first = kept("f", make, x, {"w": torch.zeros(2)})
    assert kept("f", make, x.clone(), {"w": torch.zeros(2)}) is first
    assert len(made) == 1
    kept("f", make, x, {"w": torch.ones(2)})  # another state
    kept("g", make, x, {"w": torch.zeros(2)})  # another reference
    assert len(made) == 3


def test_what_has_no_key_is_made_every_time_and_the_oldest_is_dropped():
    made = []

    def make():
        made.append(1)
        return len(made)

    kept("f", make, object())
    kept("f", make, object())
    big = torch.zeros(kept_references.KEY_BYTES // 4 + 1)  # float32: over the bytes a key hashes
    kept("f", make, [big])
    kept("f", make, [big])
    assert len(made) == 4
    for i in range(kept_references.KEPT + 1):
        kept("f", make, i)
    before = len(made)
    kept("f", make, 0)  # the oldest: dropped
    kept("f", make, kept_references.KEPT)  # the newest: kept
    assert len(made) == before + 1


def test_same_is_the_object_itself():
    a, b = [1], [1]
    assert Same(a) == Same(a) and Same(a) != Same(b) and hash(Same(a)) == id(a)


SOURCE = """
import torch


class Scale(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.w = torch.nn.Parameter(torch.full((3,), scale))

    def forward(self, x):
        return x * self.w


class Kept(Scale):
    def forward(self, x):  # the first result, kept: training never reaches it again
        if not hasattr(self, "first"):
            self.first = x * self.w
        return self.first
"""


def story_of(name: str, scale: float, x, g):
    module = types.ModuleType("learner")
    exec(compile(SOURCE, "learner.py", "exec"), module.__dict__)
    ctx = ProbeContext(module, "learner.py", SOURCE, None)
    layer = getattr(module, name)(scale)
    return probe_training_story(ctx, layer, [x], g, module=layer)


def test_the_story_is_computed_once_per_learner_state_and_judged_against_its_own():
    calls = []

    def reference(ins, state, p):
        calls.append(1)
        return ins[0] * state["w"]

    g = torch.Generator().manual_seed(3)
    x, grad = torch.randn(2, 3, generator=g), torch.randn(2, 3, generator=g)
    key = Same(reference)

    def judged(name: str, scale: float) -> Verdict:
        v = Verdict(SOURCE)
        with contextlib.suppress(Stop):
            story = story_of(name, scale, x, grad)
            judge_training_story(v, story, [x], reference, grad, what="f(x)", names=["x"], memo=key)
        return v

    assert judged("Scale", 1.0).passed()
    per_story = len(calls)
    assert judged("Scale", 1.0).passed()
    assert len(calls) == per_story  # the same state: kept
    assert judged("Scale", 2.0).passed()  # another state: its own story, not the one kept
    assert len(calls) == 2 * per_story
    wrong = judged("Kept", 1.0)  # the kept story is the reference's: a wrong layer still fails
    assert not wrong.passed() and len(calls) == 2 * per_story
    assert [c.id for c in wrong.checks if c.status == "fail"] == ["trains"]
