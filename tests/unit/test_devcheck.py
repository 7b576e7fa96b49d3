"""The parts of `attn-tutor dev check` that read files without running anything."""

from __future__ import annotations

import textwrap

import pytest

from tutor.cli import dev_check as devcheck
from tutor.cli import dev_keys
from tutor.cli.dev_keys import keys_in
from tutor.cli.dev_lesson_file import declared_steps, schema_problems
from tutor.model.lesson import all_lessons
from tutor.model.variants import apply_replacements


def keys(tmp_path, code: str) -> list:
    path = tmp_path / "checks.py"
    path.write_text(textwrap.dedent(code))
    return [(u.key, u.line) for u in keys_in(path)]


def test_literal_keys_anywhere_and_fstrings_over_a_literal_loop(tmp_path):
    found = keys(
        tmp_path,
        """
        TABLE = {"q": "likely.per_head_transpose"}
        def judge(v):
            v.require("x", False, "check.values", likely=msg("likely.scale_none"))
            for mode in ("train", "eval"):
                v.require("d", False, f"check.dropout_{mode}")
            print("not a key: check. spaced", "checks.py")
    """,
    )
    assert sorted(found) == sorted(
        [
            ("likely.per_head_transpose", 2),
            ("check.values", 4),
            ("likely.scale_none", 4),
            ("check.dropout_train", 6),
            ("check.dropout_eval", 6),
        ]
    )


def test_keys_built_from_unknown_values_are_reported_not_guessed(tmp_path):
    found = keys(
        tmp_path,
        """
        def judge(v, name, mode):
            v.expect("a", False, f"likely.{name}")
            v.expect("b", False, "check." + mode)
    """,
    )
    assert sorted(found, key=lambda k: k[1]) == [(None, 3), (None, 4)]


@pytest.mark.slow
def test_every_installed_lesson_uses_only_keys_the_catalogs_have():
    for lesson in all_lessons():
        lines = dev_keys.check_keys(lesson, [])
        assert [line.ok for line in lines] == [True], (lesson.id, lines)


def test_the_engine_modules_are_read_through_the_checks_imports():
    lesson = next(each for each in all_lessons() if each.id == "lm3-l3")
    names = {p.name for p in dev_keys.key_sources(lesson)}
    assert {
        "checks.py",
        "judge_tools.py",
        "probe_tools.py",
        "fixed_dropout.py",
        "judge.py",
        "supervisor.py",
    } <= names


def test_declared_steps_reads_the_dict_and_later_assignments():
    source = (
        'STEPS = {"a": StepSpec(p, j, ("f",))}\nSTEPS["b"] = StepSpec(p, j, ())\nOTHER = {"c": 1}\n'
    )
    assert declared_steps(source) == {"a", "b"}


def test_schema_names_what_is_missing():
    lines = schema_problems(
        {
            "id": "x",
            "file": "x.txt",
            "title": {"en": "X"},
            "steps": [{"id": "s", "kind": "checked", "title": {"en": "S", "zh": "S"}}],
        }
    )
    got = [(line.key, line.params) for line in lines]
    assert ("dev.field_missing", {"field": "format_version", "where": "lesson.toml"}) in got
    assert ("dev.field_type", {"field": "file", "where": "lesson.toml", "type": "*.py"}) in got
    assert ("dev.lang_missing", {"field": "title", "where": "lesson.toml", "lang": "zh"}) in got
    assert ("dev.field_missing", {"field": "functions", "where": "s"}) in got


def lesson_with(step: dict) -> dict:
    return {
        "format_version": 1,
        "id": "x",
        "file": "x.py",
        "title": {"en": "X", "zh": "X"},
        "steps": [{"id": "s", "kind": "experiment", "title": {"en": "S", "zh": "S"}, **step}],
    }


def setting(**fields) -> dict:
    return {
        "id": "heads",
        "key": "1",
        "values": [1, 2],
        "default": 1,
        "label": {"en": "heads", "zh": "头数"},
        **fields,
    }


