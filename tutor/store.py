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
- The reflection answers are a Markdown file the learner may edit too: the app
  saves one answer at a time into the file as it is on disk (save_answer).

Stdlib only.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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


def atomic_write(path: Path, data: bytes, mode: int | None = None,
                 still: Callable[[], bool] | None = None) -> bool:
    """Replace `path` with `data` so readers see the old bytes or the new, never half.

    `still`, if given, is asked just before the rename (after the data is on disk); if it
    says False, nothing is replaced and False is returned.
    """
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
        if still is not None and not still():
            os.unlink(tmp)
            return False
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
    return True


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

    def write_answers(self, lesson_id: str, answers: dict[int, str], questions: list[str],
                      lang: str = "en") -> Path:
        """Write the answers as Markdown the learner can read and edit, replacing the file.

        Keys are 0-based question indexes. Each answer sits between
        `<!-- answer N -->` and `<!-- /answer N -->` markers so it reads back
        exactly, whatever Markdown it holds. The app uses save_answer, which keeps
        what the learner wrote in the file.
        """
        path = self.answers_path(lesson_id)
        self.workspace.mkdir(parents=True, exist_ok=True)
        atomic_write(path, answers_file(lesson_id, answers, questions, lang).encode("utf-8"))
        return path

    def read_answers(self, lesson_id: str) -> dict[int, str]:
        """The answers in the Markdown file (empty answers are left out)."""
        try:
            raw = self.answers_path(lesson_id).read_bytes()
        except OSError:
            return {}
        return parse_answers(raw.decode("utf-8", errors="replace"))

    def save_answer(self, lesson_id: str, index: int, text: str, *, base: str, questions: list[str],
                    both: Callable[[str, str], str], lang: str = "en") -> AnswerSaved:
        """Put the app's answer to question `index` into the answers file without losing what
        the learner wrote in the file meanwhile (its note asks them to write between the markers).

        The file is read again just before the write, and once more just before the rename
        (its bytes, not its mtime: no reliance on file-system events or NFS attribute caches);
        if it changed in between, the merge starts over. Only this answer's lines are
        replaced: every other byte of the file stays as the learner left it.

        `base` is the answer as the app showed it when the learner started writing. If the
        file still holds `base`, the app's text goes in; if the app's text is `base` (nothing
        changed in the app), the file's text stays; if both changed, both(file's, app's) goes in.
        """
        path = self.answers_path(lesson_id)
        if path.is_symlink():
            path = path.resolve()  # the learner linked it elsewhere: write there, keep the link
        with self._locked():
            for _ in range(_MERGE_TRIES):
                try:
                    raw: bytes | None = path.read_bytes()
                except FileNotFoundError:
                    raw = None
                # surrogateescape: bytes that are not UTF-8 are written back as they were
                old = "" if raw is None else raw.decode("utf-8", errors="surrogateescape")
                theirs = parse_answers(old).get(index, "")
                kept_both = False
                if theirs in (base, text) or not theirs.strip():  # (emptied in the file: the app's wins)
                    new = text
                elif text == base or not text.strip():
                    new = theirs
                else:
                    new, kept_both = both(theirs, text), True
                if new == theirs:
                    return AnswerSaved(path, parse_answers(old), kept_both, written=False)
                if not old.strip():
                    merged = answers_file(lesson_id, {index: new}, questions, lang)
                else:
                    merged = put_answer(old, index, new, questions, lang)
                path.parent.mkdir(parents=True, exist_ok=True)
                data = merged.encode("utf-8", errors="surrogateescape")
                if atomic_write(path, data, _mode_of(path), still=lambda: _bytes_of(path) == raw):
                    return AnswerSaved(path, parse_answers(merged), kept_both, written=True)
                time.sleep(0.02)  # an editor is writing the file right now: read it again
        raise OSError(errno.EBUSY, f"{path.name} kept changing while it was being saved")


_MERGE_TRIES = 20
# An answer between its markers; \r?\n: the learner's editor may have changed the line endings.
_ANSWER = re.compile(r"<!-- answer (\d+) -->\r?\n(.*?)(?:\r?\n)?<!-- /answer \1 -->", re.S)


@dataclass(frozen=True)
class AnswerSaved:
    path: Path
    answers: dict[int, str]  # the file's answers now
    kept_both: bool  # the file and the app had both changed this answer: both are in it
    written: bool


def parse_answers(text: str) -> dict[int, str]:
    """{index: answer} of a Markdown answers file (empty answers left out; for the same
    index twice, the last one, as put_answer replaces)."""
    found = {}
    for m in _ANSWER.finditer(text):
        found[int(m.group(1))] = m.group(2).replace("\r\n", "\n")
    return {i: a for i, a in found.items() if a}


def _section(i: int, questions: list[str], answer: str, nl: str = "\n", lang: str = "en") -> str:
    from .i18n import t

    out = f"\n## {t('store.answers_question', lang, n=i + 1)}\n\n"
    if i < len(questions):
        out += "".join(f"> {line}".rstrip() + "\n" for line in questions[i].splitlines()) + "\n"
    return (out + _block(i, answer)).replace("\n", nl)


def _block(i: int, answer: str) -> str:
    return f"<!-- answer {i} -->\n{answer}\n<!-- /answer {i} -->\n"


def answers_file(lesson_id: str, answers: dict[int, str], questions: list[str], lang: str = "en") -> str:
    """The answers file, its headings and its note in the learner's language (the markers, which
    parse_answers reads, are the same in every language)."""
    from .i18n import t

    out = [f"# {t('store.answers_title', lang, lesson=lesson_id)}\n\n",
           f"<!-- {t('store.answers_note', lang)} -->\n"]
    for i in sorted(set(range(len(questions))) | set(answers)):
        out.append(_section(i, questions, answers.get(i, ""), lang=lang))
    return "".join(out)


def put_answer(text: str, index: int, answer: str, questions: list[str], lang: str = "en") -> str:
    """`text` with answer `index` replaced (the last block of that index, which is the one
    parse_answers reads), or added at the end if its markers are gone; nothing else changes."""
    nl = "\r\n" if "\r\n" in text else "\n"
    answer = answer.replace("\r\n", "\n")
    blocks = [m for m in _ANSWER.finditer(text) if int(m.group(1)) == index]
    if blocks:
        m = blocks[-1]
        block = _block(index, answer).replace("\n", nl)[: -len(nl)]  # the text after it keeps its own newline
        return text[: m.start()] + block + text[m.end():]
    if not text.endswith("\n"):
        text += nl
    return text + _section(index, questions, answer, nl, lang)


def _bytes_of(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _mode_of(path: Path) -> int | None:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return None  # a new file: the umask's mode


def _valid(state: object) -> bool:
    if not isinstance(state, dict):
        return False
    checks = {"version": int, "lessons": dict}
    if any(k in state and not isinstance(state[k], t) for k, t in checks.items()):
        return False
    lessons = state.get("lessons", {})
    return all(isinstance(v, dict) for v in lessons.values())
