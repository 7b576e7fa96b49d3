"""Progress and answers, kept in the workspace and never lost.

State lives in attn-lab/.attn-tutor/state.json:
    {"version": 1, "lang": "en"|"zh"|None, "lesson": id|None,
     "lessons": {id: {"step": step_id, "status": {step_id: status}, "hints": {step_id: n}}}}

- Every write is atomic (temp file in the same folder, fsync, rename, fsync the
  folder): a crash or kill -9 leaves the old file or the new one, never half.
- update() is a read-modify-write under an flock, so two tutors open on one
  workspace do not drop each other's changes.
- A corrupt or unreadable state file is moved aside, not overwritten, and the
  app is told (self.notice) so it can say where the old file went.
- The answers to a lesson's questions are one Markdown file per lesson, a section per step
  with questions, that the learner may edit too: the app saves one answer at a time into the
  file as it is on disk (save_answer). Files from before the sections (markers without a step
  id) are read as the answers of the lesson's first step with questions.

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
from datetime import date
from pathlib import Path
from typing import Any, TypeGuard

from tutor.model.results import Message

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no cross-process lock
    fcntl = None  # type: ignore[assignment]

STATE_DIR = ".attn-tutor"
VERSION = 1
_TMP_PREFIX = ".tmp-"

# The state file's JSON object: version, lang, lesson, and lessons by id (see fresh_state).
State = dict[str, Any]


def fresh_state() -> State:
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


def atomic_write(
    path: Path, data: bytes, mode: int | None = None, still: Callable[[], bool] | None = None
) -> bool:
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


def stamp(now: date | float | None = None) -> str:
    """YYYYmmdd-HHMMSS for a datetime, seconds since the epoch, or now (local time)."""
    if isinstance(now, date):  # a datetime too
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

    def _read(self) -> State:
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

    def _set_aside(self) -> State:
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

    def peek(self) -> State:
        """The saved state, or a fresh one if there is none or it is bad. Touches
        nothing on disk (no lock, no folder, nothing moved): for `--help` and the like."""
        try:
            state = json.loads(self.path.read_bytes().decode("utf-8"))
        except (OSError, ValueError):
            return fresh_state()
        return {**fresh_state(), **state} if _valid(state) else fresh_state()

    def load(self) -> State:
        """The saved state. Never raises for a corrupt or unreadable file (see notice)."""
        with self._locked():
            return self._read()

    def update(self, fn: Callable[[State], None]) -> State:
        """Apply `fn` to the latest state on disk and save it atomically; returns the new state.

        If `fn` raises, nothing is written. OSError from writing (full disk, read-only
        workspace) propagates: the app must say the progress was not saved.
        """
        with self._locked():
            state = self._read()
            before = copy.deepcopy(state)
            fn(state)
            # Most verdicts change nothing here: no write then, and no two fsyncs (slow on NFS).
            if state != before or not self.path.exists():
                data = json.dumps(state, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
                self._clean_temps()
                atomic_write(self.path, data, 0o644)
            return copy.deepcopy(state)

    # -- answers to a lesson's questions ------------------------------------

    def answers_path(self, sheet: AnswerSheet | str) -> Path:
        name = sheet.name if isinstance(sheet, AnswerSheet) else sheet
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise ValueError(f"bad answers file name {name!r}")
        return self.workspace / name

    def write_answers(self, sheet: AnswerSheet, answers: dict[str, dict[int, str]]) -> Path:
        """Write the answers as Markdown the learner can read and edit, replacing the file.

        answers: step id -> {0-based question index: text}. Each answer sits between
        `<!-- answer STEP N -->` and `<!-- /answer STEP N -->` markers so it reads back
        exactly, whatever Markdown it holds. The app uses save_answer, which keeps what the
        learner wrote in the file.
        """
        path = self.answers_path(sheet)
        self.workspace.mkdir(parents=True, exist_ok=True)
        atomic_write(path, answers_file(sheet, answers).encode("utf-8"))
        return path

    def read_answers(self, sheet: AnswerSheet) -> dict[str, dict[int, str]]:
        """The answers in the Markdown file, by step (empty answers are left out)."""
        try:
            raw = self.answers_path(sheet).read_bytes()
        except OSError:
            return {}
        return parse_answers(raw.decode("utf-8", errors="replace"), sheet.legacy_step)

    def save_answer(
        self,
        sheet: AnswerSheet,
        step: str,
        index: int,
        text: str,
        *,
        base: str,
        both: Callable[[str, str], str],
    ) -> AnswerSaved:
        """Put the app's answer to question `index` of `step` into the answers file without
        losing what the learner wrote in the file meanwhile (it says "Edit answers between the
        markers").

        The file is read again just before the write, and once more just before the rename
        (its bytes, not its mtime: no reliance on file-system events or NFS attribute caches);
        if it changed in between, the merge starts over. Only this answer's lines are
        replaced: every other byte of the file stays as the learner left it.

        `base` is the answer as the app showed it when the learner started writing. If the
        file still holds `base`, the app's text goes in; if the app's text is `base` (nothing
        changed in the app), the file's text stays; if both changed, both(file's, app's) goes in.
        """
        path = self.answers_path(sheet)
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
                found = parse_answers(old, sheet.legacy_step)
                theirs = found.get(step, {}).get(index, "")
                kept_both = False
                if (
                    theirs in (base, text) or not theirs.strip()
                ):  # (emptied in the file: the app's wins)
                    new = text
                elif text == base or not text.strip():
                    new = theirs
                else:
                    new, kept_both = both(theirs, text), True
                if new == theirs:
                    return AnswerSaved(path, found, kept_both, written=False)
                if not old.strip():
                    merged = answers_file(sheet, {step: {index: new}})
                else:
                    merged = put_answer(old, sheet, step, index, new)
                path.parent.mkdir(parents=True, exist_ok=True)
                data = merged.encode("utf-8", errors="surrogateescape")

                def unchanged(raw: bytes | None = raw) -> bool:  # this turn's raw, bound now
                    return _bytes_of(path) == raw

                if atomic_write(path, data, _mode_of(path), still=unchanged):
                    return AnswerSaved(
                        path, parse_answers(merged, sheet.legacy_step), kept_both, written=True
                    )
                time.sleep(0.02)  # an editor is writing the file right now: read it again
        raise OSError(errno.EBUSY, f"{path.name} kept changing while it was being saved")


_MERGE_TRIES = 20
# An answer between its markers; \r?\n: the learner's editor may have changed the line endings.
# The step id is new (a lesson's questions may sit on several steps): a marker without one is a
# file from before, and its answers belong to the sheet's legacy step.
_ANSWER = re.compile(
    r"<!-- answer (?P<step>(?:[\w.-]+ )?)(?P<i>\d+) -->\r?\n(?P<text>.*?)(?:\r?\n)?"
    r"<!-- /answer (?P=step)(?P=i) -->",
    re.S,
)


@dataclass(frozen=True)
class Section:
    """One step's questions in the answers file."""

    step: str
    heading: str  # the step's title, in the language the file is written in
    questions: tuple[str, ...]


@dataclass(frozen=True)
class AnswerSheet:
    """A lesson's answers file: its name, its headings (already in the learner's language) and
    the steps with questions, in the lesson's order. The store knows no lesson: the app makes it."""

    name: str
    title: str = "Answers"
    note: str = "Written by attn-tutor. Edit answers between the markers."
    sections: tuple[Section, ...] = ()
    question: str = "Question {n}"  # the heading of each question; {n} is its number
    # Where answers with a marker without a step id belong (the one-step files written before).
    legacy_step: str = ""

    def section(self, step: str) -> Section:
        return next((s for s in self.sections if s.step == step), Section(step, step, ()))


@dataclass(frozen=True)
class AnswerSaved:
    path: Path
    answers: dict[str, dict[int, str]]  # the file's answers now, by step
    kept_both: bool  # the file and the app had both changed this answer: both are in it
    written: bool


def _blocks(text: str, legacy_step: str) -> Iterator[tuple[str, int, re.Match[str]]]:
    """(step, index, match) of every answer block in text, in order."""
    for m in _ANSWER.finditer(text):
        yield (m.group("step").strip() or legacy_step), int(m.group("i")), m


def parse_answers(text: str, legacy_step: str = "") -> dict[str, dict[int, str]]:
    """{step: {index: answer}} of a Markdown answers file (empty answers left out; for the same
    question twice, the last one, as put_answer replaces)."""
    found: dict[str, dict[int, str]] = {}
    for step, i, m in _blocks(text, legacy_step):
        found.setdefault(step, {})[i] = m.group("text").replace("\r\n", "\n")
    return {
        step: kept for step, got in found.items() if (kept := {i: a for i, a in got.items() if a})
    }


def _question(sheet: AnswerSheet, step: str, i: int, answer: str, nl: str = "\n") -> str:
    questions = sheet.section(step).questions
    out = f"\n### {sheet.question.format(n=i + 1)}\n\n"
    if i < len(questions):
        out += "".join(f"> {line}".rstrip() + "\n" for line in questions[i].splitlines()) + "\n"
    return (out + _block(step, i, answer)).replace("\n", nl)


def _heading(sheet: AnswerSheet, step: str, nl: str = "\n") -> str:
    return f"\n## {sheet.section(step).heading}\n".replace("\n", nl)


def _block(step: str, i: int, answer: str) -> str:
    return f"<!-- answer {step} {i} -->\n{answer}\n<!-- /answer {step} {i} -->\n"


def answers_file(sheet: AnswerSheet, answers: dict[str, dict[int, str]]) -> str:
    out = [f"# {sheet.title}\n\n", f"<!-- {sheet.note} -->\n"]
    steps = [s.step for s in sheet.sections] + sorted(
        set(answers) - {s.step for s in sheet.sections}
    )
    for step in steps:
        given = answers.get(step, {})
        out.append(_heading(sheet, step))
        for i in sorted(set(range(len(sheet.section(step).questions))) | set(given)):
            out.append(_question(sheet, step, i, given.get(i, "")))
    return "".join(out)


def put_answer(text: str, sheet: AnswerSheet, step: str, index: int, answer: str) -> str:
    """`text` with answer `index` of `step` replaced (the last block of that question, which is
    the one parse_answers reads; a block in the format from before gets the step in its
    markers), or added after the step's last answer, or at the end with the step's heading if
    the file has none of its answers; nothing else changes."""
    nl = "\r\n" if "\r\n" in text else "\n"
    answer = answer.replace("\r\n", "\n")
    blocks = [(s, i, m) for s, i, m in _blocks(text, sheet.legacy_step) if s == step]
    same = [m for _, i, m in blocks if i == index]
    if same:
        m = same[-1]
        block = _block(step, index, answer).replace("\n", nl)[
            : -len(nl)
        ]  # the text after it keeps its own newline
        return text[: m.start()] + block + text[m.end() :]
    if blocks:  # under the step's other answers
        end = blocks[-1][2].end()
        if text.startswith(nl, end):
            end += len(nl)
        else:
            text = text[:end] + nl + text[end:]
            end += len(nl)
        return text[:end] + _question(sheet, step, index, answer, nl) + text[end:]
    if not text.endswith("\n"):
        text += nl
    return text + _heading(sheet, step, nl) + _question(sheet, step, index, answer, nl)


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


def _valid(state: object) -> TypeGuard[State]:
    if not isinstance(state, dict):
        return False
    checks = {"version": int, "lessons": dict}
    if any(k in state and not isinstance(state[k], t) for k, t in checks.items()):
        return False
    lessons = state.get("lessons", {})
    return all(isinstance(v, dict) for v in lessons.values())
