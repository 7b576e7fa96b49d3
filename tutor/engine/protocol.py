"""Typed messages between the engine's processes. Standard library only, no torch: the UI
process imports the worker's events from here (client.py).

- A child's report on one step (sandbox → judge): one of the `Report` kinds. It travels as
  the JSON head of codec.pack_payload (to_json() gives that object, the same keys as ever)
  with the tensors in the blob; the judge reads it back with report_from_json().
- The worker's frames to the judge and back: JudgeRequest, JudgeReply (worker.send_frame).
- The worker's events for the UI (worker → client), one JSON line each: see `Event`.
  (The UI's requests to the worker, "run", "go", "ping", ..., are still plain dicts.)
- failed_step: the one place a failure becomes a step's result (worker and judge).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from tutor.model.results import Check, Failure, Frame, Message, StepResult


class Malformed(ValueError):
    """Bytes that parse as JSON but are none of the messages below."""


# What a child's report may hold: it comes through a pipe learner code can write to.
MAX_TEXT = 8000  # characters of one string (describe_exception's are far shorter)
MAX_FRAMES = 64


def _str(value, what: str) -> str:
    if not isinstance(value, str):
        raise Malformed(what)
    return value[:MAX_TEXT]


def _line(value):
    """A frame's line: a number (bool is not one), or "?" for what is none."""
    if type(value) is int and 0 <= value < 1 << 31:
        return value
    if value is None or (isinstance(value, str) and len(value) <= 12):
        return value
    raise Malformed("line")


# ------------------------------------------------------------------ a child's report


@dataclass(frozen=True)
class LearnerFailure:
    """An exception in the learner's code, as the child described it (learner_code.describe_exception)."""

    failure: Failure
    refused: bool = False  # the fence refused an open or import on the way (the tutor's files)
    module: str = ""  # a package Python could not find
    confined: str = (
        ""  # the kernel refused it: "write" (outside scratch), "read", "network", "processes"
    )

    @classmethod
    def from_dict(cls, d: dict) -> LearnerFailure:
        """From describe_exception's dict (the child's side, and the wire)."""
        if not isinstance(d, dict):
            raise Malformed("failure")
        frames = d.get("frames", [])
        if not isinstance(frames, list):
            raise Malformed("frames")
        try:
            frames = [
                Frame(_line(f["line"]), _str(f["function"], "function"), _str(f["code"], "code"))
                for f in frames[:MAX_FRAMES]
            ]
        except (KeyError, TypeError) as exc:
            raise Malformed("frame") from exc
        if "kind" not in d or "detail" not in d:
            raise Malformed("failure")
        failure = Failure(
            _str(d["kind"], "kind"),
            _str(d["detail"], "detail"),
            frames,
            _str(d.get("caret", ""), "caret"),
        )
        confined = d.get("confined") or ""
        if confined not in CONFINED:
            raise Malformed("confined")
        return cls(failure, bool(d.get("refused")), _str(d.get("module") or "", "module"), confined)

    def to_dict(self) -> dict:
        f = self.failure
        d = {
            "kind": f.kind,
            "detail": f.detail,
            "frames": [
                {"line": fr.line, "function": fr.function, "code": fr.code} for fr in f.frames
            ],
            "caret": f.caret,
        }
        if self.refused:
            d["refused"] = True
        if self.module:
            d["module"] = self.module
        if self.confined:
            d["confined"] = self.confined
        return d


@dataclass(frozen=True)
class ImportFailed:
    """The file did not compile or its import raised: the same for every step."""

    error: LearnerFailure

    def to_json(self) -> dict:
        return {"import_error": self.error.to_dict()}


@dataclass(frozen=True)
class Missing:
    """The file does not define a name the step needs."""

    name: str

    def to_json(self) -> dict:
        return {"missing": self.name}


@dataclass(frozen=True)
class Foreign:
    """A name the step calls is not the file's own code (imported, or compiled elsewhere)."""

    name: str
    origin: str

    def to_json(self) -> dict:
        return {"foreign": {"name": self.name, "origin": self.origin}}


@dataclass(frozen=True)
class Raised:
    """The learner's code raised while the step ran; todo: it was the starter's TODO."""

    error: LearnerFailure
    todo: bool = False

    def to_json(self) -> dict:
        return {"failure": self.error.to_dict(), "todo": self.todo}


