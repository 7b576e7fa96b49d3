"""One student's grade as one JSON-able object: what `check --json` prints, plus what a grade
needs to be traced (the file's SHA-256, the tutor's and the lesson's versions, the seed), its
score, its status and its likely mistakes by id. Every output and the class report are made
from these records alone, so `grade --merge` gives what one run gives. Pure: no torch.
"""

from __future__ import annotations

import hashlib

from tutor import __version__
from tutor.model.records import record_of
from tutor.model.results import StepResult
from tutor.text.verdict_text import check_object, file_error

STATUSES = ("graded", "timeout", "error", "no file", "not graded")
# A step's child that died this way says the file is broken as a program, not merely wrong;
# "unjudged": the tutor could not judge it (worker.judge_died, grade.run).
DIED = {"crash", "memory", "disk", "exit", "channel", "HarnessError", "unjudged"}
# Checks that say the tutor did not judge the step: a student with one is not `graded`.
UNJUDGED_CHECKS = {"judge"}


def is_likely(key: str) -> bool:
    """A likely-mistake message: `likely.…`, or a lesson's own `<lesson>.likely.…`."""
    from tutor.text.i18n import local_key

    return local_key(key).startswith("likely.")


# Checks whose own message is the mistake: calling the library's kernel is not a wrong value.
MISTAKE_KEYS = frozenset({"check.kernel"})


def mistakes_of(steps: list[StepResult]) -> list[dict]:
    """Per step and failing check, its likely mistake: the id (the catalog key, the same in
    every language) and the message, to be shown in the report's language."""
    from tutor.text.i18n import local_key

    out = []
    for step in steps:
        for check in step.checks:
            if check.status == "pass" or check.message is None:
                continue
            key = check.message.key
            message = {"key": key, "params": check.message.params}
            record = record_of(check)
            # The record's diagnosis: the one the student was shown, not every likely mistake
            # a nested message holds (a failure's own and the one its outer check guessed).
            chosen: list[dict] = [
                {"key": d.key, "params": d.params} for d in (record.diagnosis if record else [])
            ]
            found = [x for x in chosen if is_likely(x["key"])]
            if is_likely(key) or local_key(key) in MISTAKE_KEYS:
                found = [message]
            for likely in [named for x in found for named in _named(x)]:
                out.append(
                    {"step": step.id, "check": check.id, "id": likely["key"], "message": likely}
                )
    return out


def _named(likely: dict) -> list[dict]:
    """The mistakes a diagnosis from behaviour names (engine/behaviour.py): the class report
    groups students by the mistake, not by "your outputs equal a known mistake's"."""
    from tutor.model.records import is_message
    from tutor.text.i18n import local_key

    key, params = local_key(likely["key"]), likely.get("params") or {}
    if key in ("likely.behaves_as", "likely.behaves_as_one") and is_message(params.get("mistake")):
        return [params["mistake"]]
    if key == "likely.behaves_as_two":
        return [params[k] for k in ("first", "second") if is_message(params.get(k))] or [likely]
    return [likely]


def status_of(steps: list[StepResult], expected: list[str] | None = None) -> str:
    """`graded` only when every expected step (the lesson's checked ones) was judged."""
    if any(s.status == "timeout" for s in steps):
        return "timeout"
    if file_error(steps) is not None or any(
        s.failure is not None and s.failure.kind in DIED for s in steps
    ):
        return "error"
    if any(c.id in UNJUDGED_CHECKS and c.status == "error" for s in steps for c in s.checks):
        return "error"
    if expected is not None and not set(expected) <= {s.id for s in steps}:
        return "error"
    return "graded"


def _lines(raw: bytes) -> list[bytes]:
    return [line.rstrip() for line in raw.replace(b"\r\n", b"\n").strip().split(b"\n")]


def not_started(lesson, raw: bytes | None, steps: list[StepResult]) -> bool:
    """The starter as it was handed out (spacing aside), or a file whose every step is to do."""
    if raw is None:
        return False
    if steps and all(s.status == "todo" for s in steps):
        return True
    try:
        return _lines(raw) == _lines(lesson.starter_path.read_bytes())
    except OSError:
        return False


def make_record(
    lesson,
    student: str,
    path,
    raw: bytes | None,
    steps: list[StepResult],
    lang: str,
    seed: int,
    timeout: float,
    seconds: float,
    several: tuple[str, ...] = (),
    picked_by: str = "",
) -> dict:
    """path/raw None: no file for this student. several: the files of the student's folder
    that define the lesson's names, when more than one does; picked_by: how `path` was chosen
    among them (grade.pick)."""
    from tutor.engine.confine.platform_probe import probe

    points = {s.id: s.points for s in lesson.checked_steps}
    by_id = {s.id: s for s in steps}
    score = sum(p for step, p in points.items() if step in by_id and by_id[step].status == "pass")
    return {
        # `attn-tutor check --json`'s object, as it is (the worker ran with this probe's protections)
        **check_object(lesson, path, steps, lang, probe().off()),
        # what a grade adds
        "student": student,
        "status": "no file"
        if path is None
        else status_of(steps, [s.id for s in lesson.checked_steps]),
        "score": score,
        "max_score": lesson.max_points,
        "points": points,
        "failures": [
            {"step": s.id, "kind": s.failure.kind, "detail": s.failure.detail}
            for s in steps
            if s.failure is not None
        ],
        "mistakes": mistakes_of(steps),
        "several_files": list(several),
        "picked_by": picked_by or None,
        "empty": raw is not None and not raw.strip(),
        "not_started": not_started(lesson, raw, steps),
        "sha256": None if raw is None else hashlib.sha256(raw).hexdigest(),
        "tutor_version": __version__,
        "lesson_version": lesson.version,
        "seed": seed,
        "timeout": timeout,
        "lang": lang,
        "seconds": round(seconds, 3),
        "ms": {s.id: s.ms for s in steps},
    }


def step_status(record: dict, step: str) -> str:
    """A step's status in a record; "not run" when the student has no file."""
    for s in record["steps"]:
        if s["id"] == step:
            return s["status"]
    return "not run"


def not_graded_record(lesson, student: str, path, lang: str, seed: int, timeout: float) -> dict:
    """A student the run was stopped before (Ctrl+C, SIGTERM): said as such, never as a 0."""
    record = make_record(lesson, student, path, None, [], lang, seed, timeout, 0.0)
    record.update(status="not graded", interrupted=True, file=None if path is None else str(path))
    return record
