"""The lesson files: complete in both languages, and consistent with the checks."""

import ast
from pathlib import Path

import pytest

from tutor.lesson import LANGS, all_lessons, get_lesson


def test_the_lessons_load_in_the_courses_order():
    lessons = all_lessons()
    folders = sorted(p.name for p in (Path(__file__).resolve().parents[2] / "lessons").iterdir()
                     if (p / "lesson.toml").is_file())
    assert sorted(lesson.id for lesson in lessons) == folders  # every folder, each once
    assert [lesson.id for lesson in lessons][:2] == ["lm3-l3", "lab-02"]
    assert get_lesson("lm3-l3").step_ids() == ["single-head", "leakage", "multi-head", "shapes", "memory", "reflect"]
    assert get_lesson("lab-02").step_ids() == ["scores", "mask", "weights", "output", "heatmap", "exercises"]


@pytest.mark.parametrize("lesson", all_lessons(), ids=lambda l: l.id)
def test_every_step_has_text_title_and_hints_in_both_languages(lesson):
    for step in lesson.steps:
        for lang in LANGS:
            assert step.title.get(lang, "").strip(), (step.id, lang)
            assert lesson.text(step.id, lang).strip(), (step.id, lang)
            if step.checked:
                assert len(step.hints.get(lang, ())) >= 2, (step.id, lang)
                assert all(h.strip() for h in step.hints[lang])
        if step.checked:
            assert len(step.hints["en"]) == len(step.hints["zh"]), step.id
        assert len(step.questions.get("en", ())) == len(step.questions.get("zh", ())) == len(step.answers.get("en", ()))


@pytest.mark.parametrize("lesson", all_lessons(), ids=lambda l: l.id)
def test_checked_steps_match_checks_py_and_the_starter(lesson):
    tree = ast.parse(lesson.checks_path.read_text())
    steps_dict = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "STEPS")
    declared = {k.value: [e.value for e in v.args[2].elts] for k, v in zip(steps_dict.keys, steps_dict.values)}
    assert set(declared) == {s.id for s in lesson.checked_steps}
    starter_names = {n.name for n in ast.parse(lesson.starter_path.read_text()).body if hasattr(n, "name")}
    for step in lesson.checked_steps:
        assert list(step.functions) == declared[step.id]
        assert set(step.functions) <= starter_names
