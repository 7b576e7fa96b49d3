"""The class report: per step its pass rate, per likely mistake (by its id, so that English
and Chinese work count together) who made it, and the files that timed out or crashed.
Computed from the students' records alone; shown as a Rich table, Markdown and one
self-contained HTML page (no network asset: the bars are divs). Pure: no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tutor.grade.record import step_status
from tutor.text.i18n import t
from tutor.text.safe_text import html_text, markdown, one_line, visible


@dataclass
class StepRow:
    id: str
    passed: int
    of: int  # students with a file

    @property
    def rate(self) -> float:
        return self.passed / self.of if self.of else 0.0


@dataclass
class Mistake:
    id: str  # the likely message's catalog key
    students: list[str]
    steps: list[str]
    example: dict  # one student's message {key, params}, shown in the report's language


@dataclass
class ClassReport:
    students: int
    by_status: dict[str, int]
    mean: float
    max_score: float
    steps: list[StepRow]
    mistakes: list[Mistake]
    problems: list[tuple[str, str, str]]  # (student, status, what happened) for timeouts and errors
    missing: list[str] = field(default_factory=list)  # students with no file


def class_report(lesson, records: list[dict]) -> ClassReport:
    records = sorted(records, key=lambda r: r["student"])
    with_file = [r for r in records if r["status"] != "no file"]
    steps = [
        StepRow(s.id, sum(step_status(r, s.id) == "pass" for r in with_file), len(with_file))
        for s in lesson.checked_steps
    ]
    found: dict[str, Mistake] = {}
    for r in records:
        for m in r["mistakes"]:
            entry = found.setdefault(m["id"], Mistake(m["id"], [], [], m["message"]))
            if r["student"] not in entry.students:
                entry.students.append(r["student"])
            if m["step"] not in entry.steps:
                entry.steps.append(m["step"])
    order = {s.id: i for i, s in enumerate(lesson.checked_steps)}
    mistakes = sorted(
        found.values(),
        key=lambda m: (-len(m.students), min(order.get(s, 99) for s in m.steps), m.id),
    )
    problems = []
    for r in records:
        if r["status"] in ("timeout", "error"):
            problems.append((r["student"], r["status"], _what_happened(r)))
    by_status = {
        s: sum(r["status"] == s for r in records) for s in ("graded", "timeout", "error", "no file")
    }
    mean = sum(r["score"] for r in records) / len(records) if records else 0.0
    return ClassReport(
        len(records),
        by_status,
        mean,
        lesson.max_points,
        steps,
        mistakes,
        problems,
        [r["student"] for r in records if r["status"] == "no file"],
    )


def _what_happened(record: dict) -> str:
    """The file's error, else each message of its timed-out or failed steps once, with the steps
    that gave it (a hang at import says the same for all of them). In the record's language."""
    if record.get("file_error"):
        return record["file_error"]["message"]
    said: dict[str, list[str]] = {}
    for step in record["steps"]:
        if step["status"] in ("timeout", "error"):
            for check in step["checks"]:
                if check["status"] != "pass":
                    said.setdefault(check["message"], []).append(step["id"])
    return " ".join(f"[{', '.join(steps)}] {message}" for message, steps in said.items())


def _title(lesson, step_id: str, lang: str, shown: str | None = None) -> str:
    """A step's title and its id (shown: the id as the format marks code)."""
    title, shown = lesson.step(step_id).title[lang], shown or step_id
    return f"{title}（{shown}）" if lang == "zh" else f"{title} ({shown})"


def _status(status: str, lang: str) -> str:
    return t(f"grade.status.{status.replace(' ', '_')}", lang)


def _summary(lesson, rep: ClassReport, lang: str) -> list[str]:
    pct = 100 * rep.mean / rep.max_score if rep.max_score else 0.0
    return [
        t(
            "grade.report_students",
            lang,
            n=rep.students,
            graded=rep.by_status["graded"],
            timeout=rep.by_status["timeout"],
            error=rep.by_status["error"],
            missing=rep.by_status["no file"],
        ),
        t(
            "grade.report_mean",
            lang,
            mean=f"{rep.mean:.2f}",
            max=f"{rep.max_score:g}",
            percent=f"{pct:.1f}",
        ),
    ]