@dataclass(frozen=True)
class HarnessError:
    """The harness itself failed: the tutor's fault."""

    detail: str

    def to_json(self) -> dict:
        return {"harness_error": self.detail}


@dataclass(frozen=True)
class Outputs:
    """The probe ran: its outputs (codec.encode's tree; tensors in the blob) and the library
    kernels the child saw being called."""

    tree: Any
    kernels: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"outputs": self.tree, "kernels": self.kernels}


Report = ImportFailed | Missing | Foreign | Raised | HarnessError | Outputs


def report_from_json(d) -> Report:
    """The child's report. Raises Malformed for anything else. Keys are tried in the order the
    judge always read them, so a report that somehow has two means what it meant before."""
    if not isinstance(d, dict):
        raise Malformed("report")
    if "import_error" in d:
        return ImportFailed(LearnerFailure.from_dict(d["import_error"]))
    if "missing" in d:
        return Missing(_str(d["missing"], "missing"))
    if "foreign" in d:
        foreign = d["foreign"]
        if not isinstance(foreign, dict):
            raise Malformed("foreign")
        # str(): as the judge always showed them, whatever a forged frame put there
        return Foreign(
            str(foreign.get("name", ""))[:MAX_TEXT], str(foreign.get("origin", "?"))[:MAX_TEXT]
        )
    if "failure" in d:
        return Raised(LearnerFailure.from_dict(d["failure"]), bool(d.get("todo")))
    if "harness_error" in d:
        return HarnessError(_str(d["harness_error"], "harness_error"))
    if "outputs" in d:
        kernels = d.get("kernels", [])
        if not isinstance(kernels, list) or not all(isinstance(k, str) for k in kernels):
            raise Malformed("kernels")
        kernels = [k[:200] for k in kernels[:64]]
        return Outputs(d["outputs"], kernels)
    raise Malformed("report")


# ------------------------------------------------------------------ failures as results

_SYNTAX = ("SyntaxError", "IndentationError", "TabError")


def failed_step(
    step: str, status: str, failure: Failure | None, key: str, params: dict, check: str = "runs"
) -> StepResult:
    """A step that ended in a failure: one check saying why. Every failure result, the
    worker's (timeout, crash, memory, judge died) and the judge's, is made here."""
    return StepResult(step, status, [Check(check, status, Message(key, params))], failure)


# LearnerFailure.confined -> its message
CONFINED = {
    "": "",
    "write": "failure.confined_write",
    "read": "failure.confined_read",
    "network": "failure.network_off",
    "processes": "failure.too_many_processes",
    "metadata": "failure.confined_metadata",
    "file_size": "failure.file_too_large",
    "syscall": "failure.call_refused",
}


def _mask_size_mismatch(kind: str, detail: str, code: str) -> bool:
    """PyTorch's size mismatch raised on a line that uses a mask: the mask is not the input's T × T
    (a buffer used whole, or one built for another length)."""
    return kind == "RuntimeError" and "must match the size of tensor" in detail and "mask" in code


def learner_failure_message(error: LearnerFailure, fn: str | None) -> tuple[str, dict]:
    """The catalog key and params for an exception in the learner's code. fn: the step's
    functions, when it raised while the step ran; None when the file itself did not load
    (then the message is about the file, the same for every step)."""
    failure = error.failure
    line = failure.frames[-1].line if failure.frames else "?"
    code = failure.frames[-1].code.strip() if failure.frames else ""
    params = {"kind": failure.kind, "detail": failure.detail, "line": line, "code": code}
    if fn is not None:
        params = {"fn": fn, **params}
    if failure.kind == "MemoryError":
        key = "failure.memory"
    elif failure.kind == "RecursionError" and fn is not None:
        key = "failure.recursion"
    elif failure.kind == "SystemExit":
        key = "failure.system_exit"
    elif failure.kind in _SYNTAX:
        key = "failure.syntax"
    elif error.refused:
        key = "failure.refused"
    elif error.confined:
        key = CONFINED[error.confined]
        if error.confined == "processes":
            from tutor.engine.confine.pids_cgroup import LIMIT

            params["limit"] = LIMIT
            if not failure.frames:  # the harness could not start the step: the code holds them all
                key = "failure.too_many_processes_held"
        elif error.confined == "file_size":
            from tutor.engine.confine.disk_quota import file_bytes

            params["limit"] = file_bytes() >> 20
    elif error.module:
        key = "failure.missing_package"
        params["module"] = error.module
    elif fn is not None and _mask_size_mismatch(failure.kind, failure.detail, code):
        key = "failure.mask_size"
    elif (
        fn is not None and "Numpy is not available" in failure.detail
    ):  # torch without NumPy: .numpy()
        key = "failure.no_numpy"
    else:
        key = "failure.exception" if fn is not None else "failure.file_exception"
    if error.module and fn is not None:
        params["module"] = error.module  # a step's message always had it, whatever its key
    return key, params


