"""The class report as data, from the students' records alone (so that `--merge` gives what one
run gives): per step its pass rate; per likely mistake, at its step, who made it; the students
to look at (never started, steps left to do, an empty file, several files); the files that
timed out or crashed. Renderers: report.py (terminal, Markdown), report_html.py. Pure.

A mistake's row is right for each student in it: rows are keyed by the step, the mistake's id
and the parameters that name something (which helper, which argument), and a parameter that
differs among the row's students is shown as "…" in its message. A symptom's row (a leak, "no
known mistake") leaves out the students whose mistake at a step on the same function says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tutor.grade.record import STATUSES, step_status
from tutor.grade.similar import Similarity, similarity
from tutor.text.i18n import local_key

# Not judged: no file, or the run was stopped before it (its counts leave them out).
UNJUDGED = ("no file", "not graded")
# Diagnoses that name a symptom, not its cause: a more specific one on the same function
# explains them (lm3-l3's and kv-cache's leak; the judge's "no known mistake").
SYMPTOMS = frozenset({"likely.leak", "likely.leak_region", "likely.unknown"})
# Mistakes shown as rows of their own (look_at), not among the likely mistakes.
OWN_ROWS = frozenset({"check.kernel"})
# Parameters never grouped on: where in the student's file, and measured values.
LOCAL_PARAMS = frozenset({"code", "line", "detail", "got", "where", "err"})
VARIES = "…"


@dataclass
class StepRow:
    id: str
    passed: int
    of: int  # students with a file

    @property
    def rate(self) -> float:
        return self.passed / self.of if self.of else 0.0


@dataclass
class Mistake:
    id: str  # the likely message's catalog key
    step: str
    students: list[str]
    example: dict  # {key, params}: params that differ among the students are VARIES


@dataclass
class LookAt:
    """Students to look at for one reason (a catalog key under grade.look.)."""

    kind: str  # not_started | todo | empty | several | kernel
    students: list[str]
    step: str | None = None  # todo, kernel: the step
    # several: per student, the file graded and how it was chosen (grade.pick's picked_by)
    notes: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class ClassReport:
    students: int
    by_status: dict[str, int]
    mean: float
    max_score: float
    steps: list[StepRow]
    mistakes: list[Mistake]
    problems: list[tuple[str, str, str]]  # (student, status, what happened) for timeouts and errors
    missing: list[str] = field(default_factory=list)  # students with no file
    look_at: list[LookAt] = field(default_factory=list)
    not_graded: list[str] = field(default_factory=list)  # the run was stopped before them
    grid: dict[str, dict[str, str]] = field(default_factory=dict)  # student -> step -> status
    similar: Similarity | None = None  # from the files themselves: with_similarity()


def _key_params(params: dict) -> tuple:
    """The parameters that say which mistake it is: names (a helper, an argument), not
    places in the file or measured values."""
    return tuple(
        sorted(
            (k, v)
            for k, v in params.items()
            if k not in LOCAL_PARAMS and isinstance(v, str) and v.isidentifier()
        )
    )


def _merged(messages: list[dict]) -> dict:
    """One message for a row: each parameter as the students share it, else VARIES."""
    first = messages[0]
    params = {}
    for k, v in first["params"].items():
        same = all(m["params"].get(k) == v for m in messages[1:])
        params[k] = v if same else VARIES
    return {"key": first["key"], "params": params}


def _explained(lesson, record: dict) -> set[str]:
    """The functions of the steps where this student has a specific (not symptom) mistake."""
    out: set[str] = set()
    for m in record["mistakes"]:
        if local_key(m["id"]) not in SYMPTOMS:
            out |= set(_functions(lesson, m["step"]))
    return out


def _functions(lesson, step_id: str) -> tuple[str, ...]:
    try:
        return lesson.step(step_id).functions or (step_id,)
    except KeyError:
        return (step_id,)


def mistakes(lesson, records: list[dict]) -> list[Mistake]:
    rows: dict[tuple, tuple[Mistake, list[dict]]] = {}
    for r in records:
        explained = _explained(lesson, r)
        for m in r["mistakes"]:
            if local_key(m["id"]) in OWN_ROWS:
                continue  # a row of its own among the students to look at
            symptom = local_key(m["id"]) in SYMPTOMS
            if symptom and explained & set(_functions(lesson, m["step"])):
                continue
            key = (m["step"], m["id"], _key_params(m["message"]["params"]))
            row, said = rows.setdefault(key, (Mistake(m["id"], m["step"], [], {}), []))
            if r["student"] not in row.students:
                row.students.append(r["student"])
                said.append(m["message"])
    for row, said in rows.values():
        row.example = _merged(said)
    order = {s.id: i for i, s in enumerate(lesson.checked_steps)}
    return sorted(
        (row for row, _ in rows.values()),
        key=lambda m: (order.get(m.step, 99), -len(m.students), m.id, str(m.example)),
    )


def look_at(lesson, records: list[dict]) -> list[LookAt]:
    graded = [r for r in records if r["status"] not in UNJUDGED]
    not_started = [r["student"] for r in graded if r.get("not_started")]
    rows = [LookAt("not_started", not_started)]
    rows.append(LookAt("empty", [r["student"] for r in graded if r.get("empty")]))
    for step in lesson.checked_steps:
        todo = [
            r["student"]
            for r in graded
            if not r.get("not_started") and step_status(r, step.id) == "todo"
        ]
        rows.append(LookAt("todo", todo, step.id))
    for step in lesson.checked_steps:
        kernel = [
            r["student"]
            for r in graded
            if any(
                m["step"] == step.id and local_key(m["id"]) == "check.kernel" for m in r["mistakes"]
            )
        ]
        rows.append(LookAt("kernel", kernel, step.id))
    several = [r for r in graded if r.get("several_files")]
    rows.append(
        LookAt(
            "several",
            [r["student"] for r in several],
            notes={r["student"]: (_graded_file(r), r.get("picked_by") or "") for r in several},
        )
    )
    return [row for row in rows if row.students]


def _graded_file(record: dict) -> str:
    """The file graded, as the student's folder names it (several_files are relative)."""
    path = str(record.get("file") or "")
    for name in record.get("several_files") or []:
        if path == name or path.endswith("/" + name):
            return name
    return path.rsplit("/", 1)[-1]


