"""Step results as text in the reader's language: shared by the CLI and the app. Pure."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tutor.model.results import Check, Failure, JSONDict, StepResult
from tutor.text.i18n import t
from tutor.text.record_text import cell_split, check_record_text, record_json
from tutor.text.safe_text import visible

if TYPE_CHECKING:
    from tutor.model.lesson import Lesson

MARKS = {"pass": "✓", "fail": "✗", "error": "✗", "timeout": "⧗", "todo": "○", "running": "…"}


def check_text(check: Check, lang: str, cli: bool = False) -> str:
    """What a check says, as one paragraph: its record's diagnosis, finding and raw error, in
    that order (record_text). cli: outside the app, where a key's `_cli` twin, if it has one,
    replaces what only the app can do ("save: the checks run again", "press r")."""
    return check_record_text(check, lang, cli).text()


def failure_lines(failure: Failure | None, lang: str) -> list[str]:
    """The learner's own lines from a traceback, innermost last; or the caret of a syntax error."""
    if failure is None:
        return []
    if failure.caret:
        return visible(failure.caret).splitlines()
    lines: list[str] = []
    for frame in failure.frames:
        lines.append(t("report.frame", lang, line=frame.line, function=visible(frame.function)))
        lines.append(f"    {visible(frame.code.strip())}")
    return lines


def output_dropped_note(step: StepResult, lang: str) -> str | None:
    """Said above a step's output when only its tail was kept: how much came before it."""
    if not step.output_dropped:
        return None
    return t("report.output_dropped", lang, bytes=f"{step.output_dropped:,}")


def step_to_json(step: StepResult, lang: str) -> JSONDict:
    return {
        "id": step.id,
        "status": step.status,
        "checks": [
            {
                "id": c.id,
                "status": c.status,
                "message": check_text(c, lang, cli=True),
                **(record_json(c, lang) if c.status != "pass" else {}),
            }
            for c in step.checks
        ],
    }


def file_error(steps: list[StepResult]) -> StepResult | None:
    """The step that says why the file itself did not load, when every step says the same
    (a syntax error, an import that fails, an exception at the top level): that is the
    file's error, to be said once. None when any step ran."""
    first: StepResult | None = None
    said: tuple[str, JSONDict] | None = None
    for step in steps:
        failing = [c for c in step.checks if c.status != "pass"]
        if len(failing) != 1 or failing[0].id != "file-loads" or failing[0].message is None:
            return None
        this = (failing[0].message.key, failing[0].message.params)
        if first is None:
            first, said = step, this
        elif this != said:
            return None
    return first


def file_check(step: StepResult) -> Check:
    return next(c for c in step.checks if c.id == "file-loads")


def file_error_to_json(steps: list[StepResult], lang: str) -> JSONDict | None:
    step = file_error(steps)
    if step is None:
        return None
    check = file_check(step)
    # file_error chose the step because its file-loads check has a message
    assert check.message is not None
    where = cell_split(check.message.params)
    line = where.get("line")
    caret = step.failure.caret if step.failure is not None else ""
    return {
        "message": check_text(check, lang, cli=True),
        "line": line if isinstance(line, int) else None,
        **({"cell": where["cell"]} if "cell" in where else {}),  # a notebook's
        # A syntax error's line with a caret under the spot: outputs that have no traceback
        # (grade's report, Gradescope, JUnit) show the line from here.
        "caret": visible(caret) if caret else None,
    }


def summary_counts(steps: list[StepResult]) -> tuple[int, int]:
    return sum(s.status == "pass" for s in steps), len(steps)


# The shape of `check --json` and of grade's records: raised when a field changes meaning or goes.
SCHEMA_VERSION = 1


def check_object(
    lesson: Lesson, path: Path | None, steps: list[StepResult], lang: str, off: list[str]
) -> JSONDict:
    """`attn-tutor check --json`'s object (grade writes the same, then what a grade adds).
    off: the protections the runs went without (platform_probe)."""
    passed, total = summary_counts(steps)
    return {
        "schema_version": SCHEMA_VERSION,
        "lesson": lesson.id,
        "file": None if path is None else str(path),
        "steps": [step_to_json(s, lang) for s in steps],
        "passed": passed,
        "total": total if steps else len(lesson.checked_steps),
        "file_error": file_error_to_json(steps, lang) if steps else None,
        "protections_off": off,
    }
