"""Which checked steps a save cannot have changed: the app shows their last passing verdicts
again instead of running them (issue 31: a save that touches one function runs its steps only).

A step's verdict comes from the code its probe reaches: the step's functions (lesson.toml),
what they name of the file's other functions and classes, and the file's top level (imports,
assignments, anything that runs on import). When none of that changed, in text, since the run
that passed, the step would pass again. Anything that could reach code or data by another road
means run: a name such as `globals`, `getattr`, `open` or `sys` anywhere in the file, an import
of anything but torch, NumPy and a few pure modules of Python's, a module of the learner's own
beside the file, a name defined twice. A step whose passing run printed anything runs too (a
warning names a line, and lines move).

`tests/worker/test_unchanged_steps.py` proves, for every built-in lesson, that each step's probe
reads no name of the file outside its functions and what they name.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tutor.model.results import StepResult

# Imports whose behaviour a save cannot change: the libraries the lessons are about, and
# modules of Python's with no state, no clock and no files.
PURE_IMPORTS = frozenset(
    {
        "__future__",
        "torch",
        "numpy",
        "math",
        "typing",
        "dataclasses",
        "functools",
        "itertools",
        "collections",
        "abc",
        "enum",
        "numbers",
        "operator",
    }
)

# Names through which code reaches other code, its own file or the world by another road than
# the names the AST shows. One anywhere in the file: every step runs.
DYNAMIC = frozenset(
    {
        "globals",
        "locals",
        "vars",
        "eval",
        "exec",
        "compile",
        "__import__",
        "getattr",
        "setattr",
        "delattr",
        "__dict__",
        "__globals__",
        "__builtins__",
        "__file__",
        "__code__",
        "__closure__",
        "open",
        "input",
        "breakpoint",
        "sys",
        "os",
        "inspect",
        "importlib",
        "builtins",
        "gc",
        "random",
        "time",
        "_getframe",
        "currentframe",
        "f_back",
        "f_globals",
        "f_locals",
        "tb_frame",
    }
)

# A module's own attribute lookup (PEP 562): a name a probe reads may come from it.
MODULE_HOOKS = frozenset({"__getattr__", "__dir__"})


@dataclass(frozen=True)
class Definition:
    """A top-level function or class: its text (decorators included: a def's own text leaves
    them out) and the top-level definitions it names."""

    text: str
    names: frozenset[str]


Defs = dict[str, Definition]


def _analysed(source: str, folder: Path | None) -> tuple[list[str], set[str], Defs] | None:
    """(the top level's statements other than definitions, as text; the names they use; each
    top-level function or class by name), or None where the file may reach code the AST does
    not show. The folder is looked at each time: a torch.py put beside the file changes no text."""
    parsed = _parsed(source)
    if parsed is None:
        return None
    prelude, named, defs, imported = parsed
    # A torch.py (or numpy/ folder) beside the file would be imported in its place.
    if folder is not None and any(
        (folder / f"{top}.py").exists() or (folder / top).is_dir() for top in imported
    ):
        return None
    return prelude, named, defs


@functools.lru_cache(maxsize=4)
def _parsed(source: str) -> tuple[list[str], set[str], Defs, frozenset[str]] | None:
    """_analysed's work on the text alone, once per text: a save's results each note the same
    source, and the next save's fingerprints parse it again otherwise. Callers only read it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in DYNAMIC:
            return None
        if isinstance(node, ast.Attribute) and node.attr in DYNAMIC:
            return None
        if isinstance(node, ast.alias) and node.name.split(".")[0] in DYNAMIC:
            return None
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            tops = _import_tops(node)
            if tops is None or not tops <= PURE_IMPORTS:
                return None
            imported |= tops
    segment = _Segments(source)
    prelude: list[str] = []
    named: set[str] = set()  # `causal_attention = mine`, `Layer.forward = f`: every step's
    nodes: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in nodes or node.name in MODULE_HOOKS:
                return None  # defined twice (the order decides), or the module's own lookup
            nodes[node.name] = node
        else:
            prelude.append(segment(node))
            named |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    defs = {
        name: Definition(
            "\0".join(segment(part) for part in [*node.decorator_list, node]),
            frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in nodes),
        )
        for name, node in nodes.items()
    }
    return prelude, named, defs, frozenset(imported)


