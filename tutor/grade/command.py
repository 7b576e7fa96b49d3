"""`attn-tutor grade`: the command, from its arguments to the files. Imports no torch.

attn-tutor grade SUBMISSIONS… [--lesson ID] [--out DIR] [--jobs N] [--timeout S]
                 [--lang en|zh] [--seed N] [--shard K/N]
attn-tutor grade --merge DIR… [--out DIR] [--lang en|zh]
"""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path

from ..i18n import t
from . import outputs
from .collect import CollectError, collect, guess_lesson, parse_shard, shard
from .record import make_record

DEFAULT_OUT = Path("grades")
INTERRUPTED = 130  # as a shell reports a command that SIGINT stopped


class GradeUsage(Exception):
    """Bad usage, already said in the reader's language."""


def _usage(exc: CollectError, lang: str) -> GradeUsage:
    return GradeUsage(t(exc.key, lang, **exc.params))


def add_parser(sub, lang: str, lesson_ids: str) -> None:
    g = sub.add_parser(
        "grade", help=t("grade.help", lang), description=t("grade.description", lang)
    )
    g.add_argument(
        "submissions",
        nargs="*",
        type=Path,
        metavar="SUBMISSIONS",
        help=t("grade.opt_submissions", lang),
    )
    g.add_argument(
        "--lesson",
        dest="grade_lesson",
        metavar="ID",
        help=t("cli.opt_lesson", lang, ids=lesson_ids),
    )
    g.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, metavar="DIR", help=t("grade.opt_out", lang)
    )
    g.add_argument("--jobs", type=int, metavar="N", help=t("grade.opt_jobs", lang))
    g.add_argument(
        "--timeout",
        dest="grade_timeout",
        type=float,
        metavar="S",
        help=t("grade.opt_timeout", lang),
    )
    g.add_argument("--lang", dest="grade_lang", choices=["en", "zh"], help=t("cli.opt_lang", lang))
    g.add_argument("--seed", type=int, default=0, metavar="N", help=t("grade.opt_seed", lang))
    g.add_argument("--shard", metavar="K/N", help=t("grade.opt_shard", lang))
    g.add_argument("--merge", nargs="+", type=Path, metavar="DIR", help=t("grade.opt_merge", lang))


def _clear_old(out: Path) -> None:
    """A new run's folder holds this run's students only: the records and results.json files
    of an earlier run into it would be merged with them. Only our own files go."""
    for path in (out / outputs.STUDENTS).glob("*.json"):
        path.unlink()
    for path in (out / "gradescope").glob("*/results.json"):
        path.unlink()
        with contextlib.suppress(OSError):
            path.parent.rmdir()


def _finish(out: Path, lesson, records: list[dict], lang: str, console) -> None:
    from .report import class_report, rich_report

    old = signal.signal(
        signal.SIGINT, signal.SIG_IGN
    )  # a second Ctrl+C must not cut the files short
    try:
        outputs.write_all(out, lesson, records, lang)
    finally:
        signal.signal(signal.SIGINT, old)
    console.print(rich_report(lesson, class_report(lesson, records), lang))
    console.print(t("grade.written", lang, path=out))


def run_merge(args, lang: str) -> int:
    from rich.console import Console

    from ..lesson import get_lesson

    records: dict[str, dict] = {}
    lessons = set()
    for folder in args.merge:
        if not (folder / outputs.STUDENTS).is_dir():
            raise GradeUsage(t("grade.not_outputs", lang, path=folder))
        for record in outputs.read_records(folder):
            if record["student"] in records:
                raise GradeUsage(t("grade.duplicate_students", lang, students=record["student"]))
            records[record["student"]] = record
            lessons.add(record["lesson"])
    if not records:
        raise GradeUsage(t("grade.nothing", lang))
    if len(lessons) > 1:
        raise GradeUsage(t("grade.several_lessons", lang, ids=", ".join(sorted(lessons))))
    lesson = get_lesson(lessons.pop())
    out = args.out
    _clear_old(out)
    for record in records.values():
        outputs.write_record(out, record)
    _finish(out, lesson, list(records.values()), lang, Console())
    return 0


def run_grade(args, lang: str, pick_lesson, guess_one) -> int:
    """pick_lesson(id) and guess_one(path, raw): the CLI's, as `check` uses them."""
    from rich.console import Console

    from ..runner.client import DEFAULT_TIMEOUT
    from .run import Batch, default_jobs

    if args.merge:
        if args.submissions:
            raise GradeUsage(t("grade.merge_and_paths", lang))
        return run_merge(args, lang)
    if not args.submissions:
        raise GradeUsage(t("grade.nothing", lang))
    jobs = args.jobs if args.jobs is not None else default_jobs()
    timeout = args.grade_timeout or args.timeout or DEFAULT_TIMEOUT
    if jobs < 1 or timeout <= 0:
        raise GradeUsage(t("grade.bad_number", lang))
    try:
        lesson = pick_lesson(args.grade_lesson) if args.grade_lesson else None
        subs = collect(args.submissions, lesson)
        if lesson is None:
            lesson = guess_lesson(subs, guess_one)
            subs = collect(args.submissions, lesson)  # the student ids by this lesson's file name
        if args.shard:
            subs = shard(subs, *parse_shard(args.shard))
    except CollectError as exc:
        raise _usage(exc, lang) from None
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    _clear_old(out)
    console, err = Console(), Console(stderr=True)
    records: list[dict] = []

    def on_graded(sub, raw, steps, seconds):
        record = make_record(
            lesson, sub.student, sub.path, raw, steps, lang, args.seed, timeout, seconds
        )
        outputs.write_record(out, record)  # at once: an interrupted run keeps it
        records.append(record)
        progress.advance(task)

    started = time.monotonic()
    interrupted = False
    with _progress(err, lang) as progress:
        task = progress.add_task(t("grade.progress", lang, lesson=lesson.id), total=len(subs))
        try:
            Batch(lesson, timeout, jobs, args.seed).grade(subs, on_graded)
        except KeyboardInterrupt:
            interrupted = True
    elapsed = time.monotonic() - started
    if interrupted:
        # What is on disk: a Ctrl+C between a record's file and its place in the list keeps it.
        records = outputs.read_records(out)
    _finish(out, lesson, records, lang, console)
    if interrupted:
        err.print(t("grade.interrupted", lang, done=len(records), total=len(subs)))
        return INTERRUPTED
    rate = len(records) / elapsed if elapsed > 0 else 0.0
    err.print(t("grade.timing", lang, n=len(records), seconds=f"{elapsed:.1f}", rate=f"{rate:.1f}"))
    return 0


def _progress(console, lang: str):
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task):
            speed = task.finished_speed or task.speed
            return Text(t("grade.rate", lang, rate=f"{speed:.1f}" if speed else "–"))

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        Rate(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
