"""The lesson files: complete in both languages, and consistent with the checks."""

import ast
import importlib.util
from pathlib import Path

import pytest

from tutor.model.lesson import LANGS, all_lessons, get_lesson


def test_the_lessons_load_in_the_courses_order():
    lessons = all_lessons()
    folders = sorted(
        p.name
        for p in (Path(__file__).resolve().parents[2] / "lessons").iterdir()
        if (p / "lesson.toml").is_file()
    )
    assert sorted(lesson.id for lesson in lessons) == folders  # every folder, each once
    assert [lesson.id for lesson in lessons][:2] == ["lm3-l3", "lab-02"]
    assert get_lesson("lm3-l3").step_ids() == [
        "single-head",
        "leakage",
        "multi-head",
        "shapes",
        "memory",
        "reflect",
    ]
    assert get_lesson("lab-02").step_ids() == [
        "scores",
        "mask",
        "weights",
        "output",
        "heatmap",
        "exercises",
    ]


@pytest.mark.parametrize("lesson", all_lessons(), ids=lambda each: each.id)
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
        assert (
            len(step.questions.get("en", ()))
            == len(step.questions.get("zh", ()))
            == len(step.answers.get("en", ()))
        )


@pytest.mark.parametrize("lesson", all_lessons(), ids=lambda each: each.id)
def test_checked_steps_match_checks_py_and_the_starter(lesson):
    # Loaded, not parsed: a step may be built by a kit property (SizedFunction.step).
    spec = importlib.util.spec_from_file_location(f"checks_{lesson.id}", lesson.checks_path)
    checks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checks)
    declared = {step_id: list(s.functions) for step_id, s in checks.STEPS.items()}
    assert {s.id for s in lesson.checked_steps} <= set(declared) <= set(lesson.step_ids())
    starter_names = {
        n.name for n in ast.parse(lesson.starter_path.read_text()).body if hasattr(n, "name")
    }
    for step in lesson.checked_steps:
        assert list(step.functions) == declared[step.id]
        assert set(step.functions) <= starter_names


def test_settings_are_read_from_lesson_toml_and_cycle():
    memory = get_lesson("lm3-l3").step("memory")
    assert [s.id for s in memory.settings] == ["heads", "batch", "dtype", "range"]
    assert [s.key for s in memory.settings] == ["1", "2", "3", "4"]
    assert memory.default_settings() == {
        "heads": 12,
        "batch": 1,
        "dtype": "float32",
        "range": [64, 1024],
    }
    heads, _, dtype, span = memory.settings
    seen, value = [], 12
    for _ in range(6):
        value = heads.next(value)
        seen.append(value)
    assert seen == [16, 1, 2, 4, 8, 12]  # round and back to the default
    assert (
        heads.next(7) == 16
    )  # a value not among them (an old state file): the default's successor
    assert dtype.next("float32") == "bfloat16" and span.next([512, 8192]) == [64, 1024]
    assert span.shown([128, 2048], "en") == "128–2048" and heads.label["zh"] == "头数"
    assert memory.setting_for_key("3") is dtype and memory.setting_for_key("x") is None


def test_a_settings_values_may_have_names_per_language(tmp_path):
    from tutor.model.lesson import load_lesson

    (tmp_path / "lesson.toml").write_text(
        'id = "c"\nfile = "c.py"\ntitle = { en = "C", zh = "C" }\n'
        '[[steps]]\nid = "s"\nkind = "experiment"\ntitle = { en = "S", zh = "S" }\n'
        '[[steps.settings]]\nid = "change"\nkey = "x"\nvalues = ["scaled", "shuffled"]\n'
        'default = "scaled"\nlabel = { en = "change", zh = "改法" }\n'
        'names = { en = ["Q × 4", "Q shuffled"], zh = ["Q × 4", "打乱 Q"] }\n',
        "utf-8",
    )
    (change,) = load_lesson(tmp_path).step("s").settings
    assert change.key == "x" and change.shown("shuffled", "en") == "Q shuffled"
    assert change.shown("shuffled", "zh") == "打乱 Q" and change.shown("other", "en") == "other"


def test_questions_weights_and_the_answers_file_are_declared():
    lm3, lab = get_lesson("lm3-l3"), get_lesson("lab-02")
    assert lm3.step("reflect").question_keys() == ("1", "2", "3", "4")
    assert lab.step("exercises").question_keys() == ("1", "2", "3")
    assert (
        lab.step("heatmap").weights_from == "output"
        and lm3.step("multi-head").weights_from == "multi-head"
    )
    assert lm3.step("shapes").weights_declared == ""
    assert (lm3.answers_file, lab.answers_file) == ("lm3-l3-answers.md", "lab-02-answers.md")


def test_a_lessons_own_answers_file_and_a_bad_default(tmp_path):
    from tutor.model.lesson import load_lesson

    step = '[[steps]]\nid = "s"\nkind = "experiment"\ntitle = { en = "S", zh = "S" }\n'
    (tmp_path / "lesson.toml").write_text(
        'id = "c"\nfile = "c.py"\ntitle = { en = "C", zh = "C" }\n[answers]\nfile = "notes.md"\n'
        + step,
        "utf-8",
    )
    assert load_lesson(tmp_path).answers_file == "notes.md"
    (tmp_path / "lesson.toml").write_text(
        'id = "c"\nfile = "c.py"\ntitle = { en = "C", zh = "C" }\n'
        + step
        + '[[steps.settings]]\nid = "n"\nkey = "1"\nvalues = [1, 2]\ndefault = 3\n'
        'label = { en = "n", zh = "n" }\n',
        "utf-8",
    )
    with pytest.raises(ValueError, match="default"):
        load_lesson(tmp_path)