class _Segments:
    """A node's source text, as ast.get_source_segment gives it, without splitting the whole
    source again for each node (that made fingerprinting the slowest part of a save's UI work)."""

    _LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # ast's line breaks only

    def __init__(self, source: str):
        self.lines = self._LINE.findall(source)

    def __call__(self, node: ast.AST) -> str:
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        start, end = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if first is None or last is None or start is None or end is None:
            return ast.dump(node)
        lines = self.lines[first - 1 : last]
        if not lines:
            return ast.dump(node)
        if len(lines) == 1:  # the offsets count UTF-8 bytes
            return lines[0].encode()[start:end].decode()
        head, tail = lines[0].encode()[start:].decode(), lines[-1].encode()[:end].decode()
        return head + "".join(lines[1:-1]) + tail


def _import_tops(node: ast.Import | ast.ImportFrom) -> set[str] | None:
    """The top-level packages an import names; None for a relative one (the learner's own)."""
    if isinstance(node, ast.ImportFrom):
        if node.level or node.module is None:
            return None
        return {node.module.split(".")[0]}
    return {alias.name.split(".")[0] for alias in node.names}


def _reached(defs: Defs, names: Iterable[str]) -> set[str]:
    """The step's names and every top-level definition they name, to the end."""
    todo = [name for name in names if name in defs]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [n for n in defs[name].names if n not in seen]
    return seen


def fingerprints(
    source: str, steps: Mapping[str, Iterable[str]], folder: Path | None = None
) -> dict[str, str]:
    """A digest per step (step id -> the names it declares) of all the code its verdict comes
    from; empty when the file may reach code by another road (then every step runs)."""
    analysed = _analysed(source, folder)
    if analysed is None:
        return {}
    prelude, named, defs = analysed
    out = {}
    for step, names in steps.items():
        h = hashlib.sha256()
        for text in prelude:
            h.update(b"\0p" + text.encode("utf-8", "surrogatepass"))
        for name in sorted(_reached(defs, [*names, *named])):
            h.update(
                b"\0d" + name.encode() + b"\0" + defs[name].text.encode("utf-8", "surrogatepass")
            )
        out[step] = h.hexdigest()
    return out


class PassedSteps:
    """The app's record of the steps whose last run passed: for each, what its probe read, its
    settings and the fingerprint of that code. A save whose fingerprint for a step is the same
    shows that pass again; anything else (a failure, output, names unknown) runs it."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder
        self._passed: dict[str, tuple[tuple[str, ...], str, str]] = {}

    def note(self, result: StepResult, source: str, settings: str) -> None:
        """A step's verdict from a run of `source` with these settings (a JSON text)."""
        self._passed.pop(result.id, None)
        if result.status != "pass" or result.reads is None:
            return
        if result.output or result.output_dropped:
            return  # a warning, a print: it may name a line, and lines move
        digest = fingerprints(source, {result.id: result.reads}, self.folder).get(result.id)
        if digest is not None:
            self._passed[result.id] = (result.reads, settings, digest)

    def forget(self, step: str) -> None:
        self._passed.pop(step, None)

    def unchanged(self, source: str, settings: Mapping[str, str]) -> set[str]:
        """The steps that would pass again on `source` (settings: step id -> its JSON text)."""
        roots = {
            step: reads
            for step, (reads, said, _) in self._passed.items()
            if settings.get(step, "null") == said
        }
        now = fingerprints(source, roots, self.folder) if roots else {}
        return {step for step, digest in now.items() if digest == self._passed[step][2]}
