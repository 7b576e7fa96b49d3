"""Finding a class's submissions on disk, and who each one is from. Pure: no torch.

The naming rule (README, "Grading a class"):

- a FILE given on the command line is one student's submission;
- a FOLDER given on the command line is a class: each sub-folder inside it is one student
  (the student id is the sub-folder's name; the folder is the submission: the file graded is
  the one that defines the lesson's functions, see pick.py, and it may import the student's
  other files there; none: status ``no file``), and each ``.py`` file or ``.ipynb`` notebook directly inside it is
  one student too (it imports nothing beside it: those are other students' files);
- a file's student id is its name without ``.py`` and without the lesson's file name or id
  at its start or end (with the ``_``, ``-``, ``.`` or space that joins them):
  ``alice.py``, ``alice_lm3_l3.py``, ``lm3-l3-alice.py`` are all ``alice``. A file named just
  ``lm3_l3.py`` takes the id of the folder it is in.

Hidden entries and ``__pycache__`` are skipped. Two submissions with the same id are a
usage error: a grade must never silently belong to the wrong file.

A student id is a name on disk, so anything: its control characters are written as escapes
(safe_text.one_line) from the start. A symbolic link inside a class (a student's folder or
file) is never followed: it could point at another student's file or the installed reference.
It is a submission of its own whose status says so. Paths named on the command line are the
teacher's and are followed.
"""

from __future__ import annotations

import errno
import os
import re
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tutor.grade.pick import SUFFIXES, pick_file
from tutor.model.lesson import Lesson, all_lessons, get_lesson
from tutor.text.safe_text import one_line

SEPARATORS = "_-. "


class CollectError(ValueError):
    """A usage problem, said as a catalog key and its parameters."""

    def __init__(self, key: str, **params):
        super().__init__(key)
        self.key, self.params = key, params


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path | None  # None: the student's folder holds no file for the lesson
    link: bool = False  # the folder or file is a symbolic link: not followed, not graded
    folder: Path | None = None  # the student's own folder: its files may import each other
    several: tuple[str, ...] = ()  # files in it that define the lesson's names (pick.py)
    picked_by: str = ""  # how `path` was chosen among `several`


LINK_PROBLEM: tuple[str, dict[str, str]] = ("failure.symlink", {})


def read_no_link(sub: Submission) -> tuple[bytes | None, tuple | None]:
    """(raw, problem): the file's bytes, never through a symbolic link (O_NOFOLLOW, so a link
    put in place after collect is refused too); problem, a (key, params) instead."""
    if sub.link:
        return None, LINK_PROBLEM
    if sub.path is None:  # the caller grades a student with no file before this
        return None, ("failure.unreadable", {"reason": "no file"})
    try:
        fd = os.open(sub.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, LINK_PROBLEM
        return None, ("failure.unreadable", {"reason": str(exc.strerror or exc)})
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read(), None
    except OSError as exc:
        return None, ("failure.unreadable", {"reason": str(exc.strerror or exc)})


def _stems(lesson: Lesson) -> list[str]:
    stem = Path(lesson.file_name).stem
    return sorted(
        {stem, lesson.id, stem.replace("_", "-"), lesson.id.replace("-", "_")},
        key=len,
        reverse=True,
    )


def student_id(path: Path, lesson: Lesson | None) -> str:
    """The id a file names: its stem without the lesson's name at its start or end."""
    name = one_line(path.stem)
    lessons = [lesson] if lesson is not None else list(all_lessons())
    for each in lessons:
        for stem in _stems(each):
            low = name.lower()
            if low == stem.lower():
                return _folder_of(path)
            if low.startswith(stem.lower()) and name[len(stem)] in SEPARATORS:
                return name[len(stem) :].strip(SEPARATORS) or _folder_of(path)
            if low.endswith(stem.lower()) and name[-len(stem) - 1] in SEPARATORS:
                return name[: -len(stem)].strip(SEPARATORS) or _folder_of(path)
    return name


def _folder_of(path: Path) -> str:
    """The name of the folder a file is in, links not resolved (a link's target's folder is
    another student's)."""
    return one_line(os.path.basename(os.path.dirname(os.path.abspath(path))))


def _visible(path: Path) -> bool:
    return not path.name.startswith(".") and path.name != "__pycache__"


def _from_folder(folder: Path, lesson: Lesson | None) -> Submission:
    """A student's folder as their submission (pick.py chooses the file)."""
    lessons = [lesson] if lesson is not None else list(all_lessons())
    names = {f for each in lessons for s in each.steps for f in s.functions}
    stems = [stem for each in lessons for stem in _stems(each)]
    chosen = pick_file(folder, names, stems, {each.file_name for each in lessons})
    link = chosen.path is not None and chosen.path.is_symlink()
    return Submission(
        one_line(folder.name), chosen.path, link, folder.absolute(), chosen.several, chosen.by
    )


def collect(paths: list[Path], lesson: Lesson | None) -> list[Submission]:
    """Every submission under the given files and folders, sorted by student id."""
    found: list[Submission] = []
    for path in paths:
        if path.is_file():
            found.append(Submission(student_id(path, lesson), path))
        elif path.is_dir():
            for entry in sorted(filter(_visible, path.iterdir())):
                if entry.is_symlink():
                    if entry.suffix in SUFFIXES or entry.is_dir():
                        sid = one_line(entry.name) if entry.is_dir() else student_id(entry, lesson)
                        found.append(Submission(sid, entry, link=True))
                elif entry.is_dir():
                    found.append(_from_folder(entry, lesson))
                elif entry.is_file() and entry.suffix in SUFFIXES:
                    found.append(Submission(student_id(entry, lesson), entry))
        else:
            raise CollectError("grade.no_such_path", path=path)
    counts = Counter(s.student for s in found)
    twice = sorted(student for student, n in counts.items() if n > 1)
    if twice:
        raise CollectError("grade.duplicate_students", students=", ".join(twice))
    return sorted(found, key=lambda s: s.student)


def guess_lesson(submissions: list[Submission], guess_one) -> Lesson:
    """The lesson of the class: the one its files' names or contents point to (guess_one: the
    CLI's guess for one file, as `check` makes it). Files of two lessons are a usage error."""
    seen: set[str] = set()
    for sub in submissions:
        if sub.path is None:
            continue
        raw, problem = read_no_link(sub)
        if raw is None:
            continue
        by_name = next(
            (
                lesson
                for lesson in all_lessons()
                if any(s.lower() in sub.path.name.lower() for s in _stems(lesson))
            ),
            None,
        )
        lesson = by_name or guess_one(sub.path, raw)
        if lesson is not None:
            seen.add(lesson.id)
    if not seen:
        raise CollectError("grade.no_lesson")
    if len(seen) > 1:
        raise CollectError("grade.several_lessons", ids=", ".join(sorted(seen)))
    return get_lesson(seen.pop())


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' as (K, N), 1 ≤ K ≤ N."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise CollectError("grade.bad_shard", shard=text)
    return int(m.group(1)), int(m.group(2))


def in_shard(student: str, k: int, n: int) -> bool:
    """A stable slice: by a hash of the student id (CRC-32, the same on every machine and
    Python), so a student stays in their shard whoever else submits."""
    return zlib.crc32(student.encode("utf-8")) % n == k - 1


def shard(submissions: list[Submission], k: int, n: int) -> list[Submission]:
    return [s for s in submissions if in_shard(s.student, k, n)]
