"""`attn-tutor dev check`: proves a lesson for its author, as rustlings' `dev check` does.

Each check gives one line: the lesson file's schema, its texts and hints in both languages,
the message keys its checks can use (found statically) in both catalogs, the catalogs key for
key, then runs through the real worker: the starter is `todo` on every checked step, the
reference passes each, every wrong variant in mistakes.toml fails its step with the
named mistake, and warmup.py (if any) fails every checked step and copies no reference line. Torch-free: it runs in the UI's process; only the worker imports torch.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from tutor import toml
from tutor.model.lesson import STEP_KINDS, Lesson, load_lesson
from tutor.model.variants import apply_replacements, message_keys
from tutor.text.i18n import LANGS, engine_catalog, placeholders

FORMAT_VERSION = 1
# The catalog sections a verdict's messages come from (the others are the UI's own texts).
SECTIONS = ("check", "likely", "failure", "value", "visual")
KEY = re.compile(r"(?:{})\.[a-z0-9_]+".format("|".join(SECTIONS)))
PREFIX = re.compile(r"(?:{})\.".format("|".join(SECTIONS)))
PACKAGE = Path(__file__).resolve().parents[1]  # the tutor package
# Modules whose keys any lesson's verdicts can carry, whatever its checks import: the judge's
# failures, the worker's timeouts and crashes, the client's unreadable file.
ENGINE = ("engine/judge.py", "engine/supervisor.py", "engine/client.py")
MISTAKE_FIELDS = {
    "id": str,
    "step": str,
    "function": str,
    "code": str,
    "expect_check": str,
    "expect_keys": list,
}


@dataclass
class Line:
    ok: bool
    key: str  # a dev.* catalog key
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Mistake:
    id: str
    step: str
    function: str
    code: str
    expect_check: str
    expect_keys: tuple[str, ...]
    header: str = ""


# ------------------------------------------------------------------ the lesson file


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
                found |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
            elif (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and target.value.id == "STEPS"
                and isinstance(target.slice, ast.Constant)
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


# ------------------------------------------------------------------ message keys, found statically


@dataclass(frozen=True)
class Use:
    key: str | None  # None: a key built at run time whose values could not be found
    path: Path
    line: int


def _loop_values(node: ast.AST, name: str, parents: dict) -> list[str] | None:
    """The values `name` takes in the nearest enclosing `for name in (<constants>)`, if any."""
    at = parents.get(node)
    while at is not None:
        if (
            isinstance(at, (ast.For, ast.comprehension))
            and isinstance(at.target, ast.Name)
            and at.target.id == name
        ):
            if isinstance(at.iter, (ast.Tuple, ast.List, ast.Set)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in at.iter.elts
            ):
                return [e.value for e in at.iter.elts]
            return None
        if isinstance(at, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return None
        at = parents.get(at)
    return None


def _fstring_keys(node: ast.JoinedStr, parents: dict) -> list[str] | None:
    """f"check.dropout_{mode}" inside `for mode in ("train", "eval")`: both keys; None if unknown."""
    keys = [""]
    for part in node.values:
        if isinstance(part, ast.Constant):
            keys = [k + str(part.value) for k in keys]
        elif (
            isinstance(part, ast.FormattedValue)
            and isinstance(part.value, ast.Name)
            and part.format_spec is None
        ):
            values = _loop_values(node, part.value.id, parents)
            if values is None:
                return None
            keys = [k + v for k in keys for v in values]
        else:
            return None
    return keys


def keys_in(path: Path) -> list[Use]:
    """Catalog keys of the verdict sections named in a module: every string literal that is one,
    and the values of f-strings that build one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            if isinstance(first, ast.Constant) and PREFIX.match(str(first.value)):
                keys = _fstring_keys(node, parents)
                uses += (
                    [Use(k, path, node.lineno) for k in keys]
                    if keys
                    else [Use(None, path, node.lineno)]
                )
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and PREFIX.fullmatch(node.left.value)
        ):
            uses.append(Use(None, path, node.lineno))  # "check." + name: not followed
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and KEY.fullmatch(node.value)
        ) and not isinstance(parents.get(node), ast.JoinedStr):
            uses.append(Use(node.value, path, node.lineno))
    return uses


