"""A Jupyter notebook as the learner's file, read without a kernel.

The learner's code is the notebook's code cells in order, as it would run them, without what
only tests or shows. From each code cell the tutor takes, at its top level:
- imports, except of a package that only draws (matplotlib, seaborn, IPython, ...) or that is
  not installed where the checks run;
- `def`s and `class`es;
- assignments that read only names taken before and, where they call anything, name none of
  the notebook's own functions or classes (`x = torch.randn(B, T, d)` is taken, `out, w =
  causal_attention(x, Wq, Wk, Wv)` and `mha = CausalMultiHeadAttention(...)` are not);
- `try` and `if` blocks made of these only.
Every other top-level statement is left out: calls and prints, plots, `display()`, asserts,
loops (training, tables), `with` blocks. A cell tagged `attn-tutor: keep` is taken whole, one
tagged `attn-tutor: skip` not at all, a cell that starts with a cell magic (`%%time`) not at
all, and a cell Python cannot parse is taken whole so that its error is said. Magics (`%…`,
`!…`, `x?`) become `pass`; outputs are never read. Each line of the source keeps its place,
(cell, line in cell), so that every position in a verdict is said as "line 3 of cell 7"
(`placed`). Cells are counted from 1 at the top, text cells included. Nothing here writes
the notebook.

Stdlib and nbformat (imported on the first notebook: ~0.2 s the first screen does not need).
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import io
import json
import os
import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from tutor.model.results import Check, Failure, Frame, JSONDict, Message, StepResult

SUFFIX = ".ipynb"
KEEP_TAG = "attn-tutor: keep"
SKIP_TAG = "attn-tutor: skip"
_BUILTINS = frozenset(dir(builtins))
# Packages that only draw or display: their imports serve the cells that are left out.
SHOW_PACKAGES = frozenset(
    {"matplotlib", "seaborn", "plotly", "bokeh", "altair", "IPython", "ipywidgets", "pylab"}
)
# IPython's line syntax that is not Python: `%magic`, `!shell`, `x = !ls`, `obj?`.
_MAGIC = re.compile(r"^\s*(?:[%!]|[\w.,\s]+=\s*[%!]|[\w.]+\?{1,2}\s*$)")


def is_notebook(path: Path | str) -> bool:
    return str(path).lower().endswith(SUFFIX)


class NotebookError(Exception):
    """The bytes are not a notebook: `key`/`params` say why (an i18n message)."""

    def __init__(self, key: str, **params: Any):
        super().__init__(key)
        self.key = key
        self.params = params


@dataclass(frozen=True)
class NotebookSource:
    text: str  # the Python the checks run
    # Line i + 1 of the text is line places[i][1] of cell places[i][0].
    places: tuple[tuple[int, int], ...]
    inline: tuple[tuple[int, str], ...] = ()  # (cell, names) a left-out top-level code assigns
    cells: int = 0  # code cells read

    def place(self, line: object) -> tuple[int, int] | None:
        if isinstance(line, int) and not isinstance(line, bool) and 0 < line <= len(self.places):
            return self.places[line - 1]
        return None


# ------------------------------------------------------------------ reading


def _validate(data: dict[str, Any]) -> dict[str, Any]:
    """The notebook as nbformat 4, validated; a hand-made one may leave out what Jupyter fills
    in (metadata, outputs, execution counts, cell ids)."""
    import nbformat
    from nbformat.validator import ValidationError

    convert: Any = nbformat.convert  # untyped in nbformat
    from_dict: Any = nbformat.from_dict

    data.setdefault("metadata", {})
    data.setdefault("nbformat", 4)
    data.setdefault("nbformat_minor", 4)
    cells = data.get("cells")
    if isinstance(cells, list):
        for n, cell in enumerate(cells):
            if isinstance(cell, dict):
                cell.setdefault("metadata", {})
                if data.get("nbformat_minor", 0) >= 5 and data.get("nbformat") == 4:
                    cell.setdefault("id", f"cell-{n + 1}")
                if cell.get("cell_type") == "code":
                    cell.setdefault("outputs", [])
                    cell.setdefault("execution_count", None)
    try:
        version = data["nbformat"]
        if not isinstance(version, int) or version < 4:
            notebook = convert(from_dict(data), 4)
        else:
            notebook = from_dict(data)
        nbformat.validate(notebook)
    except (ValidationError, KeyError, TypeError, ValueError, AttributeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise NotebookError("failure.notebook_invalid", detail=first[:120]) from None
    return dict(notebook)


_READ: dict[
    tuple[bytes, str | None], NotebookSource
] = {}  # by the bytes' digest: grade reads a file 3 or 4 times
_READ_KEPT = 512


def read_notebook(raw: bytes, folder: Path | str | None = None) -> NotebookSource:
    """The learner's Python in the notebook's bytes; NotebookError when they are not a notebook.
    folder: the notebook's, where its own modules are (an import of one is taken)."""
    import hashlib

    where = None if folder is None else str(folder)
    key = (hashlib.blake2b(raw, digest_size=20).digest(), where)
    if key not in _READ:
        if len(_READ) >= _READ_KEPT:
            _READ.clear()
        _READ[key] = _read(raw, where)
    return _READ[key]


