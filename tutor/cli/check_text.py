"""The human output of `attn-tutor check`: a line per step, then what failed and why."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.model.results import Check, StepResult
from tutor.text.i18n import t
from tutor.text.record_text import check_record_text
from tutor.text.safe_text import one_line, visible
from tutor.text.verdict_text import (
    MARKS,
    check_text,
    failure_lines,
    file_check,
    file_error,
    output_dropped_note,
    summary_counts,
)

if TYPE_CHECKING:
    from tutor.model.lesson import Lesson

_COLOURS = {"pass": "32", "fail": "31", "error": "31", "timeout": "33", "todo": "2"}


def _paint(text: str, status: str) -> str:
    if os.environ.get("NO_COLOR") or not sys.stdout.isatty():
        return text
    return f"\x1b[{_COLOURS.get(status, '0')}m{text}\x1b[0m"


def _code(text: str) -> str:
    """Markdown's `code` as a terminal shows it: coloured on a colour terminal, else bare."""
    colour = not os.environ.get("NO_COLOR") and sys.stdout.isatty()
    return re.sub(r"`([^`\n]+)`", (lambda m: f"\x1b[36m{m[1]}\x1b[0m") if colour else r"\1", text)


def _said(check: Check, lang: str) -> str:
    return _code(check_text(check, lang, cli=True))


def print_report(lesson: Lesson, path: Path, steps: list[StepResult], lang: str) -> None:
    print(f"{lesson.id} · {lesson.title[lang]}")
    print(one_line(path))
    print()
    broken = file_error(steps)
    if broken is not None:
        # The file did not load: its error once, then each step as not run because of it.
        print(f"{_paint(MARKS['error'], 'error')} {_said(file_check(broken), lang)}")
        _print_details(broken, lang, indent="  ")
        print()
    for step in steps:
        title = lesson.step(step.id).title[lang]
        mark = _paint(MARKS.get(step.status, "?"), step.status)
        if broken is not None:
            print(f"{mark} {step.id:<12} {title} — {t('report.not_run', lang)}")
            continue
        print(f"{mark} {step.id:<12} {title} — {t('status.' + step.status, lang)}")
        if step.status == "pass":
            continue
        for check in step.checks:
            if check.status != "pass":
                # The check's id, then its record a part a line: the diagnosis first.
                first, *rest = check_record_text(check, lang, cli=True).lines() or [""]
                print(f"    [{check.id}] {_code(first)}")
                for part in rest:
                    print(f"      {_code(part)}")
        _print_details(step, lang, indent="    ")
    passed, total = summary_counts(steps)
    print()
    print(t("report.summary", lang, passed=passed, total=total))


def _print_details(step: StepResult, lang: str, indent: str) -> None:
    """The learner's lines from the traceback, and what the code printed before it failed."""
    for line in failure_lines(step.failure, lang):
        print(f"{indent}  {line}")
    if (step.output.strip() or step.output_dropped) and step.status in ("error", "timeout"):
        print(f"{indent}{t('report.output', lang)}")
        note = output_dropped_note(step, lang)
        if note:
            print(f"{indent}  {note}")
        for line in visible(step.output.strip()).splitlines()[-5:]:
            print(f"{indent}  {line}")
