"""`dev check`'s proof by mistakes: every known mistake of the lesson (lessons/<id>/mistakes.toml,
read by tutor.model.mistakes) is run on every checked step and must give what it says; then how
many mistakes each check catches, so a check that catches none, or a weakened one, shows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from tutor import toml
from tutor.cli.dev_findings import Line
from tutor.model.lesson import Lesson
from tutor.model.mistakes import Mistake, MistakeError, mistake_source, read_mistakes, unmet
from tutor.model.results import StepResult


def load_mistakes(lesson: Lesson) -> tuple[list[Mistake], list[Line]]:
    """The lesson's mistakes, and a ✗ line for each that cannot be read; none is a ✗ too."""
    path = lesson.folder / "mistakes.toml"
    if not path.is_file():
        return [], [Line(False, "dev.mistakes_none", {})]
    try:
        found, problems = read_mistakes(path)
    except (OSError, toml.TOMLDecodeError) as exc:
        return [], [Line(False, "dev.bad_toml", {"path": "mistakes.toml", "detail": exc})]
    bad = [Line(False, "dev.mistake_unreadable", {"detail": p}) for p in problems]
    checked = {s.id for s in lesson.checked_steps}
    usable = []
    for m in found:
        unknown = [s for s in m.expect if s not in checked]
        if unknown:
            bad.append(Line(False, "dev.mistake_step", {"id": m.id, "step": ", ".join(unknown)}))
        elif not m.steps:
            bad.append(Line(False, "dev.mistake_fails_nothing", {"id": m.id}))
        else:
            usable.append(m)
    if not usable and not bad:
        bad.append(Line(False, "dev.mistakes_none", {}))
    return usable, bad


def unproven(lesson: Lesson) -> dict[str, str]:
    """mistakes.toml's [unproven]: "step/check" = why no mistake can make that check the one
    its step fails (a check another implies, say)."""
    path = lesson.folder / "mistakes.toml"
    try:
        table = toml.loads(path.read_text(encoding="utf-8")).get("unproven", {})
    except (OSError, toml.TOMLDecodeError):
        return {}
    return {k: v for k, v in table.items() if isinstance(v, str)} if isinstance(table, dict) else {}


def diagnosis_keys(mistakes: Iterable[Mistake]) -> list[str]:
    """Every catalog key the mistakes name (to be found in the catalogs)."""
    return sorted({k for m in mistakes for e in m.expect.values() for k in e.keys | e.absent})


def build(lesson: Lesson, reference: str, mistakes: Sequence[Mistake]):
    """(mistake, learner file) for each that can be built, and a ✗ line for each that cannot."""
    ready, unusable = [], []
    for m in mistakes:
        try:
            source = mistake_source(m, reference, lesson.folder)
            compile(source, lesson.file_name, "exec")  # the variant's own typo is not the lesson's
        except MistakeError as exc:
            unusable.append(Line(False, "dev.mistake_unbuildable", {"id": m.id, "detail": exc}))
            continue
        except SyntaxError as exc:
            unusable.append(Line(False, "dev.mistake_syntax", {"id": m.id, "line": exc.lineno}))
            continue
        ready.append((m, source))
    return ready, unusable


def judge_mistake(m: Mistake, results: Sequence[StepResult], order: Sequence[str]) -> Line:
    by_id = {r.id: r for r in results}
    base = {"id": m.id, "step": ", ".join(m.steps)}
    if all(s in by_id and by_id[s].status == "pass" for s in m.steps):
        return Line(False, "dev.mistake_passed", base)
    problems = unmet(by_id, order, m.expect)
    if problems:
        return Line(False, "dev.mistake_unmet", {**base, "problems": "; ".join(problems)})
    said = "; ".join(
        f"{s} {e.check or e.status}" + (f" ({', '.join(sorted(e.keys))})" if e.keys else "")
        for s, e in m.expect.items()
        if e.status != "pass"
    )
    return Line(True, "dev.mistake_ok", {"id": m.id, "said": said})


def catches(
    reference: Sequence[StepResult], mistakes: Sequence[Mistake], unproven: Mapping[str, str]
) -> list[Line]:
    """How many mistakes name each of the reference's checks as the one their step fails. A check
    no mistake names could be deleted, or weakened, with no mistake passing: a warning, unless
    the lesson says why no mistake can reach it (`[unproven]` in mistakes.toml)."""
    checks = [f"{r.id}/{c.id}" for r in reference for c in r.checks]
    named: Counter[str] = Counter(
        f"{step}/{e.check}" for m in mistakes for step, e in m.expect.items() if e.check
    )
    counts = ", ".join(f"{c} {named[c]}" for c in checks)
    lines = [Line(True, "dev.checks_catch", {"counts": counts})]
    idle = [c for c in checks if not named[c] and c not in unproven]
    if idle:
        lines.append(Line(True, "dev.checks_catch_none", {"checks": ", ".join(idle)}, warn=True))
    said = [f"{c} ({unproven[c]})" for c in checks if not named[c] and c in unproven]
    if said:
        lines.append(Line(True, "dev.checks_unproven", {"checks": "; ".join(said)}))
    return lines