def _read(raw: bytes, folder: str | None) -> NotebookSource:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise NotebookError("failure.notebook_json", json_line=line, detail="not UTF-8") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(
            "failure.notebook_json", json_line=error.lineno, detail=error.msg
        ) from None
    except RecursionError:
        raise NotebookError(
            "failure.notebook_json", json_line=1, detail="nested too deep"
        ) from None
    if not isinstance(data, dict) or not (
        isinstance(data.get("cells"), list) or isinstance(data.get("worksheets"), list)
    ):
        raise NotebookError("failure.notebook_invalid", detail="no list of cells")
    return source_of(_validate(data), folder)


def is_whole(raw: bytes) -> bool:
    """Is this a whole JSON document (not an editor's write caught half way)?"""
    try:
        json.loads(raw.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return False
    return True


def _text(source: object) -> str:
    if isinstance(source, list):
        return "".join(str(x) for x in source)
    return str(source) if source is not None else ""


def _tags(cell: dict[str, Any]) -> set[str]:
    tags = (cell.get("metadata") or {}).get("tags") or []
    return {str(t).strip().lower() for t in tags} if isinstance(tags, list) else set()


def source_of(notebook: dict[str, Any], folder: str | None = None) -> NotebookSource:
    lines: list[str] = []
    places: list[tuple[int, int]] = []
    inline: list[tuple[int, str]] = []
    names = _Names(folder=folder)
    read = 0
    for number, cell in enumerate(notebook.get("cells", []), start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        read += 1
        tags = _tags(cell)
        code = _text(cell.get("source"))
        if SKIP_TAG in tags or code.lstrip().startswith("%%"):
            continue
        cell_lines = [
            (re.match(r"\s*", x).group() + "pass\n") if _MAGIC.match(x) else x  # type: ignore[union-attr]
            # Lines as Python counts them (at \n, \r\n, \r; str.splitlines also splits at \f).
            for x in io.StringIO(code, newline="").readlines()
        ]
        if cell_lines and not cell_lines[-1].endswith("\n"):
            cell_lines[-1] += "\n"
        taken, left_names = _taken(cell_lines, KEEP_TAG in tags, names)
        for i in taken:
            lines.append(cell_lines[i])
            places.append((number, i + 1))
        if left_names:
            inline.append((number, ", ".join(left_names)))
    return NotebookSource("".join(lines), tuple(places), tuple(inline), read)


def _taken(cell_lines: list[str], keep: bool, names: _Names) -> tuple[list[int], list[str]]:
    """The indices of the cell's lines to take, and the names its code computes at the top
    level (beyond definitions and literals: what a function of the lesson may be meant to do)."""
    try:
        tree = ast.parse("".join(cell_lines))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return list(range(len(cell_lines))), []  # taken whole: Python says where it is wrong
    take: set[int] = set()
    computed: list[str] = []
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        span = range(first - 1, node.end_lineno or node.lineno)
        if _computes(node):
            computed += [n for n in sorted(_binds(node)) if n not in computed]
        if (not _is_display(node)) if keep else _defines(node, names):
            take.update(span)
            names.add(node)
    return sorted(take), computed


@dataclass
class _Names:
    """What the code taken so far binds: every name, and those its own def/class make."""

    known: set[str] = field(default_factory=lambda: set(_BUILTINS))
    defined: set[str] = field(default_factory=set)
    folder: str | None = None  # the notebook's: its own modules are importable

    def add(self, node: ast.stmt) -> None:
        bound = _binds(node)
        self.known |= bound
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.defined |= bound
        else:  # rebound by an import or an assignment: no longer the notebook's own
            self.defined -= bound


def _computes(node: ast.stmt) -> bool:
    if isinstance(
        node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    ):
        return False
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        return any(isinstance(n, (ast.Name, ast.Call)) for n in ast.walk(node.value))
    if isinstance(node, ast.Expr):
        return not isinstance(node.value, ast.Constant)  # a docstring computes nothing
    return not isinstance(node, ast.Pass)


def _is_display(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "display"
    )


def _binds(node: ast.AST) -> set[str]:
    """The names a top-level statement binds (its targets only: walking whole values and
    bodies cost a save ~2 ms on LM3-L3's notebook)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    targets: list[ast.AST] = []
    inner: list[ast.stmt] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        targets, inner = [node.target], node.body + node.orelse
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
        inner = node.body
    elif isinstance(node, (ast.If, ast.While)):
        inner = node.body + node.orelse
    elif isinstance(node, ast.Try):
        inner = (
            node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
        )
    names = {
        n.id
        for t in targets
        for n in ast.walk(t)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    for statement in inner:
        names |= _binds(statement)
    return names


def _modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""] if not node.level else []  # a relative import: the course's
    return [a.name for a in node.names]


def _importable(module: str, folder: str | None) -> bool:
    """Not a package that only draws, and installed where the checks run (the worker is this
    Python) or one of the notebook's own modules beside it: an import that would fail there
    serves only the cells left out."""
    top = module.partition(".")[0]
    if top in SHOW_PACKAGES:
        return False
    if folder is not None and (
        os.path.isfile(os.path.join(folder, top + ".py"))
        or os.path.isdir(os.path.join(folder, top))
    ):
        return True
    return _installed(top)


@cache
def _installed(top: str) -> bool:
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _safe(expr: ast.AST | None, names: _Names) -> bool:
    """Can this expression run when the module loads, as the notebook would run it, without
    running the notebook's own code? Every name it reads is taken already (or bound inside
    it, by a comprehension); no await or yield; and where it calls anything, it names none of
    the notebook's functions or classes (`out = causal_attention(x, ...)`, `mha = MHA(...)`,
    `torch.jit.trace(f, ...)` are the self-checks' and experiments' work)."""
    if expr is None:
        return True
    local = {
        n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    calls = False
    mentions = False
    todo: list[ast.AST] = [expr]
    lambdas: list[ast.AST] = []
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Await, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, ast.Lambda):
            todo += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            lambdas.append(node.body)  # runs when called: its names are checked below
            continue
        if isinstance(node, ast.Call):
            calls = True
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id not in names.known and node.id not in local:
                return False
            mentions = mentions or node.id in names.defined
        todo.extend(ast.iter_child_nodes(node))
    for body in lambdas:
        mentions = mentions or any(
            isinstance(n, ast.Name) and n.id in names.defined for n in ast.walk(body)
        )
    return not (calls and mentions)


def _target_ok(target: ast.AST, names: _Names) -> bool:
    if isinstance(target, ast.Name):
        return True
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_target_ok(t, names) for t in target.elts)
    if isinstance(target, ast.Starred):
        return _target_ok(target.value, names)
    return _safe(target, names)  # x.a = ..., d[k] = ...: x and k taken already


def _defines(node: ast.stmt, names: _Names) -> bool:
    """Is this top-level statement one the tutor takes from a cell (see the module's text)?"""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return all(_importable(m, names.folder) for m in _modules(node))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return _safe(node.value, names) and all(_target_ok(t, names) for t in targets)
    if isinstance(node, (ast.Try, ast.If)):  # try: import x / except ImportError: ...
        inner = _Names(set(names.known), set(names.defined), names.folder)
        parts: list[ast.stmt] = list(node.body) + list(node.orelse)
        if isinstance(node, ast.Try):
            parts += list(node.finalbody) + [s for h in node.handlers for s in h.body]
            tests: list[ast.AST | None] = [h.type for h in node.handlers]
        else:
            tests = [node.test]
        if not all(_safe(x, inner) for x in tests):
            return False
        for part in parts:
            if isinstance(part, ast.Pass):
                continue
            if not _defines(part, inner):
                return False
            inner.add(part)
        return True
    return False


# ------------------------------------------------------------------ positions in verdicts


def _at(source: NotebookSource, line: object) -> object:
    where = source.place(line)
    if where is None:
        return line
    return {"key": "notebook.line", "params": {"cell": where[0], "line": where[1]}}


def _params(value: Any, source: NotebookSource) -> Any:
    if isinstance(value, dict):
        return {k: _at(source, v) if k == "line" else _params(v, source) for k, v in value.items()}
    if isinstance(value, list):
        return [_params(v, source) for v in value]
    return value


def _caret(caret: str, source: NotebookSource) -> str:
    head, sep, rest = caret.partition(" | ")
    where = source.place(int(head)) if head.strip().isdigit() else None
    if where is None:
        return caret
    label = f"[{where[0]}] {where[1]:>3}"
    pad = " " * (len(label) - len(head))
    return label + sep + rest.replace("\n" + " " * len(head), "\n" + " " * len(head) + pad, 1)


@dataclass
class Needs:
    """What a notebook that lacks the lesson's functions is told: their signatures."""

    signatures: str = ""
    names: frozenset[str] = field(default_factory=frozenset)


def needs_of(starter: str, names: set[str]) -> Needs:
    """The signatures of the lesson's functions as its starter writes them."""
    try:
        tree = ast.parse(starter)
    except SyntaxError:
        return Needs(", ".join(sorted(names)), frozenset(names))
    said = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
            if isinstance(node, ast.FunctionDef):
                said.append(f"{node.name}({', '.join(a.arg for a in node.args.args)})")
            else:
                said.append(f"class {node.name}")
    return Needs(", ".join(said), frozenset(names))


def _missing(check: Check, source: NotebookSource, needs: Needs) -> Check:
    """check.missing said for a notebook: which functions the lesson needs, and where the
    notebook's inline code that would go in them is."""
    if check.message is None or check.message.key != "check.missing" or not needs.signatures:
        return check
    params: JSONDict = {"name": check.message.params.get("name", ""), "needs": needs.signatures}
    if source.inline:
        cells = ", ".join(str(c) for c, _ in source.inline)
        params["inline"] = {"key": "notebook.inline", "params": {"cells": cells}}
    else:
        params["inline"] = ""
    return replace(check, message=Message("notebook.missing", params))


def placed(result: StepResult, source: NotebookSource, needs: Needs | None = None) -> StepResult:
    """The verdict with every line of the Python source said as its place in the notebook."""
    checks = []
    for check in result.checks:
        if check.message is not None:
            check = replace(
                check, message=Message(check.message.key, _params(check.message.params, source))
            )
        checks.append(_missing(check, source, needs) if needs is not None else check)
    failure = result.failure
    if failure is not None:
        frames = [
            Frame(_at(source, f.line), f.function, f.code)  # type: ignore[arg-type]
            for f in failure.frames
        ]
        failure = Failure(failure.kind, failure.detail, frames, _caret(failure.caret, source))
    return replace(result, checks=checks, failure=failure)


def notebook_results(lesson: Any, error: NotebookError) -> list[StepResult]:
    """Every checked step's verdict for bytes that are not a notebook: nothing was run."""
    return [
        StepResult(s.id, "error", [Check("file-loads", "error", Message(error.key, error.params))])
        for s in lesson.checked_steps
    ]
