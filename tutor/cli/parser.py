"""The command line's parser: every command and option, its words in the learner's language."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tutor import __version__
from tutor.model.lesson import all_lessons
from tutor.text.i18n import t

if TYPE_CHECKING:
    import argparse


def _parser_class(lang: str):
    """An ArgumentParser whose own words (usage:, the group titles, -h, error:) are in `lang`:
    argparse has them in English only, behind gettext. Its subparsers are of the same class."""
    import argparse

    class Formatter(argparse.HelpFormatter):
        def add_usage(self, usage, actions, groups, prefix=None):
            # prefix "" is argparse working out a subcommand's prog: left as it is
            return super().add_usage(
                usage, actions, groups, t("cli.usage", lang) if prefix is None else prefix
            )

        # argparse wraps by characters, and a Chinese character takes two columns: wrap by cells.
        def _split_lines(self, text, width):
            from tutor.render.wrap import wrap_cells

            return wrap_cells(" ".join(text.split()), width)

        def _fill_text(self, text, width, indent):
            from tutor.render.wrap import wrap_cells

            return "\n".join(indent + line for line in wrap_cells(" ".join(text.split()), width))

        def _format_usage(self, usage, actions, groups, prefix):
            from rich.cells import cell_len

            # The usage line starts with the prefix, which argparse measures in characters.
            extra = cell_len(prefix or "") - len(prefix or "")
            self._width -= extra
            try:
                return super()._format_usage(usage, actions, groups, prefix)
            finally:
                self._width += extra

        def format_help(self):
            # argparse ends a group's title with ":"; after a Chinese title the colon is full-width
            return re.sub(r"(?m)^(\S.*[\u4e00-\u9fff]):$", "\\1：", super().format_help())

    class Parser(argparse.ArgumentParser):
        def __init__(self, *args, **kwargs):
            kwargs.update(formatter_class=Formatter, add_help=False)
            super().__init__(*args, **kwargs)
            self._positionals.title = t("cli.positionals", lang)
            self._optionals.title = t("cli.options", lang)
            self.add_argument(
                "-h",
                "--help",
                action="help",
                default=argparse.SUPPRESS,
                help=t("cli.opt_help", lang),
            )

        def error(self, message):
            self.print_usage(sys.stderr)
            self.exit(2, f"{self.prog}: {t('cli.error', lang, message=message)}\n")

    return Parser


def build_parser(lang: str) -> argparse.ArgumentParser:
    # argparse is imported by _parser_class: a launch without arguments needs no parser (see main)
    lesson_ids = t("cli.ids_sep", lang).join(lesson.id for lesson in all_lessons())
    p = _parser_class(lang)(prog="attn-tutor", description=t("cli.description", lang))
    p.add_argument(
        "--version",
        action="version",
        version=f"attn-tutor {__version__}",
        help=t("cli.opt_version", lang),
    )
    p.add_argument("--lessons", action="append", metavar="DIR", help=t("cli.opt_lessons", lang))
    p.add_argument("--lesson", metavar="ID", help=t("cli.opt_lesson", lang, ids=lesson_ids))
    p.add_argument("--step", metavar="STEP", help=t("cli.opt_step", lang))
    p.add_argument("--file", type=Path, metavar="FILE", help=t("cli.opt_file", lang))
    p.add_argument("--lang", choices=["en", "zh"], help=t("cli.opt_lang", lang))
    p.add_argument("--poll", action="store_true", help=t("cli.opt_poll", lang))
    p.add_argument(
        "--timeout", type=float, default=None, metavar="S", help=t("cli.opt_timeout", lang)
    )
    sub = p.add_subparsers(dest="command", metavar="{check,grade,list,solution,reset,dev}")

    c = sub.add_parser(
        "check", help=t("cli.check_help", lang), description=t("cli.check_help", lang)
    )
    c.add_argument("file", nargs="?", type=Path, help=t("cli.opt_check_file", lang))
    c.add_argument(
        "--lesson",
        dest="check_lesson",
        metavar="ID",
        help=t("cli.opt_lesson", lang, ids=lesson_ids),
    )
    c.add_argument("--json", action="store_true", help=t("cli.opt_json", lang))
    c.add_argument("--lang", dest="check_lang", choices=["en", "zh"], help=t("cli.opt_lang", lang))
    c.add_argument(
        "--timeout", dest="check_timeout", type=float, metavar="S", help=t("cli.opt_timeout", lang)
    )

    from tutor.grade.command import add_parser as add_grade_parser

    add_grade_parser(sub, lang, lesson_ids)

    ls = sub.add_parser("list", help=t("cli.list_help", lang), description=t("cli.list_help", lang))
    ls.add_argument("--json", action="store_true", help=t("cli.opt_json", lang))
    ls.add_argument("--lang", dest="list_lang", choices=["en", "zh"], help=t("cli.opt_lang", lang))

    so = sub.add_parser(
        "solution", help=t("cli.solution_help", lang), description=t("cli.solution_help", lang)
    )
    so.add_argument("step", help=t("cli.opt_solution_step", lang))
    so.add_argument(
        "--lesson",
        dest="solution_lesson",
        metavar="ID",
        help=t("cli.opt_lesson", lang, ids=lesson_ids),
    )
    so.add_argument("--diff", action="store_true", help=t("cli.opt_solution_diff", lang))
    so.add_argument("--force", action="store_true", help=t("cli.opt_solution_force", lang))
    so.add_argument(
        "--lang", dest="solution_lang", choices=["en", "zh"], help=t("cli.opt_lang", lang)
    )

    r = sub.add_parser(
        "reset", help=t("cli.reset_help", lang), description=t("cli.reset_help", lang)
    )
    r.add_argument("step", nargs="?", help=t("cli.opt_reset_step", lang))
    r.add_argument("--all", action="store_true", help=t("cli.opt_reset_all", lang))
    r.add_argument(
        "--lesson",
        dest="reset_lesson",
        metavar="ID",
        help=t("cli.opt_lesson", lang, ids=lesson_ids),
    )
    r.add_argument("--lang", dest="reset_lang", choices=["en", "zh"], help=t("cli.opt_lang", lang))

    d = sub.add_parser("dev", help=t("cli.dev_help", lang), description=t("cli.dev_help", lang))
    dsub = d.add_subparsers(dest="dev_command", metavar="{check}", required=True)
    dc = dsub.add_parser(
        "check", help=t("cli.dev_check_help", lang), description=t("cli.dev_check_help", lang)
    )
    dc.add_argument("target", nargs="?", metavar="LESSON|PATH", help=t("cli.opt_dev_lesson", lang))
    dc.add_argument("--lang", dest="dev_lang", choices=["en", "zh"], help=t("cli.opt_lang", lang))
    dc.add_argument(
        "--timeout",
        dest="dev_timeout",
        type=float,
        metavar="S",
        help=t("cli.opt_dev_timeout", lang),
    )
    return p
