"""Step results as text in the reader's language: shared by the CLI and the app. Pure."""

from __future__ import annotations

from .i18n import t
from .results import Check, Failure, StepResult

MARKS = {"pass": "✓", "fail": "✗", "error": "✗", "timeout": "⧗", "todo": "○", "running": "…"}


def check_text(check: Check, lang: str) -> str:
    if check.message is None:
        return t(f"checkname.{check.id}", lang)
    return t(check.message.key, lang, **check.message.params)


def failure_lines(failure: Failure | None, lang: str) -> list[str]:
    """The learner's own lines from a traceback, innermost last; or the caret of a syntax error."""
    if failure is None:
        return []
    if failure.caret:
        return failure.caret.splitlines()
    lines = []
    for frame in failure.frames:
        lines.append(t("report.frame", lang, line=frame.line, function=frame.function))
        lines.append(f"    {frame.code.strip()}")
    return lines


def output_dropped_note(step: StepResult, lang: str) -> str | None:
    """Said above a step's output when only its tail was kept: how much came before it."""
    if not step.output_dropped:
        return None
    return t("report.output_dropped", lang, bytes=f"{step.output_dropped:,}")


def step_to_json(step: StepResult, lang: str) -> dict:
    return {
        "id": step.id,
        "status": step.status,
        "checks": [
            {"id": c.id, "status": c.status, "message": check_text(c, lang)} for c in step.checks
        ],
    }


def summary_counts(steps: list[StepResult]) -> tuple[int, int]:
    return sum(s.status == "pass" for s in steps), len(steps)
