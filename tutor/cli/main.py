"""Command line: `attn-tutor` opens the app; `check`, `list` and `reset` work without it."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

from tutor.cli.parser import build_parser
from tutor.model.lesson import (
    LESSONS_ENV,
    all_lessons,
    get_lesson,
    lesson_for_file,
    lesson_for_source,
)
from tutor.text.i18n import choose, t


class UsageError(Exception):
    pass


def _peek_lang(argv: list[str]) -> str:
    """The language for --help and errors, before argparse has run."""
    cli = None
    for i, arg in enumerate(argv):
        if arg == "--lang" and i + 1 < len(argv):
            cli = argv[i + 1]
        elif arg.startswith("--lang="):
            cli = arg.split("=", 1)[1]
    return choose(cli, _remembered_lang(Path.cwd()))


def _peek_lessons(argv: list[str]) -> list[str]:
    """--lessons DIR, before anything lists the lessons: put in the environment, so that the
    app, `check` and the worker they start all see the same lessons. The folders that are missing."""
    dirs = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--lessons"]
    dirs += [arg.split("=", 1)[1] for arg in argv if arg.startswith("--lessons=")]
    if not dirs:
        return []
    resolved = [str(Path(d).expanduser().resolve()) for d in dirs]
    before = [p for p in os.environ.get(LESSONS_ENV, "").split(os.pathsep) if p]
    os.environ[LESSONS_ENV] = os.pathsep.join(resolved + before)
    all_lessons.cache_clear()
    from tutor.text.i18n import catalog

    catalog.cache_clear()
    return [d for d, r in zip(dirs, resolved, strict=False) if not Path(r).is_dir()]


def _remembered_lang(cwd: Path) -> str | None:
    try:
        from tutor.workspace.files import workspace_dir
        from tutor.workspace.store import Store

        return Store(workspace_dir(cwd)).peek().get("lang")
    except Exception:
        return None  # no workspace yet, or an unreadable one: the app reports that, not --help


def _state(cwd: Path) -> dict:
    """The workspace's progress as it is, {} without one (read only: never set aside or made)."""
    try:
        from tutor.workspace.files import workspace_dir
        from tutor.workspace.store import Store

        return Store(workspace_dir(cwd)).peek()
    except Exception:
        return {}


def _answers(cwd: Path, lesson) -> dict[str, dict[int, str]]:
    """A lesson's answers file in the workspace, by step ({} without one)."""
    try:
        from tutor.workspace.files import workspace_dir
        from tutor.workspace.store import AnswerSheet, Store

        asked = [s.id for s in lesson.steps if s.questions]
        sheet = AnswerSheet(name=lesson.answers_file, legacy_step=asked[0] if asked else "")
        return Store(workspace_dir(cwd)).read_answers(sheet)
    except (OSError, ValueError):
        return {}


def _lesson(lesson_id: str | None, lang: str):
    from tutor.workspace.files import DEFAULT_LESSON

    try:
        return get_lesson(lesson_id or DEFAULT_LESSON)
    except KeyError:
        ids = t("cli.ids_sep", lang).join(lesson.id for lesson in all_lessons())
        raise UsageError(t("cli.unknown_lesson", lang, lesson=lesson_id, ids=ids)) from None


def _folder_lesson(lesson_id: str | None, lang: str):
    """The lesson `check` (without FILE), `solution` and `reset` work on: --lesson, else this
    folder's, as the app chooses it (workspace.files.folder_lesson)."""
    from tutor.workspace.files import folder_lesson

    cwd = Path.cwd()
    return _lesson(lesson_id or folder_lesson(cwd, _state(cwd).get("lesson"), all_lessons()), lang)


def _guess_lesson(path: Path, raw: bytes):
    """By file name, else by the functions the file defines."""
    from tutor.engine.client import MAX_SOURCE_BYTES
    from tutor.workspace.notebook import is_notebook

    if is_notebook(path):  # by the lesson's file name with .ipynb, else by its code cells
        from tutor.workspace.learner_file import learner_text

        named = lesson_for_file(Path(path).with_suffix(".py"))
        return named or lesson_for_source(learner_text(path, raw).text or "")
    head = raw[:MAX_SOURCE_BYTES]  # a file past the limit is not run: its name or head will do
    return lesson_for_file(path) or lesson_for_source(head.decode("utf-8", errors="replace"))