def _module_file(name: str) -> Path | None:
    """tutor.kit.judge_tools -> tutor/kit/judge_tools.py (this package only)."""
    parts = name.split(".")
    if parts[0] != "tutor":
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(path: Path) -> set[Path]:
    """The tutor modules a module imports (absolute, or relative inside the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # The module's package, for relative imports: tutor/kit/judge_tools.py -> tutor.kit.
    package = (
        list(path.relative_to(PACKAGE.parent).parent.parts) if PACKAGE in path.parents else None
    )
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if package is None:
                    continue
                up = package[: len(package) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names}  # `from tutor.kit import probe_tools`
    return {f for f in map(_module_file, names) if f is not None}


def key_sources(lesson: Lesson) -> list[Path]:
    """checks.py, the engine modules it imports at any depth, and those every verdict goes through."""
    todo = [lesson.checks_path, *(PACKAGE / e for e in ENGINE)]
    seen: list[Path] = []
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        todo += sorted(_imports(path))
    return seen


def check_keys(lesson: Lesson, mistakes: list[Mistake]) -> list[Line]:
    uses = [u for path in key_sources(lesson) for u in keys_in(path)]
    uses += [Use(k, lesson.folder / "mistakes.toml", 0) for m in mistakes for k in m.expect_keys]
    lines = []
    for u in uses:
        where = f"{_show(u.path, lesson)}:{u.line}"
        if u.key is None:
            lines.append(Line(False, "dev.key_dynamic", {"where": where}))
            continue
        for lang in LANGS:
            if u.key not in lesson.messages(lang) and u.key not in engine_catalog(lang):
                lines.append(
                    Line(False, "dev.key_missing", {"key": u.key, "lang": lang, "where": where})
                )
    n = len({u.key for u in uses})
    return lines or [Line(True, "dev.keys_ok", {"n": n, "files": len(key_sources(lesson))})]


def catalog(lesson: Lesson, lang: str) -> dict[str, str]:
    """What the lesson's messages can use: the engine's keys and its own (unprefixed)."""
    return {**engine_catalog(lang), **lesson.messages(lang)}


def check_catalogs(lesson: Lesson) -> list[Line]:
    lines = []
    cats = {lang: catalog(lesson, lang) for lang in LANGS}
    for lang, cat in cats.items():
        for other in LANGS:
            for key in sorted(set(cat) - set(cats[other])):
                lines.append(
                    Line(False, "dev.twin_missing", {"key": key, "lang": lang, "other": other})
                )
    a, b = LANGS[0], LANGS[1]
    for key in sorted(set(cats[a]) & set(cats[b])):
        pa, pb = placeholders(cats[a][key]), placeholders(cats[b][key])
        if pa != pb:
            lines.append(
                Line(
                    False,
                    "dev.placeholders_differ",
                    {
                        "key": key,
                        "a": a,
                        "b": b,
                        "pa": ", ".join(sorted(pa)) or "-",
                        "pb": ", ".join(sorted(pb)) or "-",
                    },
                )
            )
    return lines or [Line(True, "dev.catalogs_ok", {"n": len(cats[a])})]


def _show(path: Path, lesson: Lesson) -> str:
    for root in (lesson.folder, PACKAGE.parent):
        if root in path.parents:
            return str(path.relative_to(root))
    return str(path)


# ------------------------------------------------------------------ wrong variants


def load_mistakes(lesson: Lesson) -> tuple[list[Mistake], list[Line]]:
    """lessons/<id>/mistakes.toml: [[mistakes]] tables (see MISTAKE_FIELDS); none is allowed, with a ✗."""
    path = lesson.folder / "mistakes.toml"
    if not path.is_file():
        return [], [Line(False, "dev.mistakes_none", {})]
    try:
        data = toml.loads(path.read_text(encoding="utf-8"))
    except toml.TOMLDecodeError as exc:
        return [], [Line(False, "dev.bad_toml", {"path": "mistakes.toml", "detail": exc})]
    found, bad = [], []
    if data.get("format_version") != FORMAT_VERSION:
        bad.append(
            Line(
                False,
                "dev.format_version",
                {"got": data.get("format_version"), "expected": FORMAT_VERSION},
            )
        )
    checked = {s.id for s in lesson.checked_steps}
    for i, raw in enumerate(data.get("mistakes", [])):
        where = f"mistakes[{i}]" if not isinstance(raw.get("id"), str) else raw["id"]
        wrong = [n for n, kind in MISTAKE_FIELDS.items() if not isinstance(raw.get(n), kind)]
        if wrong:
            bad += [Line(False, "dev.field_missing", {"field": n, "where": where}) for n in wrong]
            continue
        if raw["step"] not in checked:
            bad.append(Line(False, "dev.mistake_step", {"id": where, "step": raw["step"]}))
            continue
        found.append(
            Mistake(
                raw["id"],
                raw["step"],
                raw["function"],
                raw["code"],
                raw["expect_check"],
                tuple(raw["expect_keys"]),
                raw.get("header", ""),
            )
        )
    if not found and not bad:
        bad.append(Line(False, "dev.mistakes_none", {}))
    return found, bad


def mistake_source(reference: str, m: Mistake) -> str:
    return apply_replacements(reference, {m.function: m.code}, m.header)


def judge_mistake(m: Mistake, results) -> Line:
    """The step must not pass, its check expect_check must fail, naming every expect_keys."""
    by_id = {r.id: r for r in results}
    r = by_id.get(m.step)
    base = {"id": m.id, "step": m.step}
    if r is None:
        return Line(False, "dev.not_run", base)
    failing = {c.id: message_keys(c.message) for c in r.checks if c.status != "pass"}
    if r.status == "pass":
        return Line(False, "dev.mistake_passed", base)
    if m.expect_check not in failing:
        return Line(
            False,
            "dev.mistake_other_check",
            {**base, "check": m.expect_check, "failing": ", ".join(failing) or "-"},
        )
    missing = [k for k in m.expect_keys if k not in failing[m.expect_check]]
    if missing:
        return Line(
            False,
            "dev.mistake_keys",
            {
                **base,
                "check": m.expect_check,
                "missing": ", ".join(missing),
                "got": ", ".join(sorted(failing[m.expect_check])),
            },
        )
    return Line(
        True,
        "dev.mistake_ok",
        {**base, "check": m.expect_check, "keys": ", ".join(m.expect_keys) or "-"},
    )


def _off(results, order: list[str], wanted: str) -> list[dict]:
    """The steps whose status is not the wanted one, as messages (rendered in the reader's
    language): the status, and the first check that did not pass with its message key."""
    by_id = {r.id: r for r in results}
    off = []
    for step in order:
        r = by_id.get(step)
        if r is None:
            off.append({"key": "dev.step_missing", "params": {"step": step}})
        elif r.status != wanted:
            first = next((c for c in r.checks if c.status != "pass"), None)
            status = {"key": f"status.{r.status}", "params": {}}
            if first is None or r.status == "pass":
                off.append({"key": "dev.step_status", "params": {"step": step, "status": status}})
            else:
                off.append(
                    {
                        "key": "dev.step_failing",
                        "params": {
                            "step": step,
                            "status": status,
                            "check": first.id,
                            "message": first.message.key if first.message else first.status,
                        },
                    }
                )
    return off


# ------------------------------------------------------------------ the whole check


def dev_check(folder: Path, timeout: float) -> list[Line]:
    """Every line for the lesson in folder; the runs need a worker (so torch, in its process)."""
    path = folder / "lesson.toml"
    try:
        data = toml.loads(path.read_text(encoding="utf-8"))
    except (OSError, toml.TOMLDecodeError) as exc:
        return [Line(False, "dev.bad_toml", {"path": "lesson.toml", "detail": exc})]
    bad = schema_problems(data)
    if bad:
        return bad  # nothing else can be read from a lesson the loader may not load
    lesson = load_lesson(folder)
    lines = [Line(True, "dev.schema_ok", {"version": FORMAT_VERSION, "n": len(lesson.steps)})]
    files = check_files(lesson)
    lines += files + check_texts(lesson) + check_hints(lesson)
    mistakes, mistake_lines = load_mistakes(lesson)
    try:
        lines += check_keys(lesson, mistakes)
    except SyntaxError as exc:
        lines.append(Line(False, "dev.syntax", {"path": exc.filename, "line": exc.lineno}))
    lines += check_catalogs(lesson) + mistake_lines + check_warmup_lines(lesson)
    if not all(line.ok for line in files):
        return lines  # no starter, checks or reference to run
    return lines + run_checks(lesson, mistakes, timeout)


# ------------------------------------------------------------------ warmup.py

COPIED_LINE = 20  # characters: a shorter line (`return out, w`) is anyone's


def copied_lines(warmup: str, reference: str, starter: str) -> list[int]:
    """The lines of warmup.py that are the reference's own (not the starter's): a warm-up
    runs in every child, so a line of the solution in it is a line handed to the learner."""
    public = {line.strip() for line in starter.splitlines()}
    secret = {line.strip() for line in reference.splitlines()}
    secret = {line for line in secret if len(line) >= COPIED_LINE and line not in public}
    return [i for i, line in enumerate(warmup.splitlines(), 1) if line.strip() in secret]


def check_warmup_lines(lesson: Lesson) -> list[Line]:
    paths = (lesson.warmup_path, lesson.reference_path, lesson.starter_path)
    if not all(path.is_file() for path in paths):
        return []  # no warm-up (the starter is used), or a missing file said above
    warmup, reference, starter = (path.read_text(encoding="utf-8") for path in paths)
    copied = copied_lines(warmup, reference, starter)
    if copied:
        shown = ", ".join(map(str, copied[:8]))
        return [Line(False, "dev.warmup_copies", {"n": len(copied), "lines": shown})]
    return [Line(True, "dev.warmup_own")]


def run_checks(lesson: Lesson, mistakes: list[Mistake], timeout: float) -> list[Line]:
    from tutor.engine.client import WorkerGone, check_sources  # torch-free: it starts the worker

    order = [s.id for s in lesson.checked_steps]
    reference = lesson.reference_path.read_text(encoding="utf-8")
    runs = [
        (str(lesson.starter_path), lesson.starter_path.read_text(encoding="utf-8"), order),
        (str(lesson.reference_path), reference, order),
    ]
    unusable: list[Line] = []  # variants that cannot be built: said after the runs
    ready = []
    for m in mistakes:
        try:
            source = mistake_source(reference, m)
            compile(
                source, lesson.file_name, "exec"
            )  # the variant's own typo is not the lesson's failure
        except KeyError:
            unusable.append(
                Line(False, "dev.mistake_function", {"id": m.id, "function": m.function})
            )
            continue
        except SyntaxError as exc:
            unusable.append(Line(False, "dev.mistake_syntax", {"id": m.id, "line": exc.lineno}))
            continue
        ready.append(m)
        runs.append((str(lesson.reference_path), source, [m.step]))
    warmup = lesson.warmup_path.is_file()
    if warmup:
        runs.append((str(lesson.warmup_path), lesson.warmup_path.read_text("utf-8"), order))
    try:
        got = check_sources(lesson.id, runs, timeout=timeout, lesson_dir=lesson.folder)
    except WorkerGone as exc:
        return [Line(False, "dev.worker_failed", {"detail": exc})] + unusable
    starter, ref, *variants = got
    warm_results = variants.pop() if warmup else None
    not_todo = _off(starter, order, "todo")
    lines = [
        Line(
            not not_todo,
            "dev.starter_ok" if not not_todo else "dev.starter_bad",
            {"n": len(order), "steps": not_todo},
        )
    ]
    bad = _off(ref, order, "pass")
    lines.append(
        Line(
            not bad,
            "dev.reference_ok" if not bad else "dev.reference_bad",
            {"n": len(order), "steps": bad},
        )
    )
    if warm_results is not None:
        # Failed, not raised: a step that raises warms nothing, and one that passes is a
        # solution in every child's memory.
        off = _off(warm_results, order, "fail")
        lines.append(
            Line(
                not off,
                "dev.warmup_ok" if not off else "dev.warmup_bad",
                {"n": len(order), "steps": off},
            )
        )
    return (
        lines
        + [judge_mistake(m, results) for m, results in zip(ready, variants, strict=False)]
        + unusable
    )
