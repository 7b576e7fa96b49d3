"""`attn-tutor dev check`: proves a lesson for its author, as rustlings' `dev check` does.

Each check gives one line: the lesson file's schema, its texts and hints in both languages,
the message keys its checks can use (found statically) in both catalogs, the catalogs key for
key, then runs through the real worker: the starter is `todo` on every checked step, the
reference passes each, every known mistake in mistakes.toml gives on every checked step what it
says (and how many of them each check catches), warmup.py (if any) fails every checked step and
copies no reference line, and the experiment steps run on the reference and draw no table wider
than the app's text at 80×24. Torch-free: it runs in the UI's process; only the worker imports
torch.
"""

from __future__ import annotations

from pathlib import Path

from tutor import toml
from tutor.cli.dev_findings import FORMAT_VERSION, Line
from tutor.cli.dev_keys import check_catalogs, check_keys
from tutor.cli.dev_lesson_file import check_files, check_hints, check_texts, schema_problems
from tutor.cli.dev_mistakes import load_mistakes
from tutor.cli.dev_runs import run_checks
from tutor.model.lesson import LANGS, Lesson, load_lesson

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
    for lang in LANGS:  # a catalog that does not parse: nothing can be said in its words
        try:
            lesson.messages(lang)
        except (OSError, ValueError) as exc:  # TOMLDecodeError is a ValueError
            return [Line(False, "dev.bad_toml", {"path": f"messages.{lang}.toml", "detail": exc})]
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