def cmd_check(args, lang: str) -> int:
    from tutor.engine.client import DEFAULT_TIMEOUT, WorkerGone, check_file

    path = args.file
    if path is None:  # this folder's lesson, and its file
        from tutor.workspace.files import solution_path

        lesson = _folder_lesson(args.check_lesson, lang)
        path = solution_path(Path.cwd(), lesson)
    else:  # --lesson, else the lesson is told from the file (below)
        lesson = _lesson(args.check_lesson, lang) if args.check_lesson else None
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise UsageError(
            t("cli.unreadable", lang, path=path, reason=t("ui.reason_directory", lang))
        ) from None
    except FileNotFoundError:
        raise UsageError(t("cli.missing_file", lang, path=path)) from None
    except OSError as exc:
        raise UsageError(t("cli.unreadable", lang, path=path, reason=exc.strerror or exc)) from None
    if lesson is None:
        lesson = _guess_lesson(path, raw)
        if lesson is None:
            raise UsageError(t("cli.no_lesson", lang, path=path))
    timeout = args.check_timeout or args.timeout or DEFAULT_TIMEOUT
    try:
        steps = check_file(lesson, path, raw, timeout=timeout)
    except WorkerGone as exc:
        from tutor.text.safe_text import visible

        return _complain(3, t("cli.worker_failed", lang, detail=visible(exc)))
    from tutor.engine.confine.platform_probe import describe_off, probe
    from tutor.text.verdict_text import check_object, summary_counts

    passed, total = summary_counts(steps)
    _exit_code_if_the_reader_leaves[0] = 0 if passed == total else 1
    off = (
        probe().off()
    )  # the worker ran with what this probe finds (same machine, same environment)
    if args.json:
        from tutor.text.safe_text import json_text  # DEL, C1 and bidi controls escaped too

        print(json_text(check_object(lesson, path, steps, lang, off)))
    else:
        from tutor.cli.check_text import print_report

        print_report(lesson, path, steps, lang)
        if off:
            print()
            print(describe_off(off, lang))
    return 0 if passed == total else 1


def cmd_grade(args, lang: str) -> int:
    from tutor.grade.command import GradeUsage, run_grade

    try:
        return run_grade(args, lang, lambda lesson_id: _lesson(lesson_id, lang), _guess_lesson)
    except GradeUsage as exc:
        raise UsageError(str(exc)) from None


def cmd_list(args, lang: str) -> int:
    from tutor.model.progress import answered_count, question_count, step_status
    from tutor.text.verdict_text import MARKS

    lessons = all_lessons()
    progress = _state(Path.cwd()).get("lessons", {})
    answers = {lesson.id: _answers(Path.cwd(), lesson) for lesson in lessons}

    def status(lesson, s) -> str | None:
        run = progress.get(lesson.id, {}).get("status", {}).get(s.id)
        return step_status(s, run, answers[lesson.id].get(s.id, {}))

    def asked(lesson, s) -> dict:
        """A step with questions: how many have an answer (what its status stands for)."""
        if not s.questions:
            return {}
        done = answered_count(s, answers[lesson.id].get(s.id, {}))
        return {"answered": done, "questions": question_count(s)}

    def passed(lesson) -> int:
        return sum(status(lesson, s) == "pass" for s in lesson.checked_steps)

    if args.json:
        print(
            json.dumps(
                {
                    "lessons": [
                        {
                            "id": lesson.id,
                            "title": lesson.title[lang],
                            "file": lesson.file_name,
                            "passed": passed(lesson),
                            "checked": len(lesson.checked_steps),
                            "steps": [
                                {
                                    "id": s.id,
                                    "kind": s.kind,
                                    "title": s.title[lang],
                                    "status": status(lesson, s),
                                    **asked(lesson, s),
                                }
                                for s in lesson.steps
                            ],
                        }
                        for lesson in lessons
                    ]
                },
                ensure_ascii=False,
            )
        )
        return 0
    for lesson in lessons:
        print(
            f"{lesson.id}  {lesson.title[lang]}  (attn-lab/{lesson.file_name})  "
            + t("cli.list_progress", lang, passed=passed(lesson), total=len(lesson.checked_steps))
        )
        for s in lesson.steps:
            kind = "" if s.checked else f"  [{t('kind.' + s.kind, lang)}]"
            print(f"  {MARKS.get(status(lesson, s) or '', '·')} {s.id:<12} {s.title[lang]}{kind}")
    return 0