def test_settings_are_checked_and_their_keys_may_not_collide():
    assert (
        schema_problems(
            lesson_with(
                {
                    "settings": [
                        setting(),
                        setting(
                            id="range",
                            key="2",
                            values=[[64, 1024], [128, 2048]],
                            default=[64, 1024],
                        ),
                    ]
                }
            )
        )
        == []
    )
    got = [
        (line.key, line.params.get("key"))
        for line in schema_problems(
            lesson_with(
                {
                    "questions": {"en": ["Q1?", "Q2?"], "zh": ["一？", "二？"]},
                    "settings": [
                        setting(),
                        setting(id="b", key="x"),
                        setting(id="c", key="x"),
                        setting(id="d", key="n"),
                    ],
                }
            )
        )
    ]
    # "1" is question 1's key on this step; "x" twice; "n" is the app's next-step key.
    assert got == [("dev.key_collision", "1"), ("dev.key_collision", "x"), ("dev.setting_key", "n")]
    got = [
        line.key
        for line in schema_problems(
            lesson_with(
                {
                    "settings": [
                        setting(default=3),
                        setting(id="b", key="2", label={"en": "b"}),
                        setting(id="c", key="3", values=[]),
                        {"key": "4", "values": [1], "label": {"en": "d", "zh": "d"}},
                    ]
                }
            )
        )
    ]
    assert got == ["dev.setting_default", "dev.lang_missing", "dev.field_type", "dev.field_missing"]


def test_weights_from_names_a_step_and_the_answers_file_a_markdown_file():
    got = [
        line.key
        for line in schema_problems(
            {**lesson_with({"weights_from": "nowhere"}), "answers": {"file": "../x.txt"}}
        )
    ]
    assert got == ["dev.weights_from", "dev.field_type"]


def test_a_catalog_key_without_its_twin_or_with_other_placeholders(monkeypatch):
    cats = {"en": {"a.x": "{n} things", "a.y": "y"}, "zh": {"a.x": "{m} 个东西"}}
    monkeypatch.setattr(dev_keys, "catalog", lambda lesson, lang: cats[lang])
    got = [(line.key, line.params.get("key")) for line in dev_keys.check_catalogs(None)]
    assert got == [("dev.twin_missing", "a.y"), ("dev.placeholders_differ", "a.x")]


def test_apply_replacements_replaces_a_function_and_a_method():
    source = (
        "import torch\n\ndef f(x):\n    return x\n\nclass C:\n    def m(self):\n        return 1\n"
    )
    out = apply_replacements(
        source,
        {"f": "def f(x):\n    return 2 * x\n", "C.m": "def m(self):\n    return 2\n"},
        "import math",
    )
    assert out == (
        "import math\nimport torch\n\ndef f(x):\n    return 2 * x\n\nclass C:\n"
        "    def m(self):\n        return 2\n"
    )


def test_schema_checks_the_optional_points_and_version():
    base = {"format_version": 1, "id": "x", "file": "x.py", "title": {"en": "X", "zh": "X"}}
    step = {"id": "s", "kind": "checked", "title": {"en": "S", "zh": "S"}, "functions": ["f"]}
    ok = schema_problems(dict(base, version="2", steps=[dict(step, points=2.5)]))
    assert [(text.key, text.params) for text in ok] == []
    bad = schema_problems(dict(base, version=2, steps=[dict(step, points=-1)]))
    got = [(line.key, line.params) for line in bad]
    assert ("dev.field_type", {"field": "points", "where": "s", "type": "number ≥ 0"}) in got
    assert ("dev.field_type", {"field": "version", "where": "lesson.toml", "type": "str"}) in got


def test_copied_lines_are_the_references_own_not_the_starters():
    reference = (
        "def f(x):\n    total = x.cumsum(dim=1) / counts\n    given_line_of_the_starter = 1\n"
    )
    starter = "def f(x):\n    given_line_of_the_starter = 1\n"
    warmup = (
        "def f(x):\n"
        "    given_line_of_the_starter = 1\n"
        "    n = 2\n"
        "        total = x.cumsum(dim=1) / counts   \n"  # indented otherwise: still the line
    )
    assert devcheck.copied_lines(warmup, reference, starter) == [4]
    assert devcheck.copied_lines(warmup.replace("counts", "n"), reference, starter) == []


def test_only_experiment_steps_with_a_stepspec_are_run(tmp_path):
    """An experiment step that is text alone (no StepSpec) has nothing to run: dev check does
    not ask the worker for it, which would report it missing."""
    import shutil
    from pathlib import Path

    from tutor.cli.dev_experiments import experiment_steps
    from tutor.model.lesson import get_lesson, load_lesson

    folder = tmp_path / "lab-02"
    shutil.copytree(get_lesson("lab-02").folder, folder)
    assert experiment_steps(load_lesson(folder)) == ["heatmap", "exercises"]
    checks = Path(folder / "checks.py")
    source = checks.read_text(encoding="utf-8")
    line = source[source.index('STEPS["heatmap"] = ') :]
    line = line[: line.index("\n)\n") + 3]
    assert source.count(line) == 1 and "weights_heatmap_step(" in line
    checks.write_text(source.replace(line, ""), encoding="utf-8")
    assert experiment_steps(load_lesson(folder)) == ["exercises"]
