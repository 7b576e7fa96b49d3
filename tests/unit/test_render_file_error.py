"""A file that does not load, as the app's results panel shows it (render/verdicts.step_results)
and as `attn-tutor check` groups it (report.file_error): the file's message, in both languages,
with nothing of a step's function in it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from tutor.model.results import Check, Failure, Frame, Message, StepResult
from tutor.render.verdicts import step_results
from tutor.text.verdict_text import file_error

CASES = {
    "failure.missing_package": {
        "module": "matplotlib",
        "line": 3,
        "code": "import matplotlib.pyplot as plt",
        "kind": "ModuleNotFoundError",
        "detail": "No module named 'matplotlib'",
    },
    "failure.file_exception": {
        "kind": "ZeroDivisionError",
        "detail": "division by zero",
        "line": 9,
        "code": "x = 1 / 0",
    },
    "failure.refused": {
        "kind": "RefusedImport",
        "detail": "…",
        "line": 1,
        "code": "from tutor.reference.lm3_l3 import *",
    },
}


def result(key, step="scores"):
    params = CASES[key]
    failure = Failure(
        params["kind"], params["detail"], [Frame(params["line"], "<module>", params["code"])]
    )
    return StepResult(step, "error", [Check("file-loads", "error", Message(key, params))], failure)


def screen(renderable, width=80) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("key", list(CASES))
def test_the_results_panel_shows_the_files_message(key, lang):
    text = screen(step_results(result(key), lang))
    assert "{" not in text and "}" not in text
    flat = "".join(text.split())
    assert "".join(CASES[key]["code"].split()) in flat  # the line, in the message and the traceback
    if key == "failure.missing_package":
        assert "matplotlib" in flat and ("try:" in flat)
    assert ("Yourfile" in flat) if lang == "en" else ("你的文件" in flat)


def test_file_error_groups_only_when_every_step_says_the_same():
    same = [result("failure.missing_package", s) for s in ("scores", "mask")]
    assert file_error(same) is same[0]
    assert file_error([same[0], result("failure.file_exception", "mask")]) is None
    ran = StepResult("mask", "fail", [Check("values", "fail", Message("check.values", {}))])
    assert file_error([same[0], ran]) is None and file_error([]) is None