def cmd_solution(args, lang: str) -> int:
    from tutor.workspace.files import solution_path
    from tutor.workspace.solution import passed, solution_diff, step_solution

    state = _state(Path.cwd())
    lesson = _folder_lesson(args.solution_lesson, lang)
    if args.step not in lesson.step_ids():
        raise UsageError(
            t("cli.unknown_step", lang, step=args.step, steps=", ".join(lesson.step_ids()))
        )
    if not lesson.step(args.step).functions:
        raise UsageError(t("cli.solution_none", lang, step=args.step))
    if not (args.force or passed(state, lesson.id, args.step)):
        return _complain(1, t("cli.solution_locked", lang, step=args.step))
    if args.diff:
        try:
            mine = solution_path(Path.cwd(), lesson).read_text(encoding="utf-8", errors="replace")
        except OSError:
            mine = ""
        print(solution_diff(mine, lesson, args.step) or t("cli.solution_same", lang), end="")
    else:
        print(step_solution(lesson, args.step), end="")
    return 0


def cmd_reset(args, lang: str) -> int:
    from tutor.workspace.files import reset, reset_function, solution_path

    lesson = _folder_lesson(args.reset_lesson, lang)
    path = solution_path(Path.cwd(), lesson)
    if not path.exists():
        raise UsageError(t("cli.missing_file", lang, path=path))
    if args.all == bool(args.step):
        raise UsageError(t("cli.reset_usage", lang))
    if args.all:
        backup = reset(path, lesson.starter_path)
    else:
        if args.step not in lesson.step_ids():
            raise UsageError(
                t("cli.unknown_step", lang, step=args.step, steps=", ".join(lesson.step_ids()))
            )
        names = lesson_functions(lesson, args.step)
        if not names:
            raise UsageError(t("cli.reset_nothing", lang, step=args.step))
        try:
            backup = reset_function(path, lesson.starter_path, names)
        except ValueError:
            raise UsageError(t("cli.reset_unparsable", lang, path=path)) from None
    print(t("cli.reset_done", lang, path=path, backup=backup))
    return 0


def lesson_functions(lesson, step_id: str) -> list[str]:
    """The learner's top-level names a step is about, as its lesson.toml lists them."""
    return list(lesson.step(step_id).functions)


DEV_TIMEOUT = 15.0  # per step: an author's busy machine must not turn a verdict into a timeout


def _say_skipped_lessons(lang: str) -> None:
    """A course's lesson that does not load is left out, and said on stderr: the rest work."""
    from tutor.model.lesson import skipped_lessons
    from tutor.text.safe_text import one_line  # a course's folder and error can be anything

    for folder, why in skipped_lessons():
        said = t("cli.lesson_skipped", lang, path=one_line(folder), why=one_line(why))
        with contextlib.suppress(OSError, ValueError):
            print(f"attn-tutor: {said}", file=sys.stderr)


def _dev_folders(target: str | None, lang: str) -> list[Path]:
    """The lesson folders to prove: a lesson id, a lesson folder (or its lesson.toml), or all;
    a course's lesson that does not load is proved too (dev check says why), by its folder's name."""
    from tutor.model.lesson import skipped_lessons

    skipped = [folder for folder, _ in skipped_lessons()]
    if target is None:
        return [lesson.folder for lesson in all_lessons()] + skipped
    for lesson in all_lessons():
        if lesson.id == target:
            return [lesson.folder]
    for folder in skipped:
        if folder.name == target:
            return [folder]
    path = Path(target)
    if path.name == "lesson.toml" and path.is_file():
        return [path.parent]
    if (path / "lesson.toml").is_file():
        return [path]
    ids = t("cli.ids_sep", lang).join(lesson.id for lesson in all_lessons())
    raise UsageError(t("cli.not_a_lesson", lang, path=target, ids=ids))


