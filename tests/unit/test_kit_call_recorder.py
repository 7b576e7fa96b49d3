"""The kit's call recorder (tutor.kit.call_recorder): a method routed through the probe's own
function is met however learner code calls it, on the instance or through the class, and each
call becomes a row that a judge reads as one tensor."""

from __future__ import annotations

import torch

from tutor.kit import CallRecorder, argument, intercept


class Layer:
    def __init__(self):
        self.calls = 0

    def step(self, x, state=None):
        self.calls += 1
        return x * 2, (0 if state is None else state[0] + 1,)

    def forward(self, x):
        return x


def test_intercept_sees_calls_on_the_instance_and_through_the_class():
    layer, seen = Layer(), []

    def around(original, *args, **kwargs):
        seen.append(args)
        return original(*args, **kwargs)

    intercept(layer, {"step": around})
    assert layer.step(1) == (2, (0,))
    assert type(layer).step(layer, 3, state=(4,)) == (6, (5,))
    assert Layer.step(layer, 5) == (10, (0,))  # the learner's own class is left alone
    assert seen == [(1,), (3,)] and layer.calls == 3
    assert type(layer).__name__ == "Layer" and type(layer).__qualname__ == "Layer"
    assert isinstance(layer, Layer)


def test_a_plain_wrapper_on_the_instance_would_miss_the_class_call():
    layer, seen = Layer(), []
    layer.step = lambda *a, **k: seen.append(a) or Layer.step(layer, *a, **k)
    type(layer).step(layer, 1)
    assert seen == []  # why intercept works on the class


def record(layer) -> CallRecorder:
    def step(args, kwargs, rec):
        state = argument(args, kwargs, 1, "state")
        last = rec.last["step"]
        back = int(state is None) if last is None else int(state is last[1])
        return [rec.count("step"), -1 if state is None else state[0], back]

    def forward(args, kwargs, rec):
        x = argument(args, kwargs, 0, "x")
        return [x] if x > 0 else None  # a call left out

    return CallRecorder(layer, {"step": step, "forward": forward}, {"step": 3, "forward": 1})


def test_each_call_is_a_row_and_last_is_what_the_method_returned():
    layer = Layer()
    rec = record(layer)
    _, state = layer.step(1)
    _, state = type(layer).step(layer, 1, state=state)
    layer.step(1, (7,))  # a state the layer never handed back
    layer.forward(3)
    layer.forward(-1)
    log = rec.log()
    assert log["step"].tolist() == [[0, -1, 1], [1, 0, 1], [2, 7, 0]]
    assert log["forward"].tolist() == [[3]] and log["step"].dtype == torch.int64


def test_an_empty_log_keeps_its_width_and_a_raising_call_keeps_last():
    layer = Layer()
    rec = record(layer)
    assert rec.log()["step"].shape == (0, 3)
    layer.step(1)
    try:
        layer.step("a", state=("b",))
    except TypeError:
        pass
    assert rec.last["step"] == (2, (0,)) and rec.count("step") == 2


def test_argument_binds_by_position_or_name():
    assert argument((1, 2), {}, 1, "state") == 2
    assert argument((1,), {"state": 3}, 1, "state") == 3
    assert argument((1,), {}, 1, "state", "none") == "none"


LEARNER = """
import sys  # a file that names sys may reach the checks' functions: the watch is on


def generate(layer, helper=None):
    if helper is not None:
        helper()
    return layer.step(1), type(layer).step(layer, 2)
"""


def learner_context():
    import types

    from tutor.engine import origin
    from tutor.kit.probe_tools import ProbeContext

    code = compile(LEARNER, "/tmp/attn-lab/learner.py", "exec")
    module = types.ModuleType("learner")
    exec(code, module.__dict__)
    # This file plays the checks' (the child names the lesson's checks.py).
    ctx = ProbeContext(module, "/tmp/attn-lab/learner.py", LEARNER, origin.code_ids(code), __file__)
    return ctx, module.generate


def noted(args, kwargs, rec):
    return [argument(args, kwargs, 0, "x")]


def test_the_checks_notes_run_under_learner_code_without_counting_as_foreign():
    ctx, generate = learner_context()
    layer = Layer()
    rec = CallRecorder(layer, {"step": noted}, {"step": 1})
    call = ctx.call(lambda: generate(layer))
    assert "error" not in call and rec.log()["step"].tolist() == [[1], [2]]
    assert ctx.kernels == set()


def test_a_function_of_the_checks_the_learner_runs_unlent_is_foreign():
    ctx, generate = learner_context()
    ctx.call(lambda: generate(Layer(), helper=lambda: None))
    assert any("checks' own code" in k for k in ctx.kernels)
