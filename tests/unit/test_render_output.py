"""A step's printed output, and the note when only its tail was kept, in both languages
(the worker sends the count of bytes cut as data: it has no language)."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from rich.console import Console

from tutor.cli.check_text import print_report
from tutor.model.lesson import get_lesson
from tutor.model.results import Check, Message, StepResult
from tutor.render.verdicts import shown_of, step_results

NOTE = {
    "en": "(the first 59,996,000 bytes are not shown)",
    "zh": "（前面 59,996,000 字节的输出未显示）",
}


def cut(status: str = "pass") -> StepResult:
    checks = (
        [Check("runs", "pass")]
        if status == "pass"
        else [Check("runs", status, Message("failure.timeout", {"seconds": "3"}))]
    )
    return StepResult(
        "leakage", status, checks, output="x" * 3999 + "\n", output_dropped=59_996_000
    )


def panel(result: StepResult, lang: str) -> str:
    console = Console(width=78, record=True, color_system=None, file=io.StringIO())
    console.print(step_results(result, lang))
    return console.export_text(styles=False)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_results_panel_says_how_much_output_was_cut(lang):
    text = panel(cut(), lang)
    assert NOTE[lang] in text
    assert lang == "en" or "bytes" not in text  # the review's finding: English in Chinese mode
    assert text.index(NOTE[lang]) < text.index("xxxx")  # above the tail it explains


def test_no_note_when_nothing_was_cut():
    result = StepResult("leakage", "pass", [Check("runs", "pass")], output="hello\n")
    assert "not shown" not in panel(result, "en") and "未显示" not in panel(result, "zh")


def test_a_new_count_redraws_the_panel():
    other = cut()
    other.output_dropped += 1
    assert shown_of(cut()) != shown_of(other)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_check_prints_the_note_above_a_timed_out_steps_output(lang):
    out = io.StringIO()
    with redirect_stdout(out):
        print_report(get_lesson("lm3-l3"), Path("lm3_l3.py"), [cut("timeout")], lang)
    text = out.getvalue()
    assert NOTE[lang] in text and text.index(NOTE[lang]) < text.index("xxxx")
