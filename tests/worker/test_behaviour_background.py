"""The app's verdicts never wait for the lesson's mutants (engine/behaviour.py): the first
failing save is judged at once with the hand-written diagnosis while the mutants run in the
background; the saves after they are done get the diagnosis from behaviour. `check` and `grade`
wait. In process, on the judge itself (the mutants' runner is a fork of it)."""

from __future__ import annotations

import sys
import time
import types

import pytest
import torch
from worker_kit import REFERENCE

from tutor.engine import behaviour, codec, protocol
from tutor.engine.checks_loader import load_checks
from tutor.engine.judge import Judge
from tutor.kit.spec import StepSpec
from tutor.model.lesson import all_lessons
from tutor.model.records import is_message, local

LESSON, STEP = "lab-02", "weights"
FILL = ('scores.masked_fill(mask, float("-inf"))', "scores.masked_fill(mask, -1.0)")


@pytest.fixture
def judge():
    torch.set_num_threads(1)
    modules = load_checks([x for x in all_lessons() if x.id == LESSON])
    return Judge(modules)


def _payload(judge: Judge, source: str) -> bytes:
    tree, blob = codec.encode(
        behaviour._probe(judge.modules[LESSON], STEP, "learner.py", source, judge.inputs(LESSON))
    )
    return codec.pack_payload(protocol.Outputs(tree, []).to_json(), blob)


def _likely(result) -> str | None:
    check = next(c for c in result.checks if c.status != "pass" and c.message)
    likely = check.message.params.get("likely")
    return local(likely["key"]) if is_message(likely) else None


def _until_idle(judge: Judge, limit: float = 120.0) -> None:
    end = time.monotonic() + limit
    while judge.behaviour._running or judge.behaviour._queued:
        assert time.monotonic() < end, "the mutants' runner never finished"
        time.sleep(0.05)
        judge.behaviour.collect()


def test_the_app_is_judged_at_once_then_told_from_behaviour(judge):
    source = REFERENCE[LESSON].replace(*FILL)
    assert source != REFERENCE[LESSON]
    payload = _payload(judge, source)
    first = judge.verdict(LESSON, STEP, payload, source, wait=False)
    assert first.status == "fail"
    assert _likely(first) not in behaviour_keys()  # not waited for
    assert judge.behaviour._running, "the mutants run in the background"
    _until_idle(judge)
    again = judge.verdict(LESSON, STEP, payload, source, wait=False)
    assert _likely(again) == "likely.behaves_as", again
    assert [(c.id, c.status) for c in again.checks] == [(c.id, c.status) for c in first.checks]


def test_check_waits_for_the_mutants(judge):
    source = REFERENCE[LESSON].replace(*FILL)
    result = judge.verdict(LESSON, STEP, _payload(judge, source), source, wait=True)
    assert _likely(result) == "likely.behaves_as", result
    assert not judge.behaviour._running


def test_mutants_out_of_time_run_again_later(judge, monkeypatch):
    """A runner stopped at its limit (a loaded machine) leaves what it had not run unknown, never
    'no match': the next failing save runs them again and names the mistake."""
    source = REFERENCE[LESSON].replace(*FILL)
    payload = _payload(judge, source)
    probe = behaviour._probe

    def slow(*args):  # in the forked runner: a machine too busy to run them all in time
        time.sleep(0.2)
        return probe(*args)

    monkeypatch.setattr(behaviour, "_probe", slow)
    monkeypatch.setattr(behaviour, "RUN_LIMIT", 0.5)
    cut = judge.verdict(LESSON, STEP, payload, source, wait=True)
    assert _likely(cut) not in behaviour_keys()
    monkeypatch.setattr(behaviour, "_probe", probe)
    monkeypatch.setattr(behaviour, "RUN_LIMIT", 60.0)
    again = judge.verdict(LESSON, STEP, payload, source, wait=True)
    assert _likely(again) == "likely.behaves_as", again


def behaviour_keys() -> set[str]:
    return {"likely.behaves_as", "likely.behaves_as_two", "likely.behaviour_differs"}


def test_the_runner_is_quiet(capfd):
    """What a mutant prints or warns (flex_attention's warning) never reaches the terminal."""

    def probe(ctx, inputs):
        print("noise")
        print("warning", file=sys.stderr)
        return {"out": torch.ones(2)}

    checks = types.SimpleNamespace(STEPS={"s": StepSpec(probe, lambda *a: None, ())})
    runner = behaviour.Runner(checks, [("s", "m", "x = 1\n")], None, 30.0, 0)
    got = runner.wait(time.monotonic() + 30.0)
    assert runner.finished and torch.equal(got[("s", "m")]["out"], torch.ones(2))
    assert capfd.readouterr() == ("", "")


def test_a_mutant_that_calls_a_kernel_stops_there():
    """A mistake that calls a library kernel is told by check.kernel, never by behaviour: in a
    step with own_formula its mutant stops at the kernel (flex_attention's eager path would
    spend seconds), as the learner's file does; where kernels are allowed it runs."""
    import torch.nn.functional as F

    from tutor.kit import probe_tools

    probe_tools.install_traps()

    def probe(ctx, inputs):
        q = torch.randn(1, 1, 3, 4)
        out = ctx.call(lambda x: F.scaled_dot_product_attention(x, x, x), q)
        return {"out": out["value"]}

    steps = {
        "own": StepSpec(probe, lambda *a: None, (), own_formula="attention"),
        "free": StepSpec(probe, lambda *a: None, ()),
    }
    runner = behaviour.Runner(
        types.SimpleNamespace(STEPS=steps),
        [("own", "m", "x = 1\n"), ("free", "m", "x = 1\n")],
        None,
        30.0,
        0,
    )
    got = runner.wait(time.monotonic() + 30.0)
    assert runner.finished
    assert got[("own", "m")] == {
        "kind": "ForbiddenKernel",
        "detail": "F.scaled_dot_product_attention",
    }
    assert got[("free", "m")]["out"].shape == (1, 1, 3, 4)
