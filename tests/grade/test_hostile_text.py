"""Text a student's file or folder shapes, in every output of `check`, `grade` and the app's
panel: shown as text (control characters escaped), never interpreted (Markdown, HTML, XML, CSV),
one file per student, links not followed. Results as the worker gives them; no worker."""

from __future__ import annotations

import csv
import io
import json
import os
import xml.etree.ElementTree as ET

import pytest
from rich.console import Console

from tutor.grade.collect import collect
from tutor.grade.outputs import grades_csv, junit_xml, read_records, write_all, write_record
from tutor.grade.record import make_record
from tutor.grade.report import class_report, report_html, report_md, rich_report
from tutor.grade.run import read_submission
from tutor.model.lesson import get_lesson
from tutor.model.results import Check, Failure, Frame, Message, StepResult
from tutor.render.verdicts import step_results

LM3 = get_lesson("lm3-l3")

# Forms of our own: a cursor-hiding CSI, an 8-bit CSI (C1), OSC 8 hyperlink ended by ST, a
# DEL, a right-to-left override and an isolate, a carriage return that rewrites the line.
HOSTILE = (
    "boom\x1b[?25l\x9b2J\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"
    "\x7f\u202egnp.exe\u2066x\u2069\rOK <script>alert(1)</script> *bold* [a](b)"
)
RAW = ["\x1b", "\x9b", "\x7f", "\u202e", "\u2066", "\u2069", "\r"]


def raised(step: str, text: str = HOSTILE, kind: str = "ValueError") -> StepResult:
    message = Message(
        "failure.exception", {"fn": "forward", "kind": "ValueError", "line": 3, "detail": text}
    )
    frame = Frame(line=3, function="f\x1b]0;t\x07", code=f"raise ValueError('{text}')")
    return StepResult(
        step,
        "error",
        [Check("runs", "error", message)],
        Failure(kind, text, frames=[frame]),
        output=f"printed {text}\n",
    )


def records(students):
    out = []
    for student in students:
        steps = [raised(s.id, kind="crash") for s in LM3.checked_steps]  # in the report's problems
        out.append(make_record(LM3, student, f"/c/{student}.py", b"x", steps, "en", 0, 3.0, 0.1))
    return out


def no_raw(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"{ch!r} reached the output raw"


def test_the_panel_shows_control_characters_as_text():
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system="truecolor")
    console.print(step_results(raised("single-head"), "en"))
    shown = console.file.getvalue()
    # Rich's own colours are there (ESC[…m), but no escape of the learner's: no OSC, no cursor
    assert "\x1b]" not in shown and "\x1b[?25l" not in shown
    for ch in RAW[1:]:
        assert ch not in shown
    assert "\\x1b" in shown and "\\u202e" in shown


def test_checks_text_output_shows_control_characters_as_text(capsys):
    from tutor.cli.check_text import print_report

    print_report(LM3, "/c/x\x1b]0;pwned\x07.py", [raised(s.id) for s in LM3.checked_steps], "en")
    out = capsys.readouterr().out  # not a terminal: no colour of ours either
    assert "\x1b" not in out and "\x07" not in out
    no_raw(out)
    assert "\\x1b]0;pwned\\x07" in out and "\\u202egnp.exe" in out


def test_json_records_escape_c1_del_and_bidi():
    from tutor.grade.outputs import dumps  # as `check --json` prints (safe_text.json_text)

    record = records(["a"])[0]
    text = dumps(record)
    no_raw(text)
    assert "\\u202e" in text and json.loads(text) == record


def test_grades_table_and_files_keep_student_text_as_text(tmp_path):
    students = ['=HYPERLINK("http://x")', "@SUM(A1)", "\tcmd", "+1", "  -2", "ok\x1b]52;c;eA==\x07"]
    recs = records(students)
    rep = class_report(LM3, recs)

    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    console.print(rich_report(LM3, rep, "en"))
    table = console.file.getvalue()
    assert "\x1b]" not in table and "\x07" not in table and "\x9b" not in table

    rows = list(csv.reader(io.StringIO(grades_csv(LM3, recs))))[2:]
    for row in rows:
        assert not row[0].lstrip(" ").startswith(("=", "+", "-", "@", "\t", "\r")), row[0]
        assert row[0].startswith("'") or row[0].startswith("ok")
    no_raw(grades_csv(LM3, recs))

    root = ET.fromstring(junit_xml(LM3, recs, "en"))  # parses: no ESC, no \x07 in the XML
    assert len(root.findall("testsuite")) == len(students)
    assert "\\x1b" in ET.tostring(root, encoding="unicode")

    md = report_md(LM3, rep, "en")
    no_raw(md)
    assert "<script>" not in md and "*bold*" not in md and "[a](b)" not in md
    assert "&lt;script&gt;" in md

    page = report_html(LM3, rep, "en")
    no_raw(page)
    assert "<script>" not in page and "&lt;script&gt;" in page


