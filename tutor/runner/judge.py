"""The judge: turns what a child sent back into a step verdict.

It runs in its own process, forked from the worker before any torch op, and never
executes learner code: every expected value comes from inputs it made itself.
"""

from __future__ import annotations

import traceback

from ..results import Check, Failure, Frame, Message, StepResult
from . import codec
from .judge_kit import Stop, Verdict
from .spec import JudgeContext


def _failure(data: dict) -> Failure:
    return Failure(
        kind=data["kind"], detail=data["detail"], caret=data.get("caret", ""),
        frames=[Frame(**f) for f in data.get("frames", [])],
    )


def failure_check(status: str, failure: Failure, fn: str, raw: dict | None = None) -> Check:
    """A step's learner code raised, crashed or hit a limit while the step ran."""
    line, code = _where(failure)
    if failure.kind == "MemoryError":
        key = "failure.memory"
    elif failure.kind == "RecursionError":
        key = "failure.recursion"
    elif failure.kind == "SystemExit":
        key = "failure.system_exit"
    elif failure.kind in ("SyntaxError", "IndentationError", "TabError"):
        key = "failure.syntax"
    elif raw and raw.get("refused"):
        key = "failure.refused"
    elif raw and raw.get("module"):
        key = "failure.missing_package"
    else:
        key = "failure.exception"
    return Check("runs", status, Message(key, {
        "fn": fn, "kind": failure.kind, "detail": failure.detail, "line": line, "code": code,
        **({"module": raw["module"]} if raw and raw.get("module") else {})}))


def file_failure_check(failure: Failure, raw: dict) -> Check:
    """The file itself did not load (it raised, or cannot be parsed): the same for every step,
    so the message is about the file, not about the step's functions."""
    line, code = _where(failure)
    params = {"kind": failure.kind, "detail": failure.detail, "line": line, "code": code}
    if failure.kind in ("SyntaxError", "IndentationError", "TabError"):
        key = "failure.syntax"
    elif failure.kind == "MemoryError":
        key = "failure.memory"
    elif failure.kind == "SystemExit":
        key = "failure.system_exit"
    elif raw.get("refused"):
        key = "failure.refused"
    elif raw.get("module"):
        key = "failure.missing_package"
        params["module"] = raw["module"]
    else:
        key = "failure.file_exception"
    return Check("file-loads", "error", Message(key, params))


def _where(failure: Failure) -> tuple:
    line = failure.frames[-1].line if failure.frames else "?"
    code = failure.frames[-1].code.strip() if failure.frames else ""
    return line, code


def _parse(payload: bytes) -> tuple[dict | None, bytearray]:
    try:
        child, blob = codec.unpack_payload(payload)
    except (ValueError, TypeError, RecursionError):
        return None, bytearray()
    return (child, blob) if isinstance(child, dict) else (None, blob)


class Judge:
    def __init__(self, checks_modules: dict):
        self.modules = checks_modules  # lesson id -> checks module
        self._inputs: dict = {}

    def inputs(self, lesson: str):
        if lesson not in self._inputs:
            self._inputs[lesson] = self.modules[lesson].make_inputs()
        return self._inputs[lesson]

    def verdict(self, lesson: str, step: str, payload: bytes, source: str) -> StepResult:
        spec = self.modules[lesson].STEPS[step]
        fn = " / ".join(spec.functions)
        child, blob = _parse(payload)
        if child is None:  # the frame carried the job's token but its bytes were mixed with something else's
            failure = Failure("channel", "")
            return StepResult(step, "error", [Check("runs", "error", Message("failure.channel", {}))], failure)
        if "import_error" in child:
            failure = _failure(child["import_error"])
            return StepResult(step, "error", [file_failure_check(failure, child["import_error"])], failure)
        if "missing" in child:
            return StepResult(step, "fail", [Check("defined", "fail", Message("check.missing", {"name": child["missing"]}))])
        if "foreign" in child:
            params = {"name": str(child["foreign"].get("name", "")), "origin": str(child["foreign"].get("origin", "?"))}
            return StepResult(step, "fail", [Check("own-code", "fail", Message("check.not_in_file", params))])
        if "failure" in child:
            failure = _failure(child["failure"])
            if child.get("todo"):
                return StepResult(step, "todo", [Check("implemented", "todo", Message("check.todo", {"fn": fn}))], failure)
            return StepResult(step, "error", [failure_check("error", failure, fn, child["failure"])], failure)
        if "harness_error" in child:
            failure = Failure("HarnessError", child["harness_error"])
            return StepResult(step, "error", [Check("runs", "error", Message("failure.harness", {"detail": child["harness_error"]}))], failure)
        verdict = Verdict(source)
        try:
            outputs = codec.decode(child["outputs"], blob)
            spec.judge(verdict, outputs, self.inputs(lesson), JudgeContext(source, child.get("kernels", [])))
        except Stop:
            pass
        except Exception as exc:  # a value the judge did not foresee: say so, do not die
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            verdict.checks.append(Check("judge", "error", Message("failure.judge", {"detail": detail})))
            return StepResult(step, "error", verdict.checks, visuals=verdict.visuals)
        status = "pass" if verdict.passed() and verdict.checks else "fail"
        return StepResult(step, status, verdict.checks, visuals=verdict.visuals)
