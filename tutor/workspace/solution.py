"""The reference solution of one step, to read after passing it (as rustlings shows its solutions).

Pure: the code of the reference's top-level definitions that the step names (lesson.toml's
`functions`), and a diff against the learner's own definitions of them.
"""

from __future__ import annotations

import ast
import difflib
from typing import TYPE_CHECKING

from tutor.workspace.store import State

if TYPE_CHECKING:
    from tutor.model.lesson import Lesson


def definitions(source: str, names: tuple[str, ...]) -> str:
    """The top-level defs/classes named, in the file's order, decorators included ("" if none)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    parts = []
    for node in tree.body:
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name in names
        ):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            parts.append("".join(lines[first - 1 : node.end_lineno]).rstrip("\n") + "\n")
    return "\n\n".join(parts)


def step_solution(lesson: Lesson, step_id: str) -> str:
    step = lesson.step(step_id)
    return definitions(lesson.reference_path.read_text(encoding="utf-8"), step.functions)


def solution_diff(learner_source: str, lesson: Lesson, step_id: str) -> str:
    """A unified diff from the learner's definitions to the reference's ("" when they are the same)."""
    step = lesson.step(step_id)
    try:
        mine = definitions(learner_source, step.functions)
    except SyntaxError:
        mine = learner_source
    theirs = step_solution(lesson, step_id)
    return "".join(
        difflib.unified_diff(
            mine.splitlines(keepends=True),
            theirs.splitlines(keepends=True),
            fromfile="yours",
            tofile="reference",
        )
    )


def passed(state: State, lesson_id: str, step_id: str) -> bool:
    status = state.get("lessons", {}).get(lesson_id, {}).get("status", {}).get(step_id)
    return bool(status == "pass")