# ------------------------------------------------------------------ worker ⇄ judge


@dataclass(frozen=True)
class JudgeRequest:
    """Judge this step; the child's payload follows the frame, unparsed (see worker.send_frame)."""

    job: int
    lesson: str
    step: str
    source: str
    views: bool = True

    def to_json(self) -> dict:
        return {
            "job": self.job,
            "lesson": self.lesson,
            "step": self.step,
            "source": self.source,
            "views": self.views,
        }

    @classmethod
    def from_json(cls, d: dict) -> JudgeRequest:
        return cls(d["job"], d["lesson"], d["step"], d["source"], d.get("views", True))


@dataclass(frozen=True)
class JudgeReply:
    job: int
    result: StepResult

    def to_json(self) -> dict:
        return {"job": self.job, "result": self.result.to_dict()}

    @classmethod
    def from_json(cls, d: dict) -> JudgeReply:
        return cls(d["job"], StepResult.from_dict(d["result"]))


# ------------------------------------------------------------------ worker → UI events
# One JSON line each, {"type": ..., fields}. The client delivers these objects to its callback;
# Gone is the client's own (the worker process ended), never on the wire.


@dataclass(frozen=True)
class Ready:
    """Torch is imported and the checks loaded: runs are answered from now on. off: the
    protections the worker could not set up here (platform_probe names), said once by the UI."""

    pid: int = 0
    off: list = field(default_factory=list)
    type: ClassVar[str] = "ready"


@dataclass(frozen=True)
class StepVerdict:
    """One step's result for the run numbered gen."""

    gen: int
    result: StepResult
    type: ClassVar[str] = "step"

    def to_json(self) -> dict:  # not asdict: it would deep-copy the visuals
        return {"type": self.type, "gen": self.gen, "result": self.result.to_dict()}


@dataclass(frozen=True)
class Done:
    """Every step of run gen has been reported."""

    gen: int
    type: ClassVar[str] = "done"


@dataclass(frozen=True)
class RunError:
    """The run could not start (an unknown lesson); its Done follows."""

    gen: int
    detail: str
    type: ClassVar[str] = "error"


@dataclass(frozen=True)
class Pong:
    type: ClassVar[str] = "pong"


@dataclass(frozen=True)
class Stats:
    """For tests: what a leak would grow."""

    fds: int
    spares: int
    jobs: int
    children: list
    type: ClassVar[str] = "stats"


@dataclass(frozen=True)
class Gone:
    """The worker process ended (client side only)."""

    code: int | None = None
    type: ClassVar[str] = "gone"


Event = Ready | StepVerdict | Done | RunError | Pong | Stats | Gone
_EVENTS = {cls.type: cls for cls in (Ready, Done, RunError, Pong, Stats)}


def event_to_json(event: Event) -> dict:
    if isinstance(event, StepVerdict):
        return event.to_json()
    return {"type": event.type, **{f.name: getattr(event, f.name) for f in fields(event)}}


def event_from_json(d) -> Event:
    """The worker's event line, parsed. Raises Malformed for anything else."""
    if not isinstance(d, dict):
        raise Malformed("event")
    kind = d.get("type")
    try:
        if kind == "step":
            gen = d["gen"]
            if not isinstance(gen, int):
                raise Malformed("gen")
            return StepVerdict(gen, StepResult.from_dict(d["result"]))
        cls = _EVENTS[kind]
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})
    except (KeyError, TypeError, AttributeError) as exc:
        raise Malformed(f"event {kind!r}") from exc
