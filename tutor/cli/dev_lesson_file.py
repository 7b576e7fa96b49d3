"""`dev check` on the lesson file: its schema and settings, the files it names, its texts and
hints in both languages."""

from __future__ import annotations

import ast

from tutor.cli.dev_findings import FORMAT_VERSION, Line
from tutor.model.lesson import STEP_KINDS, Lesson
from tutor.text.i18n import LANGS


def schema_problems(data: dict) -> list[Line]:
    """What the loader (tutor/model/lesson.py) needs and the app assumes, each missing thing a line."""
    bad: list[Line] = []

    def need(table: dict, name: str, kind, where: str) -> bool:
        if name not in table:
            bad.append(Line(False, "dev.field_missing", {"field": name, "where": where}))
            return False
        if not isinstance(table[name], kind):
            bad.append(
                Line(
                    False, "dev.field_type", {"field": name, "where": where, "type": kind.__name__}
                )
            )
            return False
        return True

    def per_lang(table: dict, name: str, where: str, required: bool) -> None:
        if name not in table and not required:
            return
        if need(table, name, dict, where):
            for lang in LANGS:
                if not table[name].get(lang):
                    bad.append(
                        Line(
                            False, "dev.lang_missing", {"field": name, "where": where, "lang": lang}
                        )
                    )

    if (
        need(data, "format_version", int, "lesson.toml")
        and data["format_version"] != FORMAT_VERSION
    ):
        bad.append(
            Line(
                False,
                "dev.format_version",
                {"got": data["format_version"], "expected": FORMAT_VERSION},
            )
        )
    need(data, "id", str, "lesson.toml")
    if need(data, "file", str, "lesson.toml") and not data["file"].endswith(".py"):
        bad.append(
            Line(False, "dev.field_type", {"field": "file", "where": "lesson.toml", "type": "*.py"})
        )
    per_lang(data, "title", "lesson.toml", True)
    if "version" in data:
        need(
            data, "version", str, "lesson.toml"
        )  # optional: the checks' edition, beside every grade
    if not need(data, "steps", list, "lesson.toml"):
        return bad
    seen: set[str] = set()
    ids = {raw.get("id") for raw in data["steps"] if isinstance(raw, dict)}
    for i, raw in enumerate(data["steps"]):
        where = f"steps[{i}]"
        if not isinstance(raw, dict):
            bad.append(
                Line(False, "dev.field_type", {"field": "steps", "where": where, "type": "table"})
            )
            continue
        if need(raw, "id", str, where):
            where = raw["id"]
            if raw["id"] in seen:
                bad.append(Line(False, "dev.duplicate_step", {"step": raw["id"]}))
            seen.add(raw["id"])
        if need(raw, "kind", str, where) and raw["kind"] not in STEP_KINDS:
            bad.append(
                Line(
                    False,
                    "dev.unknown_kind",
                    {"where": where, "kind": raw["kind"], "kinds": ", ".join(STEP_KINDS)},
                )
            )
        per_lang(raw, "title", where, True)
        for name in ("hints", "questions", "answers"):
            if name in raw and need(raw, name, dict, where):
                for lang, items in raw[name].items():
                    if not (isinstance(items, list) and all(isinstance(x, str) for x in items)):
                        bad.append(
                            Line(
                                False,
                                "dev.field_type",
                                {
                                    "field": f"{name}.{lang}",
                                    "where": where,
                                    "type": "list of strings",
                                },
                            )
                        )
        points = raw.get("points", 1)
        if isinstance(points, bool) or not isinstance(points, (int, float)) or points < 0:
            bad.append(
                Line(
                    False,
                    "dev.field_type",
                    {"field": "points", "where": where, "type": "number ≥ 0"},
                )
            )
        if (
            raw.get("kind") == "checked"
            and need(raw, "functions", list, where)
            and not raw["functions"]
        ):
            bad.append(Line(False, "dev.field_missing", {"field": "functions", "where": where}))
        if (
            "weights_from" in raw
            and need(raw, "weights_from", str, where)
            and raw["weights_from"] not in ids
        ):
            bad.append(
                Line(False, "dev.weights_from", {"where": where, "step": raw["weights_from"]})
            )
        if "settings" in raw and need(raw, "settings", list, where):
            bad += setting_problems(raw, where)
    if (
        "answers" in data
        and need(data, "answers", dict, "lesson.toml")
        and "file" in data["answers"]
    ):
        name = data["answers"]["file"]
        if (
            not isinstance(name, str)
            or not name.endswith(".md")
            or "/" in name
            or name.startswith(".")
        ):
            bad.append(
                Line(
                    False,
                    "dev.field_type",
                    {
                        "field": "answers.file",
                        "where": "lesson.toml",
                        "type": "a file name ending in .md",
                    },
                )
            )
    return bad


# The app's own keys: a step's setting may not take one (nor a question's number, on its step).
APP_KEYS = frozenset(
    ["n", "p", "r", "e", "h", "l", "w", "b", "d", "m", "R", "q", "?", "s", "L"]
)  # the app's own keys: a step's may not take them


