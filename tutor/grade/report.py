"""The class report (summary.py's data) as a Rich renderable and as Markdown; report_html.py
draws the HTML page. Mistakes are counted by id, so that English and Chinese work count
together; the texts are in the report's language. Pure: no torch.
"""

from __future__ import annotations

from tutor.grade import message_text
from tutor.grade.glance import glance_md, rich_glance
from tutor.grade.report_html import report_html
from tutor.grade.similar_report import rich_similar, similar_md
from tutor.grade.summary import VARIES, ClassReport, LookAt, Mistake, class_report
from tutor.text.i18n import t
from tutor.text.safe_text import markdown, one_line, visible

__all__ = ["class_report", "report_html", "report_md", "rich_report"]


def title(lesson, step_id: str, lang: str, shown: str | None = None) -> str:
    """A step's title and its id (shown: the id as the format marks code)."""
    text, shown = lesson.step(step_id).title[lang], shown or step_id
    return f"{text}（{shown}）" if lang == "zh" else f"{text} ({shown})"


def status_text(status: str, lang: str) -> str:
    return t(f"grade.status.{status.replace(' ', '_')}", lang)


def counted(key: str, lang: str, n: int, **params) -> str:
    """A message with a count in it: its `_one` form for 1 (English: 1 student, 2 students)."""
    return t(f"{key}_one" if n == 1 else key, lang, n=n, **params)


def summary_lines(rep: ClassReport, lang: str) -> list[str]:
    pct = 100 * rep.mean / rep.max_score if rep.max_score else 0.0
    by = rep.by_status
    stopped = bool(rep.not_graded)
    lines = [
        counted(
            "grade.report_students_stopped" if stopped else "grade.report_students",
            lang,
            rep.students,
            not_graded=by["not graded"],
            graded=by["graded"],
            timeout=by["timeout"],
            error=by["error"],
            missing=by["no file"],
        ),
        t(
            "grade.report_mean",
            lang,
            mean=f"{rep.mean:.2f}",
            max=f"{rep.max_score:g}",
            percent=f"{pct:.1f}",
        ),
    ]
    if stopped:
        done = rep.students - len(rep.not_graded)
        lines.insert(0, t("grade.report_interrupted", lang, done=done, total=rep.students))
    return lines


def mistake_text(m: Mistake, lang: str) -> str:
    """Under the "Likely mistakes" heading: without the app's "Likely mistake:" label."""
    return message_text.mistake_text(m.example, lang)


def look_text(lesson, row: LookAt, lang: str) -> str:
    """Why these students are to be looked at, in the report's language."""
    step = title(lesson, row.step, lang) if row.step else ""
    return t(f"grade.look.{row.kind}", lang, step=step)


def look_who(row: LookAt, lang: str) -> list[str]:
    """The students of a row; with several files, each with the file graded and why."""
    out = []
    for s in row.students:
        if s in row.notes:
            file, by = row.notes[s]
            why = t(f"grade.picked.{by}", lang) if by else ""
            out.append(
                f"{s} ({file}{'，' if lang == 'zh' else ', '}{why})" if why else f"{s} ({file})"
            )
        else:
            out.append(s)
    return out


def who(students: list[str]) -> str:
    """Student ids on one line, each as text (an id is a folder's name: anything)."""
    return ", ".join(one_line(s) for s in students)


# ------------------------------------------------------------------ terminal


