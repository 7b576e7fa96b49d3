"""Which file in a student's folder is their submission. Pure: no torch. The student's code is
parsed (ast), never imported: the grading process never runs it.

A student's folder is their submission. The file graded is the one that binds the most of the
lesson's names (its steps' functions and classes) at top level: defined there, or imported
from one of the student's other files. When several files bind as many, the one named after
the lesson wins, else the most recently modified (then the name, so that a tie is stable).
The record says when several files define the lesson's names, and how one was chosen. A
folder where no file binds any name falls back on the names: the lesson's file, else the
only ``.py`` in it (an empty file is still that student's submission). A notebook (``.ipynb``)
counts as a file, its names those of the code the checks would take from it (notebook.py).

Files are looked for in the folder and one level below it (an upload unzipped into a folder
of its own), never through a symbolic link, hidden entries and ``__pycache__`` skipped.
"""

from __future__ import annotations

import ast
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tutor.workspace.notebook import NotebookError, is_notebook, read_notebook

MAX_FILES = 200  # a vendored package in a student's folder: look no further
MAX_BYTES = 1 << 20  # as tutor.engine.client.too_large: a larger file is not run anyway
NOTEBOOK_BYTES = 32 << 20  # a notebook's stored outputs (plots) count too; its code is what is run
SUFFIXES = (".py", ".ipynb")
# How the file was chosen among several (record "picked_by"; grade.picked.<by> in catalogs).
MOST, LESSON_NAME, LATEST = "most", "lesson_name", "latest"


@dataclass(frozen=True)
class Pick:
    path: Path | None
    several: tuple[str, ...] = ()  # the folder's files (relative) that define lesson names
    by: str = ""  # MOST, LESSON_NAME or LATEST when `several`


def _visible(name: str) -> bool:
    return not name.startswith(".") and name != "__pycache__"


def python_files(folder: Path) -> list[Path]:
    """The .py files and notebooks in the folder and its visible sub-folders, links included as entries
    (a link is the caller's to refuse) but never followed into."""
    found: list[Path] = []
    try:
        top = sorted((e for e in os.scandir(folder) if _visible(e.name)), key=lambda e: e.name)
    except OSError:
        return found
    below: list[Path] = []
    for entry in top:
        if entry.name.endswith(SUFFIXES) and (entry.is_symlink() or entry.is_file()):
            found.append(Path(entry.path))
        elif entry.is_dir(follow_symlinks=False):
            below.append(Path(entry.path))
    for sub in below:
        try:
            inner = sorted((e for e in os.scandir(sub) if _visible(e.name)), key=lambda e: e.name)
        except OSError:
            continue
        found += [
            Path(e.path)
            for e in inner
            if e.name.endswith(SUFFIXES) and e.is_file() and _visible(e.name)
        ]
        if len(found) >= MAX_FILES:
            break
    return found[:MAX_FILES]


def _read(path: Path) -> bytes | None:
    """The file's bytes, not through a link; None when it cannot be read or is too large."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            limit = NOTEBOOK_BYTES if is_notebook(path) else MAX_BYTES
            raw = f.read(limit + 1)
    except OSError:
        return None
    if len(raw) > limit:
        return None
    if is_notebook(path):
        try:
            return read_notebook(raw, path.absolute().parent).text.encode("utf-8")
        except NotebookError:
            return None
    return raw


def bound_names(raw: bytes, names: set[str]) -> tuple[int, int]:
    """(bound, defined): how many of `names` the module binds at top level (def, class,
    assignment, import) and how many of those it defines itself (def, class)."""
    try:
        tree = ast.parse(raw)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return 0, 0
    defined: set[str] = set()
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {t.id for t in targets if isinstance(t, ast.Name)}
    return len((defined | bound) & names), len(defined & names)


def _named_after(path: Path, stems: list[str], file_names: set[str]) -> bool:
    low = path.stem.lower()
    return path.name in file_names or any(s.lower() in low for s in stems)


def _mtime(path: Path) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0


def pick_file(folder: Path, names: set[str], stems: list[str], file_names: set[str]) -> Pick:
    """The file to grade in a student's folder. names: the lesson's names a submission
    defines; stems and file_names: what a file named after the lesson is called."""
    files = python_files(folder)
    scored = []
    for path in files:
        raw = None if path.is_symlink() else _read(path)
        score = bound_names(raw, names) if raw else (0, 0)
        if score[0]:
            scored.append((score, path))
    if not scored:
        return Pick(_by_name(folder, files, stems, file_names))
    best = max(score for score, _ in scored)
    top = [path for score, path in scored if score == best]
    defining = tuple(sorted(str(p.relative_to(folder)) for score, p in scored if score[1]))
    several = defining if len(defining) > 1 else ()
    if len(top) == 1:
        return Pick(top[0], several, MOST if several else "")
    named = [p for p in top if _named_after(p, stems, file_names)]
    if len(named) == 1:
        return Pick(named[0], several, LESSON_NAME)
    latest = max(named or top, key=lambda p: (_mtime(p), str(p)))
    return Pick(latest, several, LATEST)


def _by_name(folder: Path, files: list[Path], stems: list[str], file_names: set[str]):
    """No file binds a lesson name: the lesson's file at the top of the folder, else the only
    one there named after the lesson, else the folder's only .py file."""
    top = [p for p in files if p.parent == folder]
    for p in top:
        if p.name in file_names:
            return p
    named = [p for p in top if _named_after(p, stems, file_names)]
    if len(named) == 1:
        return named[0]
    return files[0] if len(files) == 1 else None
