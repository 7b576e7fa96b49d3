"""The judge: turns what a child sent back into a step verdict.

It runs in its own process, forked from the worker before any torch op, and never
executes learner code: every expected value comes from inputs it made itself.
"""

from __future__ import annotations

import traceback
from pathlib import Path

from tutor.engine import codec, protocol
from tutor.engine.behaviour import Behaviour, wants_behaviour
from tutor.kit.judge_tools import Stop, Verdict
from tutor.kit.kernels import no_kernel
from tutor.kit.source_tools import qualified_name
from tutor.kit.spec import JudgeContext, StepSpec
from tutor.model.results import Check, Failure, Message, StepResult
from tutor.text.i18n import qualify


def _parse(payload: bytes) -> tuple[protocol.Report | None, bytearray]:
    try:
        child, blob = codec.unpack_payload(payload)
        return protocol.report_from_json(child), blob
    except (ValueError, TypeError, RecursionError):  # protocol.Malformed is a ValueError
        return None, bytearray()


def _step_fallback(value, fallback: str) -> None:
    """Every nested likely.unknown in a message's params replaced, in place, by the step's own
    fallback: the generic one cannot know whether the step draws any weights to compare."""
    if isinstance(value, dict):
        if value.get("key") == "likely.unknown" and isinstance(value.get("params"), dict):
            value["key"] = fallback
        for v in value.values():
            _step_fallback(v, fallback)
    elif isinstance(value, list):
        for v in value:
            _step_fallback(v, fallback)


class Judge:
    def __init__(
        self, checks_modules: dict, own_keys: dict | None = None, cache_root: Path | None = None
    ):
        """cache_root: where the lesson's mutants' outputs are kept on disk (see Behaviour)."""
        self.modules = checks_modules  # lesson id -> checks module
        self.own_keys = own_keys or {}  # lesson id -> the keys of its own catalog (no prefix)
        self._inputs: dict = {}
        self.behaviour = Behaviour(checks_modules, cache_root)

    def inputs(self, lesson: str):
        if lesson not in self._inputs:
            self._inputs[lesson] = self.modules[lesson].make_inputs()
        return self._inputs[lesson]

    def verdict(
        self,
        lesson: str,
        step: str,
        payload: bytes,
        source: str,
        views: bool = True,
        wait: bool = True,
    ) -> StepResult:
        """wait: whether a diagnosis from behaviour may wait for the lesson's mutants to run
        (see Behaviour); the app's verdicts never do."""
        result = self._verdict(lesson, step, payload, source, views)
        self.behaviour.collect()
        if wants_behaviour(result):  # never for a pass: a correct save costs nothing here
            try:
                inputs = self.inputs(lesson)
                said = self.behaviour.explain(lesson, step, payload, inputs, source, wait)
            except Exception:  # a diagnosis is extra: the verdict stands without it
                said = None
            check = next(c for c in result.checks if c.status != "pass" and c.message)
            if said is not None and check.message is not None:
                check.message.params["likely"] = said
        own = self.own_keys.get(lesson)
        fallback = f"fallback.{step}"
        if own and fallback in own:  # the step's own words where no known mistake matched
            for check in result.checks:
                if check.message is not None:
                    _step_fallback(check.message.params, fallback)
        if own:
            for check in result.checks:
                if check.message is None and f"checkname.{check.id}" in own:
                    # A passing check is said by its name: the lesson's own, where its catalog has one.
                    check.message = Message(f"{lesson}.checkname.{check.id}", {})
                elif check.message is not None:
                    said = qualify(
                        {"key": check.message.key, "params": check.message.params}, lesson, own
                    )
                    check.message.key = said["key"]
            qualify(result.visuals, lesson, own)
        return result

    def _verdict(
        self, lesson: str, step: str, payload: bytes, source: str, views: bool
    ) -> StepResult:
        spec = self.modules[lesson].STEPS[step]
        fn = " / ".join(spec.functions)
        report, blob = _parse(payload)
        match report:
            case (
                None
            ):  # the frame carried the job's token but its bytes were mixed with something else's
                return protocol.failed_step(
                    step, "error", Failure("channel", ""), "failure.channel", {}
                )
            case protocol.ImportFailed(error):
                return protocol.failed_step(
                    step,
                    "error",
                    error.failure,
                    *protocol.learner_failure_message(error, None),
                    check="file-loads",
                )
            case protocol.Missing(name):
                return StepResult(
                    step,
                    "fail",
                    [Check("defined", "fail", Message("check.missing", {"name": name}))],
                )
            case protocol.Foreign(name, origin):
                params = {"name": name, "origin": origin}
                return StepResult(
                    step, "fail", [Check("own-code", "fail", Message("check.not_in_file", params))]
                )
            case protocol.KernelCalled(kernels):  # the probe stopped there: nothing else to judge
                verdict = Verdict(source)
                judge_kernel_called(verdict, spec, source, kernels)
                return StepResult(step, "fail", verdict.checks)
            case protocol.Raised(error, todo=True):
                where = error.failure.frames[-1] if error.failure.frames else None
                todo = where and qualified_name(
                    source, where.line, where.function
                )  # the method, not its class
                return StepResult(
                    step,
                    "todo",
                    [Check("implemented", "todo", Message("check.todo", {"fn": todo or fn}))],
                    error.failure,
                )
            case protocol.Raised(error):
                return protocol.failed_step(
                    step, "error", error.failure, *protocol.learner_failure_message(error, fn)
                )
            case protocol.HarnessError(detail):
                return protocol.failed_step(
                    step,
                    "error",
                    Failure("HarnessError", detail),
                    "failure.harness",
                    {"detail": detail},
                )
        try:
            outputs = codec.decode(report.tree, blob)
        except (ValueError, TypeError, RecursionError):  # not what the child's encoder writes
            return protocol.failed_step(
                step, "error", Failure("channel", ""), "failure.channel", {}
            )
        verdict = Verdict(source)
        try:
            spec.judge(
                verdict, outputs, self.inputs(lesson), JudgeContext(source, report.kernels, views)
            )
        except Stop:
            pass
        except Exception as exc:  # a value the judge did not foresee: say so, do not die
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            verdict.checks.append(
                Check("judge", "error", Message("failure.judge", {"detail": detail}))
            )
            return StepResult(step, "error", verdict.checks, visuals=verdict.visuals)
        status = "pass" if verdict.passed() and verdict.checks else "fail"
        return StepResult(
            step, status, verdict.checks, visuals=verdict.visuals, reads=_reads(report)
        )


def _reads(report: protocol.Outputs) -> tuple[str, ...] | None:
    return None if report.reads is None else tuple(report.reads)


def judge_kernel_called(verdict: Verdict, spec: StepSpec, source: str, kernels: list[str]) -> None:
    """A step whose probe a library kernel ended (StepSpec.own_formula): own-formula fails, in
    no_kernel's words, as the judge's own check would say it."""
    own = spec.own_formula or " / ".join(spec.functions)
    no_kernel(verdict, own, source, set(spec.functions), kernels)


def unjudged(step: str, exc: BaseException) -> StepResult:
    """The verdict of a step the judge failed on (judge_main): an error, said as the tutor's."""
    try:
        detail = f"{type(exc).__name__}: {str(exc)[:300]}"
    except Exception:
        detail = type(exc).__name__
    return StepResult(
        step, "error", [Check("judge", "error", Message("failure.judge", {"detail": detail}))]
    )
