"""`dev check`'s look at the experiment steps: the reference runs each one with its views on, as
the app runs the step on screen, and no table it draws is wider than the app's text column in an
80-column terminal, in either language (a wider one is squeezed there, its cells cut)."""

from __future__ import annotations

import io

from tutor.cli.dev_findings import Line, off_steps
from tutor.model.lesson import LANGS, Lesson
from tutor.model.results import StepResult

# The text column in an 80×24 terminal: 80 less the step column (tutor.tcss: #side, 26 wide
# with its border) and the scroll bar (2).
COLUMN = 52


def experiment_steps(lesson: Lesson) -> list[str]:
    """The experiment steps that run code: those checks.py gives a StepSpec (others are text)."""
    from tutor.cli.dev_lesson_file import declared_steps

    declared = declared_steps(lesson.checks_path.read_text(encoding="utf-8"))
    return [s.id for s in lesson.steps if s.kind == "experiment" and s.id in declared]


def too_wide(result: StepResult, lang: str) -> int:
    """The width of the widest table the step's view draws in lang, when it is over COLUMN, or 0.
    Every item is drawn, those under a question and after an answer too."""
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    from tutor.render.views import Context, draw_item

    console = Console(width=COLUMN, file=io.StringIO(), color_system=None)
    unbounded = console.options.update_width(10 * COLUMN)  # a measure clamped at COLUMN hides it
    ctx = Context(lang, revealed=lambda question: True)
    widest = 0
    stack = list(result.visuals.get("view") or [])
    while stack:
        item = stack.pop()
        if not isinstance(item, dict):
            continue
        if item.get("kind") in ("row", "with_question", "after_answer"):
            stack.extend(item.get("items") or [])
            continue
        for drawn in draw_item(item, ctx):
            if isinstance(drawn, Table):
                need = Measurement.get(console, unbounded, drawn).minimum
                widest = max(widest, need)
    return widest if widest > COLUMN else 0


def experiment_lines(steps: list[str], results: list[StepResult]) -> list[Line]:
    """One line for the experiment steps (experiment_steps) from their run: all ran and fit, or
    the first that did not."""
    if not steps:
        return []
    bad = off_steps(results, steps, "pass")
    if bad:
        return [Line(False, "dev.experiments_bad", {"n": len(steps), "steps": bad})]
    by_id = {r.id: r for r in results}
    for step in steps:
        for lang in LANGS:
            width = too_wide(by_id[step], lang)
            if width:
                params = {"step": step, "lang": lang, "width": width, "room": COLUMN}
                return [Line(False, "dev.experiment_too_wide", params)]
    return [Line(True, "dev.experiments_ok", {"n": len(steps), "room": COLUMN})]
