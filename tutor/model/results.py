"""What a run of the checks produces: plain data, JSON-able, no torch.

Messages are catalog keys with parameters (see i18n), so a result can be shown
in either language without running anything again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATUSES = ("pass", "fail", "error", "timeout", "todo")

# A JSON object: what crosses the process boundary and what the state file holds.
JSONDict = dict[str, Any]


@dataclass
class Message:
    key: str
    params: JSONDict = field(default_factory=dict)


@dataclass
class Record:
    """A failing check as data, for each output to say in its own way (tutor/text/record_text).

    Made from the check's message by tutor.model.records.record_of: the parameters the kit
    names `expected`, `got`, `where`, `line`, `likely`, `fix`, `kind`/`detail` are these fields.
    """

    check: str
    what: Message  # the finding, without its diagnosis or raw error: "row 0 sums to 0.15"
    diagnosis: list[Message] = field(default_factory=list)  # one; two only when two were found
    fix: Message | None = None  # when the diagnosis does not say it already
    context: list[Message] = field(default_factory=list)  # outermost first: "at T = 37"
    expected: Any = None
    got: Any = None
    where: JSONDict = field(default_factory=dict)  # index, line, code, position, sizes
    raw_error: JSONDict | None = None  # {"kind", "detail"}: Python's own words, untranslated

    def to_dict(self) -> JSONDict:
        def m(x: Message | None) -> JSONDict | None:
            return None if x is None else {"key": x.key, "params": x.params}

        return {
            "check": self.check,
            "what": m(self.what),
            "diagnosis": [m(d) for d in self.diagnosis],
            "fix": m(self.fix),
            "context": [m(c) for c in self.context],
            "expected": self.expected,
            "got": self.got,
            "where": self.where,
            "raw_error": self.raw_error,
        }


@dataclass
class Check:
    id: str
    status: str  # "pass" | "fail"
    message: Message | None = None  # what old readers and the dev check's key lists read


@dataclass
class Frame:
    line: int
    function: str
    code: str  # the learner's source line


@dataclass
class Failure:
    """An exception, crash or limit hit while the learner's code ran."""

    kind: str  # exception type name, or "timeout", "crash", "memory", "exit"
    detail: str  # the exception's own text (untranslated: it is Python's)
    frames: list[Frame] = field(default_factory=list)  # only frames in the learner's file
    caret: str = ""  # for syntax errors: the line and a caret under the column


@dataclass
class StepResult:
    id: str
    status: str
    checks: list[Check] = field(default_factory=list)
    failure: Failure | None = None
    output: str = ""  # tail of what the learner's code printed
    output_dropped: int = 0  # bytes printed before that tail, not kept
    visuals: JSONDict = field(default_factory=dict)  # e.g. {"heatmaps": [...]}, see checks
    ms: float = 0.0
    # The file's top-level names the probe read (None: unknown): the app's, to run the step
    # again only when their code changed. Not in to_dict's public keys (`check --json`).
    reads: tuple[str, ...] | None = None

    def to_dict(self) -> JSONDict:
        # Not dataclasses.asdict: it deep-copies the visuals (matrices of floats), ~0.6 ms a
        # step in the judge. Nothing changes a result once it is made, so sharing them is safe.
        failure = self.failure
        return {
            "id": self.id,
            "status": self.status,
            "checks": [
                {
                    "id": c.id,
                    "status": c.status,
                    "message": {"key": c.message.key, "params": c.message.params}
                    if c.message
                    else None,
                }
                for c in self.checks
            ],
            "failure": None
            if failure is None
            else {
                "kind": failure.kind,
                "detail": failure.detail,
                "caret": failure.caret,
                "frames": [
                    {"line": f.line, "function": f.function, "code": f.code} for f in failure.frames
                ],
            },
            "output": self.output,
            "output_dropped": self.output_dropped,
            "visuals": self.visuals,
            "ms": self.ms,
        }

    @classmethod
    def from_dict(cls, d: JSONDict) -> StepResult:
        checks = [
            Check(c["id"], c["status"], Message(**c["message"]) if c.get("message") else None)
            for c in d.get("checks", [])
        ]
        failure = None
        if d.get("failure"):
            f = dict(d["failure"])
            f["frames"] = [Frame(**fr) for fr in f.get("frames", [])]
            failure = Failure(**f)
        return cls(
            id=d["id"],
            status=d["status"],
            checks=checks,
            failure=failure,
            output=d.get("output", ""),
            output_dropped=d.get("output_dropped", 0),
            visuals=d.get("visuals", {}),
            ms=d.get("ms", 0.0),
        )