def cmd_dev_check(args, lang: str) -> int:
    from tutor.cli.dev_check import dev_check
    from tutor.text.verdict_text import MARKS

    folders = _dev_folders(args.target, lang)
    ok = True
    for i, folder in enumerate(folders):
        lines = dev_check(folder, timeout=args.dev_timeout or args.timeout or DEV_TIMEOUT)
        passed = sum(line.ok for line in lines)
        ok = ok and passed == len(lines)
        out = ([""] if i else []) + [t("dev.header", lang, lesson=folder.name, path=folder)]
        for line in lines:
            mark = "!" if line.warn else MARKS["pass"] if line.ok else MARKS["fail"]
            out.append(f"{mark} {t(line.key, lang, **line.params)}")
        out.append(t("dev.summary", lang, passed=passed, total=len(lines)))
        _print_for_a_reader_who_may_leave(out)
    return 0 if ok else 1


def _print_for_a_reader_who_may_leave(lines: list[str]) -> None:
    """Print `lines`; if stdout's reader has gone (`dev check | head`), print nothing more and
    go on, so that the lessons not yet checked still decide the exit code."""
    try:
        print("\n".join(lines), flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def cmd_app(args, lang_cli: str | None) -> int:
    from tutor.app.main import run_app

    return run_app(
        lesson_id=args.lesson,
        step_id=args.step,
        file=args.file,
        lang=lang_cli,
        poll=args.poll,
        timeout=args.timeout,
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        # The usual launch, what the parser would make of no arguments: the app, without
        # argparse, every lesson's file and the help texts first (~10 ms of the first screen).
        from tutor.app.main import run_app

        return run_app()
    missing = _peek_lessons(argv)
    lang = _peek_lang(argv)
    parser = build_parser(lang)
    args = parser.parse_args(argv)
    if missing:
        return _complain(2, f"attn-tutor: {t('cli.no_lessons_dir', lang, path=', '.join(missing))}")
    lang_cli = (
        getattr(args, "check_lang", None)
        or getattr(args, "list_lang", None)
        or getattr(args, "reset_lang", None)
        or getattr(args, "dev_lang", None)
        or getattr(args, "solution_lang", None)
        or getattr(args, "grade_lang", None)
        or args.lang
    )
    lang = choose(lang_cli, _remembered_lang(Path.cwd()))
    _say_skipped_lessons(lang)
    try:
        if args.command == "check":
            return cmd_check(args, lang)
        if args.command == "grade":
            return cmd_grade(args, lang)
        if args.command == "list":
            return cmd_list(args, lang)
        if args.command == "reset":
            return cmd_reset(args, lang)
        if args.command == "solution":
            return cmd_solution(args, lang)
        if args.command == "dev":
            return cmd_dev_check(args, lang)
        if args.lesson:
            _lesson(args.lesson, lang)
        return cmd_app(args, lang_cli)
    except UsageError as exc:
        from tutor.text.safe_text import one_line  # a path or a student id can be anything

        return _complain(2, f"attn-tutor: {one_line(exc)}")


# What a command has decided before it prints: `check | head` still exits with the verdict's
# code when the reader leaves early, a complaint with its own (`list` and the rest: 0).
_exit_code_if_the_reader_leaves = [0]


def _complain(code: int, text: str) -> int:
    """Say `text` on stderr and return `code`, which stands if stderr's reader has gone too
    (`attn-tutor ... 2>&1 | head`): the line is lost, the exit code is not."""
    _exit_code_if_the_reader_leaves[0] = code
    print(text, file=sys.stderr)
    return code


def entry() -> None:
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # `attn-tutor check | head`: the reader left; say nothing more, and let Python's own
        # flush at exit find a closed descriptor rather than raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = _exit_code_if_the_reader_leaves[0]
    sys.exit(code)
