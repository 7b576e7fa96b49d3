"""The engine's messages, each a frozen dataclass with a `type` tag, read and written by
wire.py (strict: an unknown type or a missing or mistyped field is `Malformed`). Standard
library only, no torch: the UI process imports its requests and the worker's events from here.

- The UI's requests to the worker (client → worker), one JSON line each: see `Request`.
- The worker's events for the UI (worker → client), one JSON line each: see `Event`. The
  first, Ready, carries wire.PROTOCOL_VERSION: the client refuses a worker that speaks another.
- A child's report on one step (child → judge): one of the `Report` kinds. It travels as the
  JSON head of codec.pack_payload, with the tensors in the blob.
- The worker's frames to the judge and back: JudgeRequest, JudgeReply (framing.send_frame).
- failed_step: the one place a failure becomes a step's result (worker and judge).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from tutor.engine.wire import Malformed, Tagged, decode, encode
from tutor.model.results import Check, Failure, Frame, Message, StepResult

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


# ------------------------------------------------------------------ UI → worker requests


@dataclass(frozen=True)
class Run(Tagged):
    """Run these steps of a lesson on a source (all its steps when steps is None). keep: a
    kept run (`grade`), superseding nothing; views=False: nobody will look at its views;
    folder: whose other files the learner's file may import."""

    gen: int
    lesson: str
    filename: str
    source: str
    steps: list[str] | None = None
    timeout: float = 3.0
    params: dict[str, dict] = field(default_factory=dict)
    keep: bool = False
    views: bool = True
    folder: str | None = None  # the learner's own folder (grade: a student's), see own_folder
    type: ClassVar[str] = "run"


@dataclass(frozen=True)
class Go(Tagged):
    """The app has painted: the worker may import torch now (see supervisor.main)."""

    type: ClassVar[str] = "go"


@dataclass(frozen=True)
class Ping(Tagged):
    type: ClassVar[str] = "ping"


@dataclass(frozen=True)
class StatsRequest(Tagged):
    """For tests: answered by Stats."""

    type: ClassVar[str] = "stats"


@dataclass(frozen=True)
class Quit(Tagged):
    type: ClassVar[str] = "quit"


Request = Run | Go | Ping | StatsRequest | Quit
REQUESTS: dict[str, type[Request]] = {c.type: c for c in (Run, Go, Ping, StatsRequest, Quit)}