def _mistake_text(m: Mistake, lang: str) -> str:
    return t(m.example["key"], lang, **m.example["params"])


def _who(students: list[str]) -> str:
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
    parts += [Text(line) for line in _summary(lesson, rep, lang)]
    steps = Table(title=t("grade.report_steps", lang), title_justify="left")
    steps.add_column(t("grade.col_step", lang))
    steps.add_column(t("grade.col_passed", lang), justify="right")
    steps.add_column(t("grade.col_rate", lang), justify="right")
    steps.add_column("")
    for s in rep.steps:
        steps.add_row(
            Wrapped(_title(lesson, s.id, lang)),
            f"{s.passed}/{s.of}",
            f"{100 * s.rate:.0f}%",
            "█" * round(20 * s.rate) + "·" * (20 - round(20 * s.rate)),
        )
    parts.append(steps)
    if rep.mistakes:
        table = Table(title=t("grade.report_mistakes", lang), title_justify="left")
        table.add_column(t("grade.col_mistake", lang), overflow="fold")
        table.add_column(t("grade.col_students", lang), justify="right")
        table.add_column(t("grade.col_who", lang), overflow="fold")
        for m in rep.mistakes:
            table.add_row(
                Wrapped(Text.assemble((m.id, "bold"), "\n", visible(_mistake_text(m, lang)))),
                str(len(m.students)),
                Wrapped(_who(m.students)),
            )
        parts.append(table)
    else:
        parts.append(Text(t("grade.report_no_mistakes", lang)))
    if rep.problems:
        table = Table(title=t("grade.report_problems", lang), title_justify="left")
        table.add_column(t("grade.col_student", lang))
        table.add_column(t("grade.col_status", lang))
        table.add_column(t("grade.col_detail", lang), overflow="fold")
        for student, status, what in rep.problems:
            # Text, not markup: a message's "[…]" or a student id must show as written.
            table.add_row(Text(one_line(student)), _status(status, lang), Wrapped(visible(what)))
        parts.append(table)
    if rep.missing:
        parts.append(Text(t("grade.report_missing", lang, students=_who(rep.missing))))
    return Group(*parts)


# ------------------------------------------------------------------ Markdown


def _md_cell(text: str) -> str:
    """The tutor's own text in a cell (a step's title with its `id`)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def report_md(lesson, rep: ClassReport, lang: str) -> str:
    out = [f"# {t('grade.report_title', lang, lesson=lesson.title[lang])}", ""]
    out += [f"{line}  " for line in _summary(lesson, rep, lang)] + [""]
    out += [
        f"## {t('grade.report_steps', lang)}",
        "",
        f"| {t('grade.col_step', lang)} | {t('grade.col_passed', lang)} | {t('grade.col_rate', lang)} |",
        "|---|---:|---:|",
    ]
    for s in rep.steps:
        out.append(
            f"| {_md_cell(_title(lesson, s.id, lang, f'`{s.id}`'))} | {s.passed}/{s.of} | {100 * s.rate:.0f}% |"
        )
    out += ["", f"## {t('grade.report_mistakes', lang)}", ""]
    if rep.mistakes:
        out += [
            f"| {t('grade.col_mistake', lang)} | {t('grade.col_students', lang)} | {t('grade.col_who', lang)} |",
            "|---|---:|---|",
        ]
        for m in rep.mistakes:
            out.append(
                f"| `{m.id}`: {markdown(_mistake_text(m, lang))} | {len(m.students)} | "
                f"{', '.join(markdown(s) for s in m.students)} |"
            )
    else:
        out.append(t("grade.report_no_mistakes", lang))
    out += ["", f"## {t('grade.report_problems', lang)}", ""]
    if rep.problems:
        out += [
            f"| {t('grade.col_student', lang)} | {t('grade.col_status', lang)} | {t('grade.col_detail', lang)} |",
            "|---|---|---|",
        ]
        for student, status, what in rep.problems:
            out.append(f"| {markdown(student)} | {_status(status, lang)} | {markdown(what)} |")
    else:
        out.append(t("grade.report_no_problems", lang))
    if rep.missing:
        missing = ", ".join(markdown(s) for s in rep.missing)
        out += ["", t("grade.report_missing", lang, students=missing)]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ HTML

CSS = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0 1.5rem; }
th, td { text-align: left; padding: 0.3rem 0.6rem; border-bottom: 1px solid #ddd; vertical-align: top; }
td.n { text-align: right; white-space: nowrap; }
.bar { background: #eee; width: 12rem; height: 0.9rem; border-radius: 2px; }
.bar > div { background: #3a7; height: 100%; border-radius: 2px; }
.bar.m > div { background: #d73; }
code { background: #f4f4f4; padding: 0 0.2rem; }
.why { color: #555; font-size: 0.9em; }
"""


