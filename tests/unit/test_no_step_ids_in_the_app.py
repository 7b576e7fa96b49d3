"""The app and the renderers draw every step from its data: no lesson's step id appears in them
as a string literal (issue #14: no branch on a step id, no lesson-specific view)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tutor.model.lesson import all_lessons

ROOT = Path(__file__).resolve().parents[2]
SCANNED = sorted(
    [*(ROOT / "tutor" / "app").glob("*.py"), *(ROOT / "tutor" / "render").glob("*.py")]
)
STEP_IDS = sorted({(lesson.id, step.id) for lesson in all_lessons() for step in lesson.steps})


def engine_words() -> set[str]:
    """Words that are the engine's own and happen to be step ids too (lab-02 has steps named
    "heatmap" and "weights", kv-cache one named "rows"): the kinds and fields of the visuals
    vocabulary, the app's actions and binding ids."""
    from tutor.app.app import TutorApp
    from tutor.model import view_items as visuals

    actions = {b.action.split("(")[0] for b in TutorApp.BINDINGS} | {
        b.id for b in TutorApp.BINDINGS if b.id
    }
    return set(visuals.KINDS) | set(visuals.FIELDS) | actions


def literals(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def test_the_scan_sees_both_folders_and_every_lesson():
    assert {p.parent.name for p in SCANNED} == {"app", "render"}
    assert {"lm3-l3", "lab-02"} <= {lesson for lesson, _ in STEP_IDS}


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_step_id_as_a_string_literal(path):
    found = literals(path) - engine_words()
    named = sorted(f"{lesson}/{step}" for lesson, step in STEP_IDS if step in found)
    assert not named, f"{path.relative_to(ROOT)} names steps of a lesson: {named}"


def test_the_scan_would_find_one():
    """A literal such as the old `self.step.id == "memory"` is found (the scan is not vacuous)."""
    assert "memory" in {step for _, step in STEP_IDS}
    tree = ast.parse('if self.step.id == "memory": pass')
    assert "memory" in {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
