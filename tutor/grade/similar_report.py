"""Similar submissions (similar.py) in the report: always worded as evidence to look at, never as
a verdict. Markdown lists the groups; HTML also shows each pair side by side with the lines they
share marked; the terminal says how many groups there are and where to look. Pure: no torch.
"""

from __future__ import annotations

from tutor.grade.similar import THRESHOLD, Group, Pair, Similarity
from tutor.text.i18n import t
from tutor.text.safe_text import html_text as e
from tutor.text.safe_text import markdown, one_line

SIDE_BY_SIDE = 30  # pairs drawn in report.html; every pair is in similarity.json


def _intro(sim: Similarity, lang: str) -> str:
    return t("grade.similar.intro", lang, compared=sim.compared, threshold=f"{THRESHOLD:g}")


def _group_line(g: Group, lang: str, name=one_line) -> str:
    students = ", ".join(name(s) for s in g.students)
    pairs = "; ".join(
        t("grade.similar.pair", lang, a=name(p.a), b=name(p.b), similarity=f"{p.similarity:.2f}")
        for p in g.pairs
    )
    return (
        t("grade.similar.group", lang, students=students, max=f"{g.pairs[0].similarity:.2f}")
        + f" ({pairs})"
    )


def similar_md(sim: Similarity, lang: str) -> list[str]:
    out = [f"## {t('grade.similar.title', lang)}", "", _intro(sim, lang), ""]
    if not sim.groups:
        return out + [t("grade.similar.none", lang)]
    return out + [f"- {_group_line(g, lang, markdown)}" for g in sim.groups]


def rich_similar(sim: Similarity, lang: str):
    from rich.text import Text

    from tutor.render.wrap import Wrapped

    if not sim.groups:
        return Text(t("grade.similar.title", lang) + ": " + t("grade.similar.none", lang))
    n = len(sim.groups)
    return Wrapped(t("grade.similar.summary_one" if n == 1 else "grade.similar.summary", lang, n=n))


SIMILAR_CSS = """
.pair { display: flex; gap: 0.5rem; margin: 0.3rem 0 1.2rem; }
.pair > div { flex: 1; min-width: 0; }
.pair pre { font-size: 0.8em; background: #fafafa; border: 1px solid #ddd; padding: 0.3rem; overflow-x: auto; margin: 0; }
.pair mark { background: #ffe08a; display: inline-block; width: 100%; }
"""


def _code(source: str, marked: list[int]) -> str:
    shared = set(marked)
    lines = []
    for i, line in enumerate(source.splitlines(), 1):
        text = f"{i:4d}  {e(line)}"
        lines.append(f"<mark>{text}</mark>" if i in shared else text)
    return "<pre>" + "\n".join(lines) + "</pre>"


def _pair_html(p: Pair, sim: Similarity, lang: str) -> str:
    head = t("grade.similar.pair", lang, a=p.a, b=p.b, similarity=f"{p.similarity:.2f}")
    sides = "".join(
        f"<div><b>{e(who)}</b>{_code(sim.sources.get(who, ''), lines)}</div>"
        for who, lines in ((p.a, p.lines_a), (p.b, p.lines_b))
    )
    return f'<h3>{e(head)}</h3><div class="pair">{sides}</div>'


def similar_html(sim: Similarity, lang: str) -> list[str]:
    out = [f"<h2>{e(t('grade.similar.title', lang))}</h2>", f"<p>{e(_intro(sim, lang))}</p>"]
    if not sim.groups:
        return out + [f"<p>{e(t('grade.similar.none', lang))}</p>"]
    out.append(
        "<ul>" + "".join(f"<li>{e(_group_line(g, lang))}</li>" for g in sim.groups) + "</ul>"
    )
    out.append(f'<p class="why">{e(t("grade.similar.shared", lang))}</p>')
    pairs = [p for g in sim.groups for p in g.pairs]
    out += [_pair_html(p, sim, lang) for p in pairs[:SIDE_BY_SIDE]]
    if len(pairs) > SIDE_BY_SIDE:
        out.append(f"<p>{e(t('grade.similar.more', lang, n=len(pairs) - SIDE_BY_SIDE))}</p>")
    return out