def _bar(share: float, cls: str = "") -> str:
    return f'<div class="bar {cls}"><div style="width:{100 * share:.1f}%"></div></div>'


def report_html(lesson, rep: ClassReport, lang: str) -> str:
    e = html_text
    title = t("grade.report_title", lang, lesson=lesson.title[lang])
    out = [
        f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8"><title>{e(title)}</title>',
        f"<style>{CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
    ]
    out += [f"<p>{e(line)}</p>" for line in _summary(lesson, rep, lang)]
    out += [
        f"<h2>{e(t('grade.report_steps', lang))}</h2><table>",
        f"<tr><th>{e(t('grade.col_step', lang))}</th><th>{e(t('grade.col_passed', lang))}</th>"
        f"<th>{e(t('grade.col_rate', lang))}</th><th></th></tr>",
    ]
    for s in rep.steps:
        out.append(
            f"<tr><td>{e(_title(lesson, s.id, lang))}</td>"
            f'<td class="n">{s.passed}/{s.of}</td><td class="n">{100 * s.rate:.0f}%</td><td>{_bar(s.rate)}</td></tr>'
        )
    out.append("</table>")
    out.append(f"<h2>{e(t('grade.report_mistakes', lang))}</h2>")
    if rep.mistakes:
        out.append(
            f"<table><tr><th>{e(t('grade.col_mistake', lang))}</th><th>{e(t('grade.col_students', lang))}</th>"
            f"<th></th><th>{e(t('grade.col_who', lang))}</th></tr>"
        )
        for m in rep.mistakes:
            share = len(m.students) / rep.students if rep.students else 0.0
            out.append(
                f'<tr><td><code>{e(m.id)}</code><div class="why">{e(_mistake_text(m, lang))}</div></td>'
                f'<td class="n">{len(m.students)}</td><td>{_bar(share, "m")}</td>'
                f"<td>{e(', '.join(m.students))}</td></tr>"
            )
        out.append("</table>")
    else:
        out.append(f"<p>{e(t('grade.report_no_mistakes', lang))}</p>")
    out.append(f"<h2>{e(t('grade.report_problems', lang))}</h2>")
    if rep.problems:
        out.append(
            f"<table><tr><th>{e(t('grade.col_student', lang))}</th><th>{e(t('grade.col_status', lang))}</th>"
            f"<th>{e(t('grade.col_detail', lang))}</th></tr>"
        )
        for student, status, what in rep.problems:
            out.append(
                f"<tr><td>{e(student)}</td><td>{e(_status(status, lang))}</td><td>{e(what)}</td></tr>"
            )
        out.append("</table>")
    else:
        out.append(f"<p>{e(t('grade.report_no_problems', lang))}</p>")
    if rep.missing:
        out.append(f"<p>{e(t('grade.report_missing', lang, students=', '.join(rep.missing)))}</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