def request_from_json(d: object) -> Request:
    """A request line, parsed. Raises Malformed for anything else."""
    return decode(d, REQUESTS)


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
        d: dict[str, Any] = {
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
class ImportFailed(Tagged):
    """The file did not compile or its import raised: the same for every step."""

    error: LearnerFailure
    type: ClassVar[str] = "import_failed"
    clip_text: ClassVar[int | None] = MAX_TEXT


@dataclass(frozen=True)
class Missing(Tagged):
    """The file does not define a name the step needs."""

    name: str
    type: ClassVar[str] = "missing"
    clip_text: ClassVar[int | None] = MAX_TEXT


@dataclass(frozen=True)
class Foreign(Tagged):
    """A name the step calls is not the file's own code (imported, or compiled elsewhere)."""

    name: str
    origin: str
    type: ClassVar[str] = "foreign"
    clip_text: ClassVar[int | None] = MAX_TEXT


@dataclass(frozen=True)
class KernelCalled(Tagged):
    """The learner's code ran a library kernel in a step whose own_formula forbids it."""

    kernels: list[str]
    type: ClassVar[str] = "kernel_called"
    clip_text: ClassVar[int | None] = 200

    def clipped(self) -> KernelCalled:
        return replace(self, kernels=self.kernels[:64])


@dataclass(frozen=True)
class Raised(Tagged):
    """The learner's code raised while the step ran; todo: it was the starter's TODO."""

    error: LearnerFailure
    todo: bool = False
    type: ClassVar[str] = "raised"
    clip_text: ClassVar[int | None] = MAX_TEXT


@dataclass(frozen=True)
class HarnessError(Tagged):
    """The harness itself failed: the tutor's fault."""

    detail: str
    type: ClassVar[str] = "harness_error"
    clip_text: ClassVar[int | None] = MAX_TEXT


@dataclass(frozen=True)
class Outputs(Tagged):
    """The probe ran: its outputs (codec.encode's tree; tensors in the blob), the library
    kernels the child saw being called, and the file's names the probe read (None: unknown)."""

    tree: Any
    kernels: list[str] = field(default_factory=list)
    reads: list[str] | None = None
    type: ClassVar[str] = "outputs"
    clip_text: ClassVar[int | None] = 200  # a kernel's or a name's; the tree is codec's to read

    def clipped(self) -> Outputs:
        # A name cut to clip_text is not the name: unknown, as too many are.
        known = self.reads is not None and len(self.reads) <= 64
        reads = self.reads if known and all(len(n) < 200 for n in self.reads or ()) else None
        return replace(self, kernels=self.kernels[:64], reads=reads)


Report = ImportFailed | Missing | Foreign | KernelCalled | Raised | HarnessError | Outputs
REPORTS: dict[str, type[Report]] = {
    c.type: c for c in (ImportFailed, Missing, Foreign, KernelCalled, Raised, HarnessError, Outputs)
}


def report_from_json(d: object) -> Report:
    """The child's report. Raises Malformed for anything else."""
    return decode(d, REPORTS)


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
class JudgeRequest(Tagged):
    """Judge this step; the child's payload follows the frame, unparsed (see framing.send_frame)."""

    job: int
    lesson: str
    step: str
    source: str
    views: bool = True
    wait: bool = True  # for the diagnosis from behaviour: False from the app (Judge.verdict)
    type: ClassVar[str] = "judge"


@dataclass(frozen=True)
class JudgeReply(Tagged):
    job: int
    result: StepResult
    reads: list[str] | None = None  # result.reads: StepResult.to_dict leaves them out
    type: ClassVar[str] = "verdict"

    @staticmethod
    def of(job: int, result: StepResult) -> JudgeReply:
        return JudgeReply(job, result, None if result.reads is None else list(result.reads))

    def clipped(self) -> JudgeReply:
        return _with_reads(self, self.result, self.reads)


# ------------------------------------------------------------------ worker → UI events
# Gone is the client's own (the worker process ended), never on the wire.


@dataclass(frozen=True)
class Ready(Tagged):
    """Torch is imported and the checks loaded: runs are answered from now on. off: the
    protections the worker could not set up here (platform_probe names), said once by the UI.
    protocol: the worker's wire.PROTOCOL_VERSION (0: a worker from before there was one)."""

    pid: int = 0
    off: list[str] = field(default_factory=list)
    protocol: int = 0
    type: ClassVar[str] = "ready"


@dataclass(frozen=True)
class StepVerdict(Tagged):
    """One step's result for the run numbered gen."""

    gen: int
    result: StepResult
    reads: list[str] | None = None  # result.reads, as in JudgeReply
    type: ClassVar[str] = "step"

    @staticmethod
    def of(gen: int, result: StepResult) -> StepVerdict:
        return StepVerdict(gen, result, None if result.reads is None else list(result.reads))

    def clipped(self) -> StepVerdict:
        return _with_reads(self, self.result, self.reads)


def _with_reads(message: Any, result: StepResult, reads: list[str] | None) -> Any:
    """The message with reads back on its result (a pass's only; at most 64 names)."""
    if reads is not None and len(reads) <= 64 and result.status == "pass":
        result.reads = tuple(reads)
    return message


@dataclass(frozen=True)
class Done(Tagged):
    """Every step of run gen has been reported."""

    gen: int
    type: ClassVar[str] = "done"


@dataclass(frozen=True)
class RunError(Tagged):
    """The run could not start (an unknown lesson); its Done follows."""

    gen: int
    detail: str
    type: ClassVar[str] = "error"


@dataclass(frozen=True)
class Pong(Tagged):
    type: ClassVar[str] = "pong"


@dataclass(frozen=True)
class Stats(Tagged):
    """For tests: what a leak would grow."""

    fds: int
    spares: int
    jobs: int
    children: list[int]
    type: ClassVar[str] = "stats"


@dataclass(frozen=True)
class Gone(Tagged):
    """The worker process ended (client side only); detail: why, when the client knows."""

    code: int | None = None
    detail: str = ""
    type: ClassVar[str] = "gone"


Event = Ready | StepVerdict | Done | RunError | Pong | Stats | Gone
EVENTS: dict[str, type[Event]] = {
    c.type: c for c in (Ready, StepVerdict, Done, RunError, Pong, Stats)
}


def event_to_json(event: Event) -> dict:
    return encode(event)


def event_from_json(d: object) -> Event:
    """The worker's event line, parsed. Raises Malformed for anything else."""
    return decode(d, EVENTS)
