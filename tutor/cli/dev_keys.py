"""`dev check` on message keys: the keys a lesson's verdicts can carry, found statically in its
checks and the engine modules they import, each in both catalogs; the catalogs key for key."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from tutor.cli.dev_findings import Line
from tutor.cli.dev_mistakes import diagnosis_keys
from tutor.model.lesson import Lesson
from tutor.model.mistakes import Mistake
from tutor.text.i18n import LANGS, engine_catalog, placeholders

# The catalog sections a verdict's messages come from (the others are the UI's own texts).
SECTIONS = ("check", "likely", "failure", "value", "visual")
KEY = re.compile(r"(?:{})\.[a-z0-9_]+".format("|".join(SECTIONS)))
PREFIX = re.compile(r"(?:{})\.".format("|".join(SECTIONS)))
PACKAGE = Path(__file__).resolve().parents[1]  # the tutor package
# Modules whose keys any lesson's verdicts can carry, whatever its checks import: the judge's
# failures, the worker's timeouts and crashes, the client's unreadable file.
ENGINE = ("engine/judge.py", "engine/supervisor.py", "engine/client.py")


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
                return [
                    e.value
                    for e in at.iter.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                ]
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
    uses += [Use(k, lesson.folder / "mistakes.toml", 0) for k in diagnosis_keys(mistakes)]
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
