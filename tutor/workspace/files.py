"""The learner's files in attn-lab/: create from the starter, reset with a backup.

The learner's file is theirs: nothing here overwrites it without first keeping
a copy, and nothing writes it in place (atomic replace only). Stdlib only.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.workspace.store import STATE_DIR, atomic_write, stamp

if TYPE_CHECKING:
    from collections.abc import Iterable

    from tutor.model.lesson import Lesson

WORKSPACE_DIR = "attn-lab"
BOM = b"\xef\xbb\xbf"


def workspace_dir(cwd: Path) -> Path:
    return Path(cwd) / WORKSPACE_DIR


def solution_path(cwd: Path, lesson: Lesson) -> Path:
    return workspace_dir(cwd) / lesson.file_name


DEFAULT_LESSON = "lm3-l3"  # the course's first lab: a folder that shows no other


def folder_lesson(cwd: Path, recorded: object, lessons: Iterable[Lesson]) -> str:
    """The id of the lesson this folder works on, when no --lesson says: the one the app used
    last (`recorded`, the state's "lesson"), else the one whose file is in attn-lab/ (of several,
    the one saved last), else the course's first. The app, `check`, `solution` and `reset` all
    choose by this, so that they agree in every folder."""
    if isinstance(recorded, str) and recorded:
        return recorded
    present = []
    for lesson in lessons:
        try:
            present.append((solution_path(cwd, lesson).stat().st_mtime, lesson.id))
        except OSError:
            continue
    return max(present)[1] if present else DEFAULT_LESSON


def ensure_solution(cwd: Path, lesson: Lesson) -> tuple[Path, bool]:
    """Create the learner's file from the starter unless it exists; returns (path, created)."""
    path = solution_path(cwd, lesson)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = Path(lesson.starter_path).read_bytes()
    try:
        # O_EXCL: even a file created a moment ago by another instance is never replaced
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return path, False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)  # ours, half written: the next start makes it again
        raise
    return path, True


def backup_dir(path: Path) -> Path:
    return Path(path).parent / STATE_DIR / "backups"


def backup(path: Path, *, now: date | float | None = None) -> Path:
    """Copy the file to .attn-tutor/backups/<stem>.<YYYYmmdd-HHMMSS>[-n]<suffix>."""
    path = Path(path)
    data = path.read_bytes()
    folder = backup_dir(path)
    folder.mkdir(parents=True, exist_ok=True)
    base = f"{path.stem}.{stamp(now)}"
    n = 1
    while True:
        target = folder / f"{base}{'' if n == 1 else f'-{n}'}{path.suffix}"
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except FileExistsError:  # a second reset in the same second
            n += 1
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return target


def _mode(path: Path) -> int | None:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return None


def reset(path: Path, starter: Path, *, now: date | float | None = None) -> Path | None:
    """Back up the file, then replace it with the starter. Returns the backup
    (None if there was no file to back up)."""
    path = Path(path)
    kept = backup(path, now=now) if path.exists() else None
    atomic_write(path, Path(starter).read_bytes(), _mode(path))
    return kept


def _lines(text: str) -> list[str]:
    # ast counts lines at \n, \r\n and \r only; str.splitlines also splits at \f, \x1c...
    return io.StringIO(text, newline="").readlines()


def _top_level(tree: ast.Module) -> list[tuple[str | None, int, int]]:
    """(name, first line, last line) of each top-level statement, decorators included."""
    out = []
    for node in tree.body:
        name = None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = node.name
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        out.append((name, first, node.end_lineno or node.lineno))
    return out


def _decode(raw: bytes, what: str) -> tuple[str, bytes]:
    bom = BOM if raw.startswith(BOM) else b""
    try:
        return raw[len(bom) :].decode("utf-8"), bom
    except UnicodeDecodeError as error:
        raise ValueError(f"{what} is not valid UTF-8: {error}") from error


def _parse(text: str, what: str) -> ast.Module:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError) as error:
        raise ValueError(f"{what} does not parse: {error}") from error


def reset_function(
    path: Path, starter: Path, names: list[str], *, now: date | float | None = None
) -> Path:
    """Put the starter's version of the named top-level functions/classes back,
    leaving every other byte of the learner's file as it was. Returns the backup.

    Raises ValueError, touching nothing, if the learner's file does not parse (we
    could not tell where a function ends) or the starter lacks a name. A name the
    learner deleted is appended at the end of the file.
    """
    path = Path(path)
    raw = path.read_bytes()
    text, bom = _decode(raw, str(path))
    starter_text, _ = _decode(Path(starter).read_bytes(), str(starter))
    _parse(text, str(path))
    lines = _lines(text)
    starter_lines = _lines(starter_text)
    theirs = {name: (a, b) for name, a, b in _top_level(_parse(starter_text, str(starter))) if name}
    newline = "\r\n" if "\r\n" in text else "\n"

    for name in names:
        if name not in theirs:
            raise ValueError(f"the starter has no top-level {name!r}")
        a, b = theirs[name]
        segment = [line.rstrip("\r\n") + newline for line in starter_lines[a - 1 : b]]
        tops = _top_level(ast.parse("".join(lines)))
        found = [i for i, (n, _, _) in enumerate(tops) if n == name]
        if not found:  # deleted by the learner: put it back at the end
            if lines and not lines[-1].endswith(("\n", "\r")):
                lines[-1] += newline
            lines += ([newline, newline] + segment) if lines else segment
            continue
        # the last definition is the one Python keeps; a def/class never shares
        # its lines with another top-level statement, so whole lines are safe
        _, first, last = tops[found[-1]]
        if not lines[last - 1].endswith(("\n", "\r")):
            segment[-1] = segment[-1].rstrip("\r\n")  # keep "no newline at end of file"
        lines[first - 1 : last] = segment

    result = "".join(lines)
    _parse(result, "the reset file")  # never write a file we made unparsable
    kept = backup(path, now=now)
    atomic_write(path, bom + result.encode("utf-8"), _mode(path))
    return kept


__all__ = [
    "WORKSPACE_DIR",
    "workspace_dir",
    "solution_path",
    "ensure_solution",
    "backup",
    "reset",
    "reset_function",
]
