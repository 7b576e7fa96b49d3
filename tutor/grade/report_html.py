"""The class report as one self-contained HTML page: no network asset, the bars are divs.
Every text from a student (an id, a message) is escaped. Pure: no torch.
"""

from __future__ import annotations

from tutor.grade.glance import GLANCE_CSS, glance_html
from tutor.grade.similar_report import SIMILAR_CSS, similar_html
from tutor.grade.summary import VARIES, ClassReport
from tutor.text.i18n import t
from tutor.text.safe_text import html_text as e

CSS = """
body { font-family: system-ui, sans-serif; max-width: 64rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0 1.5rem; }
th, td { text-align: left; padding: 0.3rem 0.6rem; border-bottom: 1px solid #ddd; vertical-align: top; }
th, td.n, td.s { white-space: nowrap; }
td.n { text-align: right; }
td.t { min-width: 14em; }
td.w { min-width: 10em; overflow-wrap: anywhere; }
.stopped { background: #fff3cd; border-left: 4px solid #d90; padding: 0.4rem 0.6rem; }
.bar { background: #eee; width: 12rem; height: 0.9rem; border-radius: 2px; }
.bar > div { background: #3a7; height: 100%; border-radius: 2px; }
.bar.m > div { background: #d73; }
code { background: #f4f4f4; padding: 0 0.2rem; }
.why { color: #555; font-size: 0.9em; }
"""


def _bar(share: float, cls: str = "") -> str:
    return f'<div class="bar {cls}"><div style="width:{100 * share:.1f}%"></div></div>'


def _row(*cells: str) -> str:
    return "<tr>" + "".join(cells) + "</tr>"


def _head(*names: str) -> str:
    return "<tr>" + "".join(f"<th>{e(n)}</th>" for n in names) + "</tr>"


def report_html(lesson, rep: ClassReport, lang: str) -> str:
    from tutor.grade.message_text import html_message
    from tutor.grade.report import (
        look_text,
        look_who,
        mistake_text,
        status_text,
        summary_lines,
        title,
    )

    heading = t("grade.report_title", lang, lesson=lesson.title[lang])
    out = [
        f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8"><title>{e(heading)}</title>',
        f"<style>{CSS}{GLANCE_CSS}{SIMILAR_CSS}</style></head><body>",
        f"<h1>{e(heading)}</h1>",
    ]
    lines = summary_lines(rep, lang)
    if rep.not_graded:  # the first line says the run was stopped: it stands out
        out.append(f'<p class="stopped">{e(lines.pop(0))}</p>')
    out += [f"<p>{e(line)}</p>" for line in lines]
    out.append(f"<h2>{e(t('grade.report_steps', lang))}</h2><table>")
    out.append(
        _head(t("grade.col_step", lang), t("grade.col_passed", lang), t("grade.col_rate", lang), "")
    )
    for s in rep.steps:
        out.append(
            _row(
                f'<td class="t">{e(title(lesson, s.id, lang))}</td>',
                f'<td class="n">{s.passed}/{s.of}</td>',
                f'<td class="n">{100 * s.rate:.0f}%</td>',
                f"<td>{_bar(s.rate)}</td>",
            )
        )
    out.append("</table>")
    out += glance_html(lesson, rep, lang)
    if rep.look_at:
        out.append(f"<h2>{e(t('grade.look.title', lang))}</h2><table>")
        out.append(
            _head(
                t("grade.col_reason", lang), t("grade.col_students", lang), t("grade.col_who", lang)
            )
        )
        for row in rep.look_at:
            out.append(
                _row(
                    f'<td class="t">{e(look_text(lesson, row, lang))}</td>',
                    f'<td class="n">{len(row.students)}</td>',
                    f'<td class="w">{e(", ".join(look_who(row, lang)))}</td>',
                )
            )
        out.append("</table>")
    out.append(f"<h2>{e(t('grade.report_mistakes', lang))}</h2>")
    if rep.mistakes:
        out.append("<table>")
        out.append(
            _head(
                t("grade.col_step", lang),
                t("grade.col_mistake", lang),
                t("grade.col_students", lang),
                "",
                t("grade.col_who", lang),
            )
        )
        for m in rep.mistakes:
            share = len(m.students) / rep.students if rep.students else 0.0
            out.append(
                _row(
                    f'<td class="s"><code>{e(m.step)}</code></td>',
                    f'<td class="t"><code>{e(m.id)}</code><div class="why">{html_message(mistake_text(m, lang))}</div></td>',
                    f'<td class="n">{len(m.students)}</td>',
                    f"<td>{_bar(share, 'm')}</td>",
                    f'<td class="w">{e(", ".join(m.students))}</td>',
                )
            )
        out.append("</table>")
        if any(VARIES in m.example["params"].values() for m in rep.mistakes):
            out.append(f'<p class="why">{e(t("grade.report_varies", lang))}</p>')
    else:
        out.append(f"<p>{e(t('grade.report_no_mistakes', lang))}</p>")
    out.append(f"<h2>{e(t('grade.report_problems', lang))}</h2>")
    if rep.problems:
        out.append("<table>")
        out.append(
            _head(
                t("grade.col_student", lang),
                t("grade.col_status", lang),
                t("grade.col_detail", lang),
            )
        )
        for student, status, what in rep.problems:
            out.append(
                _row(
                    f'<td class="w">{e(student)}</td>',
                    f'<td class="s">{e(status_text(status, lang))}</td>',
                    f'<td class="t">{html_message(what)}</td>',
                )
            )
        out.append("</table>")
    else:
        out.append(f"<p>{e(t('grade.report_no_problems', lang))}</p>")
    if rep.missing:
        out.append(f"<p>{e(t('grade.report_missing', lang, students=', '.join(rep.missing)))}</p>")
    if rep.similar is not None:
        out += similar_html(rep.similar, lang)
    if rep.not_graded:
        stopped = t("grade.report_not_graded", lang, students=", ".join(rep.not_graded))
        out.append(f'<p class="stopped">{e(stopped)}</p>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"
