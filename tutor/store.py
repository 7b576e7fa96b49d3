"""Progress and reflection answers, kept in the workspace and never lost.

State lives in attn-lab/.attn-tutor/state.json:
    {"version": 1, "lang": "en"|"zh"|None, "lesson": id|None,
     "lessons": {id: {"step": step_id, "status": {step_id: status}, "hints": {step_id: n}}}}

- Every write is atomic (temp file in the same folder, fsync, rename, fsync the
  folder): a crash or kill -9 leaves the old file or the new one, never half.
- update() is a read-modify-write under an flock, so two tutors open on one
  workspace do not drop each other's changes.
- A corrupt or unreadable state file is moved aside, not overwritten, and the
  app is told (self.notice) so it can say where the old file went.

Stdlib only.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .results import Message

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no cross-process lock
    fcntl = None  # type: ignore[assignment]

STATE_DIR = ".attn-tutor"
VERSION = 1
_TMP_PREFIX = ".tmp-"


def fresh_state() -> dict:
    return {"version": VERSION, "lang": None, "lesson": None, "lessons": {}}


def fsync_dir(folder: Path) -> None:
    # the rename is only durable once the folder entry is on disk
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on folders
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` so readers see the old bytes or the new, never half."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_TMP_PREFIX + path.name + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is None:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)  # mkstemp makes 0600; the learner's file must stay readable
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def stamp(now=None) -> str:
    """YYYYmmdd-HHMMSS for a datetime, seconds since the epoch, or now (local time)."""
    if hasattr(now, "strftime"):
        return now.strftime("%Y%m%d-%H%M%S")
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(now))


class Store:
    def __init__(self, workspace: Path):
        self.workspace = Path(workspace)
        self.folder = self.workspace / STATE_DIR
        self.path = self.folder / "state.json"
        self.lock_path = self.folder / "state.lock"
        self.notice: Message | None = None  # e.g. Message("store.corrupt", {"path": ...})

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:  # read-only workspace: reading still works, writing will say why not
            yield
            return
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except OSError:  # no locks on this file system: carry on unlocked
                    pass
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _read(self) -> dict:
        """The state on disk; a bad file is moved aside and a fresh state returned."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return fresh_state()
        except OSError:  # a folder in its place, no permission, I/O error
            return self._set_aside()
        try:
            state = json.loads(raw.decode("utf-8"))
        except ValueError:  # bad JSON or bad UTF-8
            return self._set_aside()
        if not _valid(state):
            return self._set_aside()
        for key, value in fresh_state().items():
            state.setdefault(key, value)
        return state

    def _set_aside(self) -> dict:
        moved = self.path.with_name(f"{self.path.name}.corrupt-{stamp()}")
        n = 1
        while moved.exists() or moved.is_symlink():
            n += 1
            moved = self.path.with_name(f"{self.path.name}.corrupt-{stamp()}-{n}")
        try:
            os.replace(self.path, moved)
        except OSError:  # cannot move it either: say where it is, start fresh in memory
            moved = self.path
        self.notice = Message("store.corrupt", {"path": str(moved)})
        return fresh_state()

    def _clean_temps(self) -> None:
        # Held under the lock, so any temp file left is from a writer that was killed.
        for leftover in self.folder.glob(_TMP_PREFIX + self.path.name + ".*"):
            with contextlib.suppress(OSError):
                leftover.unlink()

    def peek(self) -> dict:
        """The saved state, or a fresh one if there is none or it is bad. Touches
        nothing on disk (no lock, no folder, nothing moved): for `--help` and the like."""
        try:
            state = json.loads(self.path.read_bytes().decode("utf-8"))
        except (OSError, ValueError):
            return fresh_state()
        return {**fresh_state(), **state} if _valid(state) else fresh_state()

    def load(self) -> dict:
        """The saved state. Never raises for a corrupt or unreadable file (see notice)."""
        with self._locked():
            return self._read()

    def update(self, fn: Callable[[dict], None]) -> dict:
        """Apply `fn` to the latest state on disk and save it atomically; returns the new state.

        If `fn` raises, nothing is written. OSError from writing (full disk, read-only
        workspace) propagates: the app must say the progress was not saved.
        """
        with self._locked():
            state = self._read()
            fn(state)
            data = json.dumps(state, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
            self._clean_temps()
            atomic_write(self.path, data, 0o644)
            return copy.deepcopy(state)

    # -- reflection answers -------------------------------------------------

    def answers_path(self, lesson_id: str) -> Path:
        if not lesson_id or "/" in lesson_id or "\\" in lesson_id or lesson_id.startswith("."):
            raise ValueError(f"bad lesson id {lesson_id!r}")
        return self.workspace / f"{lesson_id}-answers.md"

    def write_answers(self, lesson_id: str, answers: dict[int, str], questions: list[str]) -> Path:
        """Write the answers as Markdown the learner can read and edit.

        Keys are 0-based question indexes. Each answer sits between
        `<!-- answer N -->` and `<!-- /answer N -->` markers so it reads back
        exactly, whatever Markdown it holds.
        """
        path = self.answers_path(lesson_id)
        out = [f"# {lesson_id}: reflection answers\n\n"]
        out.append("<!-- Written by attn-tutor. Edit answers between the markers. -->\n")
        for i in sorted(set(range(len(questions))) | set(answers)):
            out.append(f"\n## Question {i + 1}\n\n")
            if i < len(questions):
                quoted = "".join(f"> {line}".rstrip() + "\n" for line in questions[i].splitlines())
                out.append(quoted + "\n")
            out.append(f"<!-- answer {i} -->\n{answers.get(i, '')}\n<!-- /answer {i} -->\n")
        self.workspace.mkdir(parents=True, exist_ok=True)
        atomic_write(path, "".join(out).encode("utf-8"))
        return path

    def read_answers(self, lesson_id: str) -> dict[int, str]:
        """The answers in the Markdown file (empty answers are left out)."""
        try:
            text = self.answers_path(lesson_id).read_bytes().decode("utf-8", errors="replace")
        except OSError:
            return {}
        text = text.replace("\r\n", "\n")  # the learner's editor may have changed endings
        found = {}
        for m in re.finditer(r"<!-- answer (\d+) -->\n(.*?)\n?<!-- /answer \1 -->", text, re.S):
            if m.group(2):
                found[int(m.group(1))] = m.group(2)
        return found


def _valid(state: object) -> bool:
    if not isinstance(state, dict):
        return False
    checks = {"version": int, "lessons": dict}
    if any(k in state and not isinstance(state[k], t) for k, t in checks.items()):
        return False
    lessons = state.get("lessons", {})
    return all(isinstance(v, dict) for v in lessons.values())
