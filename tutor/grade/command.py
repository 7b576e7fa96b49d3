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

from tutor.grade import outputs
from tutor.grade.collect import CollectError, collect, guess_lesson, parse_shard, shard
from tutor.grade.record import make_record, not_graded_record
from tutor.text.i18n import t

DEFAULT_OUT = Path("grades")
INTERRUPTED = 130  # as a shell reports a command that SIGINT stopped
TERMINATED = 143  # and one that SIGTERM stopped (a batch system's time limit, `kill`)


class Stopped(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl+C is: every output for the students graded so far."""


def _on_sigterm(signum, frame):
    raise Stopped()


NOT_WRITTEN = 1  # graded, but a file could not be written (a full disk): the table has it all


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


def _finish(
    out: Path, lesson, records: list[dict], lang: str, console, unwritten=(), ahead=None
) -> bool:
    """Write what can be written, show the table, say what could not be. unwritten: records
    whose JSON failed when they were graded (tried again: the child whose writes filled the
    disk may have been cleaned up since). True when every file is on disk."""
    from tutor.grade.report import rich_report
    from tutor.grade.summary import with_similarity

    old = signal.signal(
        signal.SIGINT, signal.SIG_IGN
    )  # a second Ctrl+C must not cut the files short
    try:
        failed = []
        for record in unwritten:
            try:
                outputs.write_record(out, record)
            except OSError as exc:
                name = f"{outputs.safe_name(record['student'])}.json"
                failed.append((out / outputs.STUDENTS / name, exc))
        rep = with_similarity(lesson, records, ahead)
        failed += outputs.write_all(out, lesson, records, lang, rep)
    finally:
        signal.signal(signal.SIGINT, old)
    console.print(rich_report(lesson, rep, lang))
    if not failed:
        console.print(t("grade.written", lang, path=out))
        return True
    _say_not_written(out, failed, lang)
    return False


def _say_not_written(out: Path, failed, lang: str) -> None:
    import errno
    import sys

    from tutor.text.safe_text import one_line

    full = any(exc.errno in (errno.ENOSPC, errno.EDQUOT) for _, exc in failed)
    names = [
        str(path.relative_to(out)) if path.is_relative_to(out) else str(path) for path, _ in failed
    ]
    shown = ", ".join(one_line(n) for n in names[:5]) + (" …" if len(names) > 5 else "")
    reason = failed[0][1].strerror or str(failed[0][1])
    key = "grade.disk_full" if full else "grade.not_written"
    print(
        t(key, lang, path=one_line(out), n=len(failed), files=shown, reason=reason), file=sys.stderr
    )


def run_merge(args, lang: str) -> int:
    from rich.console import Console

    from tutor.model.lesson import get_lesson

    records: dict[str, dict] = {}
    lessons = set()
    for folder in args.merge:
        if not (folder / outputs.STUDENTS).is_dir():
            raise GradeUsage(t("grade.not_outputs", lang, path=folder))
        for record in outputs.read_records(folder):
            known = records.get(record["student"])
            # A student an interrupted shard did not reach, graded by another run: that grade.
            if known is not None and "not graded" not in (known["status"], record["status"]):
                raise GradeUsage(t("grade.duplicate_students", lang, students=record["student"]))
            if known is None or known["status"] == "not graded":
                records[record["student"]] = record
            lessons.add(record["lesson"])
    if not records:
        raise GradeUsage(t("grade.nothing", lang))
    if len(lessons) > 1:
        raise GradeUsage(t("grade.several_lessons", lang, ids=", ".join(sorted(lessons))))
    lesson = get_lesson(lessons.pop())
    out = args.out
    _clear_old(out)
    unwritten = []
    for record in records.values():
        try:
            outputs.write_record(out, record)
        except OSError:
            unwritten.append(record)
    done = _finish(out, lesson, list(records.values()), lang, Console(), unwritten)
    return 0 if done else NOT_WRITTEN


def run_grade(args, lang: str, pick_lesson, guess_one) -> int:
    """pick_lesson(id) and guess_one(path, raw): the CLI's, as `check` uses them."""
    from rich.console import Console

    from tutor.engine.client import DEFAULT_TIMEOUT
    from tutor.grade.run import Batch, default_jobs

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
    unwritten: list[dict] = []  # a full disk: kept here, written at the end if it can be

    def on_graded(sub, raw, steps, seconds):
        record = make_record(
            lesson,
            sub.student,
            sub.path,
            raw,
            steps,
            lang,
            args.seed,
            timeout,
            seconds,
            sub.several,
            sub.picked_by,
        )
        records.append(record)
        try:
            outputs.write_record(out, record)  # at once: an interrupted run keeps it
        except OSError:
            unwritten.append(record)
        progress.advance(task)

    from tutor.grade.ahead import Ahead

    started = time.monotonic()
    ahead = Ahead([s.path for s in subs if s.path is not None and not s.link])
    interrupted: KeyboardInterrupt | None = None
    old_term = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        with _progress(err, lang) as progress:
            task = progress.add_task(t("grade.progress", lang, lesson=lesson.id), total=len(subs))
            try:
                Batch(lesson, timeout, jobs, args.seed).grade(subs, on_graded)
            except KeyboardInterrupt as exc:
                interrupted = exc
        elapsed = time.monotonic() - started
        if interrupted:
            ahead.stop()
            records = _after_stop(out, lesson, subs, records, lang, args.seed, timeout)
    except KeyboardInterrupt as exc:  # a second signal while the batch was closing down
        interrupted = exc
        records = _after_stop(out, lesson, subs, records, lang, args.seed, timeout)
        elapsed = time.monotonic() - started
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the outputs are written whole
    try:
        done = _finish(out, lesson, records, lang, console, unwritten, ahead)
    finally:
        signal.signal(signal.SIGTERM, old_term)
    if interrupted:
        graded = sum(r["status"] != "not graded" for r in records)
        err.print(t("grade.interrupted", lang, done=graded, total=len(subs)))
        return TERMINATED if isinstance(interrupted, Stopped) else INTERRUPTED
    from tutor.grade.report import counted

    rate = len(records) / elapsed if elapsed > 0 else 0.0
    err.print(
        counted("grade.timing", lang, len(records), seconds=f"{elapsed:.1f}", rate=f"{rate:.1f}")
    )
    return 0 if done else NOT_WRITTEN


def _after_stop(out: Path, lesson, subs, records: list[dict], lang, seed, timeout) -> list[dict]:
    """What is on disk, what is graded but not yet on it (a Ctrl+C between a record's file and
    its place in the list keeps it), and a record saying "not graded" for every other student
    (written too: a later --merge with a run that graded them takes that run's grade)."""
    kept = {r["student"]: r for r in records}
    with contextlib.suppress(OSError, ValueError):
        kept.update({r["student"]: r for r in outputs.read_records(out)})
    for sub in subs:
        if sub.student not in kept:
            record = not_graded_record(lesson, sub.student, sub.path, lang, seed, timeout)
            kept[sub.student] = record
            with contextlib.suppress(OSError):
                outputs.write_record(out, record)
    return list(kept.values())


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
