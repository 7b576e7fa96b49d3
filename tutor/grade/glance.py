"""What to re-teach, at a glance: per step its pass rate and why its failures failed (each
diagnosis with its count and students, the steps left to do, the kernel called, failures no
diagnosis explains), and a student × step grid. Made from the class report's data; drawn for
the terminal (Rich, 80 columns), Markdown and HTML (a small coloured table). Pure: no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tutor.grade.summary import ClassReport, _key_params
from tutor.text.i18n import local_key, t

# A cell of the grid: its mark (a cue besides colour: NO_COLOR, print) and its colours.
MARKS = {"pass": "✓", "fail": "✗", "todo": "-", "timeout": "T", "error": "E", "not run": " "}
RICH_STYLE = {
    "pass": "green",
    "fail": "bold red",
    "todo": "dim",
    "timeout": "yellow",
    "error": "magenta",
}
HTML_CLASS = {"pass": "ok", "fail": "ko", "todo": "td", "timeout": "to", "error": "er"}
GRID_ROWS = 40  # the terminal shows this many students; the files show them all


@dataclass
class Cause:
    label: str  # a diagnosis id (with the names that tell rows apart), or a grade.glance key
    students: list[str]
    own: bool = False  # label is a grade.glance.<label> key, not a diagnosis id


@dataclass
class StepGlance:
    id: str
    passed: int
    of: int
    causes: list[Cause] = field(default_factory=list)


def _same_function(lesson, a: str, b: str) -> bool:
    try:
        return bool(set(lesson.step(a).functions) & set(lesson.step(b).functions))
    except KeyError:
        return False


def glance(lesson, rep: ClassReport) -> list[StepGlance]:
    out = []
    todo = {row.step: row.students for row in rep.look_at if row.kind == "todo"}
    kernel = {row.step: row.students for row in rep.look_at if row.kind == "kernel"}
    not_started = {s for _, who in own_rows(rep) for s in who}  # rows of their own
    for step in rep.steps:
        causes: list[Cause] = []
        said: set[str] = set()
        for m in rep.mistakes:
            if m.step == step.id:
                names = [v for _, v in _key_params(m.example["params"])]
                label = local_key(m.id) + (f" ({', '.join(names)})" if names else "")
                causes.append(Cause(label, list(m.students)))
                said |= set(m.students)
        for key, who in (("kernel", kernel.get(step.id, [])), ("todo", todo.get(step.id, []))):
            if who:
                causes.append(Cause(key, list(who), own=True))
                said |= set(who)
        failing = [
            s
            for s, steps in rep.grid.items()
            if steps.get(step.id) not in ("pass", "not run") and s not in not_started
        ]
        unexplained = [s for s in failing if s not in said]
        # A failure a mistake at another step of the same function explains (a leak: no mask).
        via: dict[str, list[str]] = {}
        for m in rep.mistakes:
            if m.step != step.id and _same_function(lesson, m.step, step.id):
                for s in m.students:
                    if s in unexplained:
                        via.setdefault(f"{local_key(m.id)} ← {m.step}", []).append(s)
        for label, who in via.items():
            causes.append(Cause(label, who))
        seen = {s for who in via.values() for s in who}
        unexplained = [s for s in unexplained if s not in seen]
        if unexplained:
            causes.append(Cause("unexplained", unexplained, own=True))
        causes.sort(key=lambda c: -len(c.students))
        out.append(StepGlance(step.id, step.passed, step.of, causes))
    return out


def own_rows(rep: ClassReport) -> list[tuple[str, list[str]]]:
    """Students who never started or handed in an empty file: a row each, not a failure per
    step (grade.glance.flag.<kind>)."""
    return [(r.kind, r.students) for r in rep.look_at if r.kind in ("not_started", "empty")]


def _sep(lang: str) -> str:
    return "；" if lang == "zh" else "; "


def cause_text(cause: Cause, lang: str) -> str:
    return t(f"grade.glance.{cause.label}", lang) if cause.own else cause.label


def flags(rep: ClassReport) -> dict[str, str]:
    """Per student, the reasons of their own rows (not started, kernel, empty) as keys."""
    out: dict[str, list[str]] = {}
    for row in rep.look_at:
        if row.kind in ("not_started", "kernel", "empty"):
            for s in row.students:
                if row.kind not in out.setdefault(s, []):
                    out[s].append(row.kind)
    return {s: ", ".join(kinds) for s, kinds in out.items()}


def stuck(rep: ClassReport) -> list[str]:
    """Students with a step not passed, the most steps not passed first."""

    def missed(s: str) -> int:
        return sum(v not in ("pass", "not run") for v in rep.grid[s].values())

    return sorted((s for s in rep.grid if missed(s)), key=lambda s: (-missed(s), s))


# ------------------------------------------------------------------ terminal


def rich_glance(lesson, rep: ClassReport, lang: str):
    from rich.console import Group, RenderableType
    from rich.table import Table
    from rich.text import Text

    from tutor.render.wrap import Wrapped
    from tutor.text.safe_text import one_line

    table = Table(title=t("grade.glance.title", lang), title_justify="left")
    table.add_column(t("grade.col_step", lang), no_wrap=True)
    table.add_column(t("grade.col_rate", lang), justify="right", no_wrap=True)
    table.add_column(t("grade.glance.why", lang), overflow="fold")
    for g in glance(lesson, rep):
        why = _sep(lang).join(f"{len(c.students)} × {cause_text(c, lang)}" for c in g.causes)
        rate = f"{100 * g.passed / g.of:.0f}%" if g.of else "–"
        table.add_row(g.id, rate, Wrapped(why or "–"))
    for kind, who in own_rows(rep):
        said = f"{len(who)}: {', '.join(one_line(s) for s in who)}"
        table.add_row(Text(t(f"grade.glance.flag.{kind}", lang), style="bold"), "", Wrapped(said))
    students = stuck(rep)
    steps = [s.id for s in lesson.checked_steps]
    grid = Table(title=t("grade.glance.grid", lang), title_justify="left")
    grid.add_column(t("grade.col_student", lang), overflow="fold", max_width=24)
    for i, _ in enumerate(steps, 1):
        grid.add_column(str(i), justify="center", no_wrap=True)
    marks = flags(rep)
    if any(s in marks for s in students[:GRID_ROWS]):
        grid.add_column("", overflow="fold")
    for s in students[:GRID_ROWS]:
        cells = [
            Text(MARKS.get(v, "?"), style=RICH_STYLE.get(v, ""))
            for v in (rep.grid[s][x] for x in steps)
        ]
        note = (
            ", ".join(t(f"grade.glance.flag.{k}", lang) for k in marks[s].split(", "))
            if s in marks
            else ""
        )
        notes = [Text(note, style="dim")] if len(grid.columns) > len(steps) + 1 else []
        grid.add_row(Text(one_line(s)), *cells, *notes)
    legend = "  ".join(f"{i} {x}" for i, x in enumerate(steps, 1))
    parts: list[RenderableType] = [table]
    if students:
        parts += [grid, Text(t("grade.glance.legend", lang) + "\n" + legend, style="dim")]
        if len(students) > GRID_ROWS:
            parts.append(Text(t("grade.glance.more", lang, n=len(students) - GRID_ROWS)))
    return Group(*parts)


# ------------------------------------------------------------------ Markdown and HTML


def glance_md(lesson, rep: ClassReport, lang: str) -> list[str]:
    from tutor.text.safe_text import markdown

    out = [f"## {t('grade.glance.title', lang)}", ""]
    for g in glance(lesson, rep):
        rate = f"{100 * g.passed / g.of:.0f}%" if g.of else "–"
        out.append(f"- `{g.id}` {g.passed}/{g.of} ({rate})")
        for c in g.causes:
            who = ", ".join(markdown(s) for s in c.students)
            out.append(f"  - {len(c.students)} × {markdown(cause_text(c, lang))}: {who}")
    for kind, students in own_rows(rep):
        who = ", ".join(markdown(s) for s in students)
        out.append(f"- {t(f'grade.glance.flag.{kind}', lang)}: {len(students)}: {who}")
    steps = [s.id for s in lesson.checked_steps]
    marks = flags(rep)
    out += ["", f"### {t('grade.glance.grid', lang)}", "", t("grade.glance.legend", lang), ""]
    out.append(
        "| " + " | ".join([t("grade.col_student", lang), *(f"`{s}`" for s in steps), ""]) + " |"
    )
    out.append("|---|" + ":-:|" * len(steps) + "---|")
    for s in sorted(rep.grid):
        note = (
            ", ".join(t(f"grade.glance.flag.{k}", lang) for k in marks[s].split(", "))
            if s in marks
            else ""
        )
        cells = [MARKS.get(rep.grid[s][x], "?") for x in steps]
        out.append("| " + " | ".join([markdown(s), *cells, markdown(note)]) + " |")
    return out


GLANCE_CSS = """
table.grid td, table.grid th { text-align: center; padding: 0.1rem 0.4rem; border: 1px solid #fff; }
table.grid td.who { text-align: left; white-space: nowrap; }
table.grid td.ok { background: #bfe5c8; } table.grid td.ko { background: #f2b8b0; }
table.grid td.td { background: #e4e4e4; } table.grid td.to { background: #f7dc8f; }
table.grid td.er { background: #d9b8e8; } table.grid { width: auto; }
ul.causes { margin: 0.2rem 0 0.8rem; }
"""


def glance_html(lesson, rep: ClassReport, lang: str) -> list[str]:
    from tutor.text.safe_text import html_text as e

    out = [f"<h2>{e(t('grade.glance.title', lang))}</h2>"]
    for g in glance(lesson, rep):
        rate = f"{100 * g.passed / g.of:.0f}%" if g.of else "–"
        out.append(f"<p><code>{e(g.id)}</code> {g.passed}/{g.of} ({rate})</p>")
        if g.causes:
            out.append('<ul class="causes">')
            for c in g.causes:
                who = e(", ".join(c.students))
                out.append(f"<li>{len(c.students)} × {e(cause_text(c, lang))}: {who}</li>")
            out.append("</ul>")
    for kind, students in own_rows(rep):
        flag = t(f"grade.glance.flag.{kind}", lang)
        out.append(f"<p><b>{e(flag)}</b>: {len(students)}: {e(', '.join(students))}</p>")
    steps = [s.id for s in lesson.checked_steps]
    marks = flags(rep)
    out.append(f"<h3>{e(t('grade.glance.grid', lang))}</h3>")
    out.append(f'<p class="why">{e(t("grade.glance.legend", lang))}</p>')
    out.append(
        '<table class="grid"><tr><th></th>'
        + "".join(f"<th>{e(s)}</th>" for s in steps)
        + "<th></th></tr>"
    )
    for s in sorted(rep.grid):
        note = (
            ", ".join(t(f"grade.glance.flag.{k}", lang) for k in marks[s].split(", "))
            if s in marks
            else ""
        )
        cells = "".join(
            f'<td class="{HTML_CLASS.get(v, "")}" title="{e(v)}">{e(MARKS.get(v, "?"))}</td>'
            for v in (rep.grid[s][x] for x in steps)
        )
        out.append(f'<tr><td class="who">{e(s)}</td>{cells}<td class="why">{e(note)}</td></tr>')
    out.append("</table>")
    return out