@pytest.mark.parametrize(
    "ids",
    [
        ["a?b", "a_b", "a%3Fb"],  # the pair, and the escape of one as an id of its own
        ["x/y", "x_y", "x%2Fy"],
        ["Ann", "ann"],  # one file on a case-insensitive file system
        ["..", ".", "_"],
    ],
)
def test_every_student_gets_a_record_file_of_their_own(tmp_path, ids):
    for r in records(ids):
        write_record(tmp_path, r)
    names = [p.name for p in (tmp_path / "students").iterdir()]
    assert len({n.casefold() for n in names}) == len(ids), names
    assert sorted(r["student"] for r in read_records(tmp_path)) == sorted(ids)
    assert all(p.parent == tmp_path / "students" for p in (tmp_path / "students").iterdir())


def test_chinese_ids_stay_readable_and_apart(tmp_path):
    for r in records(["张三?", "张三_", "张三"]):
        write_record(tmp_path, r)
    names = sorted(p.name for p in (tmp_path / "students").iterdir())
    assert names == ["张三%3F.json", "张三.json", "张三_.json"]


def test_all_outputs_are_written_for_hostile_ids(tmp_path):
    write_all(tmp_path, LM3, records(["a?b", "a_b", "../evil"]), "en")
    assert len(list((tmp_path / "gradescope").iterdir())) == 3
    assert not (tmp_path.parent / "evil").exists()


def _class(tmp_path):
    cls = tmp_path / "class"
    for student in ("alice", "bob"):
        (cls / student).mkdir(parents=True)
        (cls / student / "lm3_l3.py").write_text(f"# {student}\n")
    return cls


def test_a_symlinked_file_inside_a_students_folder_is_not_followed(tmp_path):
    cls = _class(tmp_path)
    (cls / "bob" / "lm3_l3.py").unlink()
    os.symlink(cls / "alice" / "lm3_l3.py", cls / "bob" / "lm3_l3.py")
    subs = {s.student: s for s in collect([cls], LM3)}
    assert subs["bob"].link and not subs["alice"].link
    raw, source, problem = read_submission(subs["bob"])
    assert raw is None and source is None and problem[0] == "failure.symlink"
    assert read_submission(subs["alice"])[1] == "# alice\n"


def test_a_symlinked_folder_or_file_in_a_class_is_not_followed(tmp_path):
    cls = _class(tmp_path)
    os.symlink(cls / "alice", cls / "carol")
    os.symlink(LM3.folder / "checks.py", cls / "dave.py")  # at the installed lesson
    subs = {s.student: s for s in collect([cls], LM3)}
    assert subs["carol"].link and subs["dave"].link
    for who in ("carol", "dave"):
        assert read_submission(subs[who])[2][0] == "failure.symlink"
        steps_key = read_submission(subs[who])[2]
        assert steps_key is not None


def test_a_link_made_after_collect_is_refused_too(tmp_path):
    cls = _class(tmp_path)
    subs = {s.student: s for s in collect([cls], LM3)}
    (cls / "bob" / "lm3_l3.py").unlink()
    os.symlink(cls / "alice" / "lm3_l3.py", cls / "bob" / "lm3_l3.py")
    assert read_submission(subs["bob"])[2][0] == "failure.symlink"


def test_a_linked_file_takes_its_own_folders_id_not_its_targets(tmp_path):
    cls = _class(tmp_path)
    (cls / "bob" / "lm3_l3.py").unlink()
    os.symlink(cls / "alice" / "lm3_l3.py", cls / "bob" / "lm3_l3.py")
    from tutor.grade.collect import student_id

    assert student_id(cls / "bob" / "lm3_l3.py", LM3) == "bob"


def test_a_folder_name_with_control_characters_is_an_id_shown_as_text(tmp_path):
    cls = _class(tmp_path)
    (cls / "eve\x1b[2J").mkdir()
    (cls / "eve\x1b[2J" / "lm3_l3.py").write_text("x = 1\n")
    ids = [s.student for s in collect([cls], LM3)]
    assert "eve\\x1b[2J" in ids and not any("\x1b" in i for i in ids)