def setting_problems(raw: dict, where: str) -> list[Line]:
    """[[steps.settings]]: id, key, values (ints, strings or arrays), a default among them, a
    label in every language; keys unique on the step, none the app's, none a question's."""
    bad: list[Line] = []
    questions = max(
        (len(v) for v in raw.get("questions", {}).values() if isinstance(v, list)), default=0
    )
    taken: dict[str, str] = {str(i + 1): "question" for i in range(questions)}
    for i, setting in enumerate(raw["settings"]):
        at = f"{where}.settings[{i}]"
        if not isinstance(setting, dict):
            bad.append(
                Line(False, "dev.field_type", {"field": "settings", "where": at, "type": "table"})
            )
            continue
        for name, kind in (("id", str), ("key", str), ("values", list)):
            if name not in setting:
                bad.append(Line(False, "dev.field_missing", {"field": name, "where": at}))
            elif not isinstance(setting[name], kind):
                bad.append(
                    Line(
                        False, "dev.field_type", {"field": name, "where": at, "type": kind.__name__}
                    )
                )
        values = setting.get("values")
        if isinstance(values, list):
            if not values or not all(
                isinstance(v, (int, str, list)) and not isinstance(v, bool) for v in values
            ):
                bad.append(
                    Line(
                        False,
                        "dev.field_type",
                        {
                            "field": "values",
                            "where": at,
                            "type": "a non-empty list of ints, strings or arrays",
                        },
                    )
                )
            elif "default" in setting and setting["default"] not in values:
                bad.append(Line(False, "dev.setting_default", {"where": at}))
        if "label" not in setting:
            bad.append(Line(False, "dev.field_missing", {"field": "label", "where": at}))
        elif not isinstance(setting["label"], dict) or any(
            not setting["label"].get(lang) for lang in LANGS
        ):
            bad.append(
                Line(
                    False,
                    "dev.lang_missing",
                    {"field": "label", "where": at, "lang": "/".join(LANGS)},
                )
            )
        names = setting.get("names", {})
        if names and (
            not isinstance(names, dict)
            or any(
                not isinstance(names.get(lang), list) or len(names[lang]) != len(values or [])
                for lang in LANGS
            )
        ):
            bad.append(
                Line(
                    False,
                    "dev.field_type",
                    {"field": "names", "where": at, "type": "one name per value in every language"},
                )
            )
        key = setting.get("key")
        if isinstance(key, str):
            if len(key) != 1 or key in APP_KEYS:
                bad.append(Line(False, "dev.setting_key", {"where": at, "key": key}))
            elif key in taken:
                bad.append(
                    Line(False, "dev.key_collision", {"where": at, "key": key, "other": taken[key]})
                )
            taken[key] = f"setting {setting.get('id')}"
    return bad


def declared_steps(checks_source: str) -> set[str]:
    """The step ids checks.py gives a StepSpec: `STEPS = {...}` and `STEPS["x"] = ...`."""
    found: set[str] = set()
    for node in ast.parse(checks_source).body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if (
                isinstance(target, ast.Name)
                and target.id == "STEPS"
                and isinstance(node.value, ast.Dict)
            ):
                found |= {
                    k.value
                    for k in node.value.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)
                }
            elif (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and target.value.id == "STEPS"
                and isinstance(target.slice, ast.Constant)
                and isinstance(target.slice.value, str)
            ):
                found.add(target.slice.value)
    return found


def check_files(lesson: Lesson) -> list[Line]:
    lines = []
    for path in (lesson.starter_path, lesson.checks_path, lesson.reference_path):
        if not path.is_file():
            lines.append(Line(False, "dev.file_missing", {"path": path}))
    if lesson.checks_path.is_file():
        try:
            declared = declared_steps(lesson.checks_path.read_text(encoding="utf-8"))
        except SyntaxError as exc:
            return lines + [
                Line(False, "dev.syntax", {"path": lesson.checks_path, "line": exc.lineno})
            ]
        for step in lesson.checked_steps:
            if step.id not in declared:
                lines.append(Line(False, "dev.no_spec", {"step": step.id}))
    # The names a step is about must be in both files: reset cuts them out of the starter,
    # and a variant replaces them in the reference.
    # warmup.py (optional) too: a name it lacks makes its step an error, which warms nothing.
    for path in (lesson.starter_path, lesson.reference_path, lesson.warmup_path):
        if not path.is_file():
            continue
        try:
            names = {
                n.name
                for n in ast.parse(path.read_text(encoding="utf-8")).body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            }
        except SyntaxError as exc:
            lines.append(Line(False, "dev.syntax", {"path": path, "line": exc.lineno}))
            continue
        for step in lesson.checked_steps:
            for name in step.functions:
                if name not in names:
                    lines.append(
                        Line(
                            False,
                            "dev.function_missing",
                            {"step": step.id, "name": name, "path": path.name},
                        )
                    )
    return lines or [Line(True, "dev.files_ok", {"n": len(lesson.checked_steps)})]


def check_texts(lesson: Lesson) -> list[Line]:
    lines = []
    for step in lesson.steps:
        for lang in LANGS:
            path = lesson.folder / "text" / lang / f"{step.id}.md"
            if not path.is_file() or not path.read_text(encoding="utf-8").strip():
                lines.append(
                    Line(False, "dev.text_missing", {"path": path.relative_to(lesson.folder)})
                )
    return lines or [Line(True, "dev.texts_ok", {"n": len(lesson.steps) * len(LANGS)})]


def check_hints(lesson: Lesson) -> list[Line]:
    lines = []
    for step in lesson.steps:
        for lang in LANGS:
            hints = step.hints.get(lang, ())
            if not hints or not all(h.strip() for h in hints):
                lines.append(Line(False, "dev.hints_missing", {"step": step.id, "lang": lang}))
        counts = {len(step.hints.get(lang, ())) for lang in LANGS}
        if len(counts) > 1:
            lines.append(Line(False, "dev.hints_differ", {"step": step.id}))
    return lines or [Line(True, "dev.hints_ok", {"n": len(lesson.steps)})]
