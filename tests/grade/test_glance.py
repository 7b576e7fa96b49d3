"""What to re-teach, at a glance (issue #29, part 2): per step its pass rate and the diagnoses
behind its failures, with counts and students; a student × step grid; students who never
started (or handed in an empty file) as rows of their own; the kernel's callers named at
their step. Records as the worker gives them; rendered for the terminal at 80 columns."""

from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console

from tutor.grade.glance import glance, rich_glance
from tutor.grade.record import make_record
from tutor.grade.report import class_report, report_html, report_md
from tutor.model.lesson import get_lesson
from tutor.model.results import Check, Message, StepResult

LM3 = get_lesson("lm3-l3")
STEPS = [s.id for s in LM3.checked_steps]


def passing(step: str) -> StepResult:
    return StepResult(step, "pass", [Check("values", "pass")])


def failing(step: str, likely: str) -> StepResult:
    message = Message("check.values", {"what": "out", "likely": {"key": likely, "params": {}}})
    return StepResult(step, "fail", [Check("values", "fail", message)])


def todo(step: str) -> StepResult:
    return StepResult(step, "todo", [Check("implemented", "todo", Message("check.todo", {}))])


def kernel(step: str) -> StepResult:
    message = Message("check.kernel", {"fn": "causal_attention", "kernel": "F.sdpa"})
    return StepResult(step, "fail", [Check("own-formula", "fail", message)])


def rec(student: str, steps: list[StepResult], raw: bytes = b"code") -> dict:
    return make_record(LM3, student, f"/c/{student}.py", raw, steps, "en", 0, 3.0, 0.1)


def a_class() -> list[dict]:
    ok = [passing(s) for s in STEPS]
    return [
        rec("ann", ok),
        rec(
            "bob",
            [failing("single-head", "likely.no_mask"), failing("leakage", "lm3-l3.likely.leak")]
            + ok[2:],
        ),
        rec("cy", [failing("single-head", "likely.no_mask"), *ok[1:]]),
        rec("dee", [kernel("single-head"), *ok[1:]]),
        rec("eli", [*ok[:2], todo("multi-head"), todo("shapes")]),
        rec("fay", [todo(s) for s in STEPS]),  # never started
        rec("gus", [failing("single-head", "likely.unknown"), *ok[1:]]),
        rec("张三", [*ok[:3], failing("shapes", "lm3-l3.likely.per_head_transpose")]),
    ]


def test_per_step_the_rate_and_why_the_others_failed():
    rep = class_report(LM3, a_class())
    by_step = {g.id: g for g in glance(LM3, rep)}
    single = by_step["single-head"]
    assert (single.passed, single.of) == (3, 8)
    causes = {c.label: c.students for c in single.causes}
    assert causes == {
        "likely.no_mask": ["bob", "cy"],
        "kernel": ["dee"],
        "likely.unknown": ["gus"],
    }  # fay never started: a row of her own, not a failure of each step
    # bob's leak is explained by his single-head mistake, and said so.
    assert {c.label: c.students for c in by_step["leakage"].causes} == {
        "likely.no_mask ← single-head": ["bob"]
    }
    assert {c.label: c.students for c in by_step["multi-head"].causes} == {"todo": ["eli"]}
    assert rep.grid["eli"] == {
        "single-head": "pass",
        "leakage": "pass",
        "multi-head": "todo",
        "shapes": "todo",
    }


def _render(renderable, width: int = 80) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(renderable)
    return buf.getvalue()


def test_the_terminal_glance_fits_80_columns_in_both_languages():
    rep = class_report(LM3, a_class())
    for lang in ("en", "zh"):
        text = _render(rich_glance(LM3, rep, lang))
        assert max(cell_len(line) for line in text.splitlines()) <= 80, text
        rows = {
            cells[1].strip(): cells[2:-1]
            for cells in (line.split("│") for line in text.splitlines())
            if len(cells) >= 6
        }
        # The grid: the students with a step not passed, each step's mark in its own cell.
        assert [c.strip() for c in rows["bob"][:4]] == ["✗", "✗", "✓", "✓"]
        assert [c.strip() for c in rows["张三"][:4]] == ["✓", "✓", "✓", "✗"]
        assert [c.strip() for c in rows["fay"][:4]] == ["-", "-", "-", "-"]
        assert "ann" not in rows  # passed everything: not stuck anywhere
    lines = _render(rich_glance(LM3, rep, "en")).splitlines()
    assert any("not started" in line and "1: fay" in line for line in lines)
    assert any("single-head" in line and "1 × called the" in line for line in lines)


def test_the_files_show_the_glance_and_the_whole_grid():
    rep = class_report(LM3, a_class())
    md = report_md(LM3, rep, "en")
    section = md.split("## What to re-teach, at a glance", 1)[1].split("\n## ", 1)[0]
    assert "- `single-head` 3/8 (38%)" in section
    assert "  - 2 × likely.no\\_mask: bob, cy" in section
    assert (
        "| 张三 | ✓ | ✓ | ✓ | ✗ |" in section and "| fay | - | - | - | - | not started |" in section
    )
    html = report_html(LM3, rep, "zh")
    assert '<table class="grid">' in html and html.count('<td class="ko"') == 6
    assert "一眼看出该重讲什么" in html and "尚未动手" in html
