"""What grade's files and `check --json` say of a failure: complete (a syntax error with its
line), nothing said to be "below" that is not, no app label under the report's heading, code
as code in HTML, one diagnosis per failure; without a worker."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from tutor.grade.outputs import gradescope, junit_xml
from tutor.grade.record import make_record
from tutor.grade.report import class_report, report_html, report_md
from tutor.model.lesson import get_lesson
from tutor.model.results import Check, Failure, Message, StepResult
from tutor.text.i18n import t
from tutor.text.verdict_text import step_to_json

LM3 = get_lesson("lm3-l3")
STEPS = [s.id for s in LM3.checked_steps]
CARET = "def broken(:\n           ^"


def syntax_error() -> list[StepResult]:
    params = {"kind": "SyntaxError", "line": 55, "detail": "invalid syntax", "code": "def broken(:"}
    return [
        StepResult(
            s,
            "error",
            [Check("file-loads", "error", Message("failure.syntax", params))],
            Failure("SyntaxError", "invalid syntax", caret=CARET),
        )
        for s in STEPS
    ]


def nested_failure() -> StepResult:
    """lab-02's in-place masked_fill_ seen at other sizes, as the kit nests it."""
    inner = {
        "key": "check.mutated",
        "params": {
            "fn": "attention_weights",
            "arg": "scores",
            "err": 1.0,
            "likely": {"key": "likely.mutated", "params": {}},
        },
    }
    outer = {
        "sizes": "T=9",
        "reason": inner,
        "likely": {"key": "likely.sizes_differ", "params": {"diff": "T=9 (6)"}},
    }
    return StepResult(
        "single-head", "fail", [Check("other-sizes", "fail", Message("check.other_sizes", outer))]
    )


def test_a_syntax_error_shows_its_line_wherever_it_is_said():
    for lang in ("en", "zh"):
        r = make_record(LM3, "ann", "/x/ann.py", b"x", syntax_error(), lang, 0, 3.0, 0.1)
        assert r["file_error"]["caret"] == CARET
        output = gradescope(LM3, r, lang)["tests"][0]["output"]
        assert "def broken(:" in output and "^" in output, output
        junit = ET.fromstring(junit_xml(LM3, [r], lang)).find(".//error").text
        assert "def broken(:" in junit
        rep = class_report(LM3, [r])
        assert "def broken(:" in report_md(LM3, rep, lang)
        for text in (output, junit, report_md(LM3, rep, lang)):
            assert "below" not in text and "下面" not in text, text


def test_the_report_says_each_mistake_once_without_the_apps_label():
    steps = [nested_failure()] + [
        StepResult(s, "pass", [Check("values", "pass")]) for s in STEPS[1:]
    ]
    for lang in ("en", "zh"):
        r = make_record(LM3, "ann", "/x/ann.py", b"x", steps, lang, 0, 3.0, 0.1)
        assert [m["id"] for m in r["mistakes"]] == ["likely.mutated"]  # not the sizes guess too
        rep = class_report(LM3, [r])
        md, html = report_md(LM3, rep, lang), report_html(LM3, rep, lang)
        label = t("record.likely_label", lang)
        assert label not in md and label not in html
        assert "`masked_fill_`" not in html and "<code>masked_fill_</code>" in html
        row = next(
            line for line in md.splitlines() if line.startswith("|") and "likely.mutated" in line
        )
        assert ("`likely.mutated`：" if lang == "zh" else "`likely.mutated`: ") in row


def test_check_json_gives_the_records_fields_next_to_the_message():
    step = StepResult(
        "single-head",
        "error",
        [
            Check(
                "runs",
                "fail",
                Message(
                    "check.raised",
                    {
                        "fn": "causal_attention",
                        "kind": "RuntimeError",
                        "line": 12,
                        "detail": "The size of tensor a (6) must match the size of tensor b (9) at"
                        " non-singleton dimension 1",
                    },
                ),
            )
        ],
    )
    (check,) = step_to_json(step, "en")["checks"]
    assert check["raw_error"] == {
        "kind": "RuntimeError",
        "detail": step.checks[0].message.params["detail"],
    }
    assert check["where"]["line"] == "12" and check["diagnosis"] is None
    assert set(check) >= {"message", "expected", "got", "where", "diagnosis", "fix", "raw_error"}
    # The raw error last, after what it means in the reader's language.
    message = check["message"]
    assert message.index("6 against 9") < message.index("The size of tensor a")
    (zh,) = step_to_json(step, "zh")["checks"]
    assert "第 1 维" in zh["message"]
    json.dumps(check)
    # A nested failure: its own diagnosis, the context a sentence of its own.
    (nested,) = step_to_json(nested_failure(), "en")["checks"]
    assert nested["diagnosis"] == t("likely.mutated", "en")
    assert nested["message"].startswith(t("likely.mutated", "en"))
    assert "Likely mistake" not in nested["message"][len(nested["diagnosis"]) :]