def class_report(lesson, records: list[dict]) -> ClassReport:
    records = sorted(records, key=lambda r: r["student"])
    with_file = [r for r in records if r["status"] not in UNJUDGED]
    counted = [r for r in records if r["status"] != "not graded"]
    steps = [
        StepRow(s.id, sum(step_status(r, s.id) == "pass" for r in with_file), len(with_file))
        for s in lesson.checked_steps
    ]
    problems = [
        (r["student"], r["status"], what_happened(r))
        for r in records
        if r["status"] in ("timeout", "error")
    ]
    mean = sum(r["score"] for r in counted) / len(counted) if counted else 0.0
    return ClassReport(
        len(records),
        {s: sum(r["status"] == s for r in records) for s in STATUSES},
        mean,
        lesson.max_points,
        steps,
        mistakes(lesson, records),
        problems,
        [r["student"] for r in records if r["status"] == "no file"],
        look_at(lesson, records),
        not_graded=[r["student"] for r in records if r["status"] == "not graded"],
        grid={
            r["student"]: {s.id: step_status(r, s.id) for s in lesson.checked_steps}
            for r in records
        },
    )


def what_happened(record: dict) -> str:
    """The file's error, else each message of its timed-out or failed steps once, with the steps
    that gave it (a hang at import says the same for all of them). In the record's language."""
    if record.get("file_error"):
        from tutor.grade.message_text import caret_lines

        code = " ".join(f"`{line.strip()}`" for line in caret_lines(record)[:1])
        return " ".join(x for x in (record["file_error"]["message"], code) if x)
    said: dict[str, list[str]] = {}
    for step in record["steps"]:
        if step["status"] in ("timeout", "error"):
            for check in step["checks"]:
                if check["status"] != "pass":
                    said.setdefault(check["message"], []).append(step["id"])
    return " ".join(f"[{', '.join(steps)}] {message}" for message, steps in said.items())


def with_similarity(lesson, records: list[dict], ahead=None) -> ClassReport:
    """The class report and the similar submissions (similar.py reads the graded files, or
    takes the fingerprints an ahead.Ahead made during the run)."""
    rep = class_report(lesson, records)
    rep.similar = similarity(lesson, records, ahead)
    return rep
