"""Issue 26: every check of a built-in lesson is proven by its mistakes. With any one check
removed (its calls record nothing and stop nothing, as if its lines were deleted), some mistake
of mistakes.toml no longer gives what it says, so `dev check` fails; unless mistakes.toml's
[unproven] says why no mistake can reach that check.

In process: each mistake is probed once per step it fails (the kit's probe, as the child runs
it, with the kernels it called, its outputs through the codec as the judge gets them), then
judged again with each of the step's checks removed."""

from __future__ import annotations

import sys
import types
from dataclasses import replace

import pytest
import torch
from worker_kit import LESSONS, REFERENCE

from tutor.cli.dev_mistakes import build, load_mistakes, unproven
from tutor.engine import codec
from tutor.engine.checks_loader import load_checks
from tutor.engine.judge import judge_kernel_called
from tutor.kit import probe_tools
from tutor.kit.judge_tools import Stop, Verdict
from tutor.kit.spec import JudgeContext
from tutor.model.mistakes import unmet
from tutor.model.results import StepResult

RAISED = object()
KERNEL = object()  # the probe ended at a library kernel (StepSpec.own_formula)
# The diagnosis from behaviour comes after the checks (engine/behaviour.py), not from one.
BEHAVIOUR = {"likely.behaves_as", "likely.behaves_as_two", "likely.behaviour_differs"}


def _judged(expect):
    """What a mistake says its step's checks give: where the diagnosis comes from behaviour,
    the check's own keys only (the diagnosis it names is the mutant's)."""
    if expect.keys & BEHAVIOUR:
        return replace(expect, keys={k for k in expect.keys if not k.startswith("likely.")})
    return expect


def _probe(checks, step: str, source: str, inputs):
    """(outputs, kernels) of the step's probe on a file, or RAISED."""
    module = types.ModuleType("learner")
    module.__file__ = "learner.py"
    sys.modules["learner"] = module
    try:
        exec(compile(source, "learner.py", "exec", dont_inherit=True), module.__dict__)
        ctx = probe_tools.ProbeContext(module, "learner.py", source, None)
        ctx.views = False
        # As in the child: a kernel ends the probe, and the step is judged by that alone.
        ctx.stop_at_kernel = checks.STEPS[step].own_formula is not None
        outputs = checks.STEPS[step].probe(ctx, inputs)
    except probe_tools.ForbiddenKernel as exc:
        return KERNEL, exc.kernels
    except BaseException:
        return RAISED
    tree, blob = codec.encode(outputs)  # what the judge gets: the child's frame, decoded
    return codec.decode(tree, blob), sorted(ctx.kernels)


def _judge(checks, step: str, probed, inputs, source: str, removed: str | None) -> StepResult:
    outputs, kernels = probed
    verdict = Verdict(source)
    if removed is not None:
        expect = verdict.expect

        def without(check_id, ok, key="", /, **params):
            return True if check_id == removed else expect(check_id, ok, key, **params)

        verdict.expect = without  # type: ignore[method-assign]
    if outputs is KERNEL:  # the engine's verdict then: own-formula, removed with the rest
        judge_kernel_called(verdict, checks.STEPS[step], source, kernels)
        return StepResult(step, "fail", verdict.checks)
    try:
        checks.STEPS[step].judge(verdict, outputs, inputs, JudgeContext(source, kernels, False))
    except Stop:
        pass
    except Exception:
        return StepResult(step, "error", verdict.checks)
    status = "pass" if verdict.passed() and verdict.checks else "fail"
    return StepResult(step, status, verdict.checks)


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
    probe_tools.install_traps()  # as the child has them


@pytest.mark.parametrize("lesson", [x for x in LESSONS], ids=lambda x: x.id)
def test_removing_any_check_makes_a_mistake_unmet(lesson):
    checks = load_checks([lesson])[lesson.id]
    inputs = checks.make_inputs()
    reference = REFERENCE[lesson.id]
    mistakes, problems = load_mistakes(lesson)
    assert not problems
    ready, unusable = build(lesson, reference, mistakes)
    assert not unusable
    reasons = unproven(lesson)
    unreached: list[str] = []
    apart: set[str] = set()
    for step in [s.id for s in lesson.checked_steps]:
        ref = _probe(checks, step, reference, inputs)
        assert ref is not RAISED, step
        ids = [c.id for c in _judge(checks, step, ref, inputs, reference, None).checks]
        failing = [
            (m, source, probed)
            for m, source in ready
            if step in m.expect and m.expect[step].status != "pass"
            if (probed := _probe(checks, step, source, inputs)) is not RAISED
        ]
        # A mistake this process cannot reproduce (one that reads the checks' helpers from the
        # caller's frames: in the worker they are the child's) is never counted as caught.
        # There must be few, or the proof says little.
        base = {
            m.id: _judge(checks, step, probed, inputs, source, None)
            for m, source, probed in failing
        }
        as_said = [
            f
            for f in failing
            if not unmet({step: base[f[0].id]}, [step], {step: _judged(f[0].expect[step])})
        ]
        apart |= {m.id for m, _, _ in failing if all(m is not f[0] for f in as_said)}
        failing = as_said
        # Taking away a check that passed, or never ran, leaves a verdict as it was: only the
        # checks a mistake's own verdict did not pass can make it unmet.
        not_passed = {
            m.id: {c.id for c in base[m.id].checks if c.status != "pass"} for m, _, _ in failing
        }
        for check in ids:
            broken = [
                m.id
                for m, source, probed in failing
                if check in not_passed[m.id]
                and unmet(
                    {step: _judge(checks, step, probed, inputs, source, check)},
                    [step],
                    {step: _judged(m.expect[step])},
                )
            ]
            if not broken and f"{step}/{check}" not in reasons:
                unreached.append(f"{step}/{check}")
    # A check only such a mistake catches is proven by the worker's run of it
    # (test_lesson_mistakes.py), not here.
    elsewhere = {
        f"{step}/{e.check}" for m in mistakes if m.id in apart for step, e in m.expect.items()
    }
    unreached = [c for c in unreached if c not in elsewhere]
    assert not unreached, f"{lesson.id}: checks no mistake proves: {unreached} (apart: {apart})"
    assert len(apart) <= 3, sorted(apart)