def rich_report(lesson, rep: ClassReport, lang: str):
    from rich.console import Group, RenderableType
    from rich.table import Table
    from rich.text import Text

    from tutor.render.wrap import Wrapped  # Chinese wraps by cell width, not at spaces only

    parts: list[RenderableType] = [
        Text(t("grade.report_title", lang, lesson=lesson.title[lang]), style="bold")
    ]
    parts += [Text(line) for line in summary_lines(rep, lang)]
    steps = Table(title=t("grade.report_steps", lang), title_justify="left")
    steps.add_column(t("grade.col_step", lang))
    steps.add_column(t("grade.col_passed", lang), justify="right", no_wrap=True)
    steps.add_column(t("grade.col_rate", lang), justify="right", no_wrap=True)
    steps.add_column("")
    for s in rep.steps:
        steps.add_row(
            Wrapped(title(lesson, s.id, lang)),
            f"{s.passed}/{s.of}",
            f"{100 * s.rate:.0f}%",
            "█" * round(20 * s.rate) + "·" * (20 - round(20 * s.rate)),
        )
    parts.append(steps)
    parts.append(rich_glance(lesson, rep, lang))
    if rep.look_at:
        table = Table(title=t("grade.look.title", lang), title_justify="left")
        table.add_column(t("grade.col_reason", lang), overflow="fold")
        table.add_column(t("grade.col_students", lang), justify="right", no_wrap=True)
        table.add_column(t("grade.col_who", lang), overflow="fold")
        for row in rep.look_at:
            table.add_row(
                Wrapped(look_text(lesson, row, lang)),
                str(len(row.students)),
                Wrapped(who(look_who(row, lang))),
            )
        parts.append(table)
    if rep.mistakes:
        table = Table(title=t("grade.report_mistakes", lang), title_justify="left")
        table.add_column(t("grade.col_step", lang), overflow="fold")
        table.add_column(t("grade.col_mistake", lang), overflow="fold")
        table.add_column(t("grade.col_students", lang), justify="right", no_wrap=True)
        table.add_column(t("grade.col_who", lang), overflow="fold")
        for m in rep.mistakes:
            table.add_row(
                Text(m.step),
                Wrapped(Text.assemble((m.id, "bold"), "\n", visible(mistake_text(m, lang)))),
                str(len(m.students)),
                Wrapped(who(m.students)),
            )
        parts.append(table)
        if any(VARIES in m.example["params"].values() for m in rep.mistakes):
            parts.append(Wrapped(t("grade.report_varies", lang)))
    else:
        parts.append(Text(t("grade.report_no_mistakes", lang)))
    if rep.problems:
        table = Table(title=t("grade.report_problems", lang), title_justify="left")
        table.add_column(t("grade.col_student", lang))
        table.add_column(t("grade.col_status", lang), no_wrap=True)
        table.add_column(t("grade.col_detail", lang), overflow="fold")
        for student, status, what in rep.problems:
            # Text, not markup: a message's "[…]" or a student id must show as written.
            table.add_row(
                Text(one_line(student)), status_text(status, lang), Wrapped(visible(what))
            )
        parts.append(table)
    if rep.missing:
        parts.append(Text(t("grade.report_missing", lang, students=who(rep.missing))))
    if rep.similar is not None:
        parts.append(rich_similar(rep.similar, lang))
    if rep.not_graded:
        parts.append(Text(t("grade.report_not_graded", lang, students=who(rep.not_graded))))
    return Group(*parts)


# ------------------------------------------------------------------ Markdown


def _md_cell(text: str) -> str:
    """The tutor's own text in a cell (a step's title with its `id`)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_table(header: list[str], align: str, rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def report_md(lesson, rep: ClassReport, lang: str) -> str:
    out = [f"# {t('grade.report_title', lang, lesson=lesson.title[lang])}", ""]
    out += [f"{line}  " for line in summary_lines(rep, lang)] + [""]
    out += [f"## {t('grade.report_steps', lang)}", ""]
    out += _md_table(
        [t("grade.col_step", lang), t("grade.col_passed", lang), t("grade.col_rate", lang)],
        "lrr",
        [
            [
                _md_cell(title(lesson, s.id, lang, f"`{s.id}`")),
                f"{s.passed}/{s.of}",
                f"{100 * s.rate:.0f}%",
            ]
            for s in rep.steps
        ],
    )
    out += ["", *glance_md(lesson, rep, lang)]
    if rep.look_at:
        out += ["", f"## {t('grade.look.title', lang)}", ""]
        out += _md_table(
            [t("grade.col_reason", lang), t("grade.col_students", lang), t("grade.col_who", lang)],
            "lrl",
            [
                [
                    markdown(look_text(lesson, row, lang)),
                    str(len(row.students)),
                    ", ".join(markdown(s) for s in look_who(row, lang)),
                ]
                for row in rep.look_at
            ],
        )
    out += ["", f"## {t('grade.report_mistakes', lang)}", ""]
    if rep.mistakes:
        out += _md_table(
            [
                t("grade.col_step", lang),
                t("grade.col_mistake", lang),
                t("grade.col_students", lang),
                t("grade.col_who", lang),
            ],
            "llrl",
            [
                [
                    f"`{m.step}`",
                    message_text.id_and_text(m.id, markdown(mistake_text(m, lang)), lang),
                    str(len(m.students)),
                    ", ".join(markdown(s) for s in m.students),
                ]
                for m in rep.mistakes
            ],
        )
        if any(VARIES in m.example["params"].values() for m in rep.mistakes):
            out += ["", t("grade.report_varies", lang)]
    else:
        out.append(t("grade.report_no_mistakes", lang))
    out += ["", f"## {t('grade.report_problems', lang)}", ""]
    if rep.problems:
        out += _md_table(
            [
                t("grade.col_student", lang),
                t("grade.col_status", lang),
                t("grade.col_detail", lang),
            ],
            "lll",
            [
                [markdown(student), status_text(status, lang), markdown(what)]
                for student, status, what in rep.problems
            ],
        )
    else:
        out.append(t("grade.report_no_problems", lang))
    if rep.missing:
        missing = ", ".join(markdown(s) for s in rep.missing)
        out += ["", t("grade.report_missing", lang, students=missing)]
    if rep.similar is not None:
        out += ["", *similar_md(rep.similar, lang)]
    if rep.not_graded:
        stopped = ", ".join(markdown(s) for s in rep.not_graded)
        out += ["", t("grade.report_not_graded", lang, students=stopped)]
    return "\n".join(out) + "\n"
