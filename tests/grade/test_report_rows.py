"""The class report leaves no student out and puts no student in a wrong row (issue #29, 2, 3).

- Students who never started, left steps to do, handed in an empty file or called the library's
  kernel are rows of their own; the kernel user's record names that mistake.
- A symptom's row (lm3-l3's leak) does not repeat the students whose specific mistake on the same
  function already says why.
- A row is keyed by the step, the mistake and the parameters that name something (which helper
  is faulty), so each row's message is right for each of its students, and the table names the
  step.

Records are made from results as the worker gives them; one class goes through the real CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from class_kit import REFERENCE, STARTER, WRONG  # noqa: E402

from tutor.grade.record import make_record  # noqa: E402
from tutor.grade.report import class_report, report_html, report_md  # noqa: E402
from tutor.model.lesson import get_lesson  # noqa: E402
from tutor.model.results import Check, Message, StepResult  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LM3, LAB02 = get_lesson("lm3-l3"), get_lesson("lab-02")
ENV = dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8")


def passing(step: str) -> StepResult:
    return StepResult(step, "pass", [Check("values", "pass")])


def failing(step: str, likely: str, **params) -> StepResult:
    message = Message("check.values", {"what": "out", "likely": {"key": likely, "params": params}})
    return StepResult(step, "fail", [Check("values", "fail", message)])


def record(lesson, student: str, steps: list[StepResult], raw: bytes = b"code") -> dict:
    return make_record(lesson, student, f"/c/{student}.py", raw, steps, "en", 0, 3.0, 0.1)


def rows(rep) -> list[tuple[str, str, list[str]]]:
    return [(m.step, m.id, m.students) for m in rep.mistakes]


def test_a_leak_row_leaves_out_the_students_a_specific_mistake_explains():
    leak = "lm3-l3.likely.leak"
    explained = record(
        LM3,
        "ann",
        [failing("single-head", "likely.no_mask"), failing("leakage", leak)]
        + [passing("multi-head"), passing("shapes")],
    )
    unexplained = record(
        LM3,
        "bob",
        [passing("single-head"), failing("leakage", leak), passing("multi-head")]
        + [failing("shapes", "lm3-l3.likely.per_head_transpose")],  # another function
    )
    rep = class_report(LM3, [explained, unexplained])
    assert rows(rep) == [
        ("single-head", "likely.no_mask", ["ann"]),
        ("leakage", leak, ["bob"]),
        ("shapes", "lm3-l3.likely.per_head_transpose", ["bob"]),
    ]


def test_a_mistake_is_listed_under_the_step_it_was_made_at():
    # Passed single-head; "no causal mask at all" in multi-head only.
    r = record(
        LM3,
        "cat",
        [passing("single-head"), passing("leakage"), failing("multi-head", "likely.no_mask")]
        + [passing("shapes")],
    )
    rep = class_report(LM3, [r])
    assert rows(rep) == [("multi-head", "likely.no_mask", ["cat"])]
    md = report_md(LM3, rep, "en")
    assert re.search(r"^\| `multi-head` \| `likely\.no_mask`", md, re.M)


def test_a_grouped_row_names_the_helper_that_is_wrong_for_each_of_its_students():
    def lab(student: str, fn: str) -> dict:
        steps = [passing(s.id) for s in LAB02.checked_steps[:-1]]
        return record(LAB02, student, [*steps, failing("output", "likely.helper_first_fix", fn=fn)])

    rep = class_report(
        LAB02, [lab("a", "scaled_scores"), lab("b", "causal_mask"), lab("c", "scaled_scores")]
    )
    got = {(m.id, m.example["params"]["fn"]): m.students for m in rep.mistakes}
    assert got == {
        ("likely.helper_first_fix", "causal_mask"): ["b"],
        ("likely.helper_first_fix", "scaled_scores"): ["a", "c"],
    }
    md = report_md(LAB02, rep, "en")
    lines = {
        line.rsplit("|", 2)[-2].strip(): line for line in md.splitlines() if "helper_first" in line
    }
    assert "causal\\_mask" in lines["b"] and "scaled\\_scores" not in lines["b"]
    assert "scaled\\_scores" in lines["a, c"] and "causal\\_mask" not in lines["a, c"]


def test_details_that_differ_among_a_rows_students_are_not_shown_as_one_of_theirs():
    def lit(student: str, line: int) -> dict:
        steps = [failing("single-head", "likely.literal", name="T", value=6, line=line, code="6")]
        return record(LM3, student, steps + [passing(s.id) for s in LM3.checked_steps[1:]])

    rep = class_report(LM3, [lit("a", 12), lit("b", 30)])
    (m,) = rep.mistakes
    assert m.students == ["a", "b"] and m.example["params"]["line"] == "…"
    assert m.example["params"]["name"] == "T" and m.example["params"]["value"] == 6
    md = report_md(LM3, rep, "en")
    assert "line …" in md and "line 12" not in md and "line 30" not in md


@pytest.fixture(scope="module")
def unusual(tmp_path_factory):
    """Students a report used to leave out, graded by the real CLI."""
    cls = tmp_path_factory.mktemp("unusual") / "class"
    cls.mkdir()
    head, _, rest = STARTER.partition("class CausalMultiHeadAttention")
    single = REFERENCE.split("def causal_attention", 1)[1].split("class CausalMultiHeadAttention")[
        0
    ]
    partial = head.split("def causal_attention")[0] + "def causal_attention" + single
    partial += "class CausalMultiHeadAttention" + rest
    kernel = REFERENCE.replace(
        "    return weights @ v, weights",
        "    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)\n"
        "    return out, weights",
    )
    files = {
        "fresh": STARTER,  # never started
        "blank": "",  # an empty file
        "half": partial,  # single-head written, the rest left to do
        "kern": kernel,  # calls the library's kernel
        "leaky": WRONG["no_mask"],
        "fine": REFERENCE,
    }
    for sid, text in files.items():
        (cls / f"{sid}_lm3_l3.py").write_text(text, encoding="utf-8")
    out = cls.parent / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "tutor", "grade", str(cls), "--out", str(out), "--timeout", "15"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {
        p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (out / "students").glob("*.json")
    }
    return out, records, proc


def _look_at(md: str) -> dict[str, str]:
    part = md.split("## Students to look at", 1)[1].split("\n## ", 1)[0]
    body = [line for line in part.splitlines() if line.startswith("|")][2:]
    cells = [[c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in body]
    return {c[0].replace("\\", ""): c[2] for c in cells}


def test_the_kernel_users_record_names_that_mistake(unusual):
    out, records, _ = unusual
    assert [m["id"] for m in records["kern"]["mistakes"]] == ["check.kernel"]
    assert records["kern"]["mistakes"][0]["step"] == "single-head"


def test_students_a_report_used_to_leave_out_are_rows_of_their_own(unusual):
    out, records, proc = unusual
    assert records["fresh"]["not_started"] and not records["half"]["not_started"]
    assert records["blank"]["empty"] and not records["fresh"]["empty"]
    md = (out / "report.md").read_text(encoding="utf-8")
    look = _look_at(md)
    assert look["Not started: the starter file, untouched"] == "fresh"
    assert look["An empty file"] == "blank"
    assert look["Left to do: Multi-head attention (multi-head)"] == "half"
    assert look["Left to do: Tracking tensor shapes (shapes)"] == "half"
    assert (
        look["Called the library's attention kernel: Single-head causal attention (single-head)"]
        == "kern"
    )
    html = (out / "report.html").read_text(encoding="utf-8")
    for sid in ("fresh", "blank", "half", "kern"):
        assert f'<td class="w">{sid}</td>' in html, sid
    assert "Students to look at" in proc.stdout and "kern" in proc.stdout


def test_the_report_in_chinese_names_them_too(unusual):
    out, records, _ = unusual
    rep = class_report(LM3, list(records.values()))
    html = report_html(LM3, rep, "zh")
    assert "需要关注的学生" in html and "尚未动手" in html and "交了空文件" in html


def test_a_diagnosis_from_behaviour_is_grouped_by_the_mistake_it_names():
    """Issue 26: students whose outputs equal a known mistake's are a row of that mistake, with
    those the hand-written diagnosis named it for; two mistakes at once are a row each."""
    softmax = {"key": "likely.softmax_batch_dim", "params": {}}
    scale = {"key": "likely.scale_none", "params": {}}
    heads = {"key": "likely.heads_no_transpose", "params": {}}
    by_hand = record(LM3, "ann", [failing("multi-head", "likely.softmax_batch_dim")])
    by_behaviour = record(
        LM3, "bob", [failing("multi-head", "likely.behaves_as", mistake=softmax, n=3)]
    )
    two = record(
        LM3, "cy", [failing("multi-head", "likely.behaves_as_two", first=heads, second=scale, n=4)]
    )
    got = rows(class_report(LM3, [by_hand, by_behaviour, two]))
    assert ("multi-head", "likely.softmax_batch_dim", ["ann", "bob"]) in got, got
    assert ("multi-head", "likely.heads_no_transpose", ["cy"]) in got, got
    assert ("multi-head", "likely.scale_none", ["cy"]) in got, got
    assert not [r for r in got if r[1].startswith("likely.behaves_as")], got
