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
class Check:
    id: str
    status: str  # "pass" | "fail"
    message: Message | None = None


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
