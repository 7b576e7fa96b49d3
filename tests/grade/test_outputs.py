"""Records and the files made from them (tutor/grade/record.py, outputs.py), without a worker:
results as the worker gives them, for a lesson whose steps are worth different points."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import shutil
import xml.etree.ElementTree as ET

import pytest

from tutor.grade.outputs import grades_csv, gradescope, junit_xml
from tutor.grade.record import make_record, status_of
from tutor.grade.report import class_report
from tutor.model.lesson import get_lesson, load_lesson
from tutor.model.results import Check, Failure, Message, StepResult

LM3 = get_lesson("lm3-l3")


@pytest.fixture()
def weighted(tmp_path):
    """A copy of lm3-l3 whose lesson.toml gives points and a version."""
    folder = tmp_path / "lessons" / "lm3-l3"
    shutil.copytree(LM3.folder, folder)
    text = (folder / "lesson.toml").read_text(encoding="utf-8")
    text = text.replace('file = "lm3_l3.py"\n', 'file = "lm3_l3.py"\nversion = "2026.1"\n', 1)
    text = text.replace(
        'id = "single-head"\nkind = "checked"\n',
        'id = "single-head"\nkind = "checked"\npoints = 3\n',
    )
    text = text.replace(
        'id = "shapes"\nkind = "checked"\n', 'id = "shapes"\nkind = "checked"\npoints = 0.5\n'
    )
    (folder / "lesson.toml").write_text(text, encoding="utf-8")
    return load_lesson(folder)


def passing(step: str) -> StepResult:
    return StepResult(step, "pass", [Check("values", "pass")], ms=12.0)


def failing(step: str, likely: str) -> StepResult:
    message = Message(
        "check.values",
        {
            "what": "out",
            "err": 0.5,
            "where": "(0,)",
            "tol": "1e-5",
            "likely": {"key": likely, "params": {}},
        },
    )
    return StepResult(step, "fail", [Check("matches-pytorch", "fail", message)], ms=9.0)


def test_points_and_version_come_from_lesson_toml(weighted):
    assert [s.points for s in weighted.checked_steps] == [3, 1, 1, 0.5]
    assert weighted.max_points == 5.5 and weighted.version == "2026.1"
    assert LM3.max_points == len(LM3.checked_steps) and LM3.version == "1"  # the defaults


def test_a_negative_points_value_is_refused(weighted, tmp_path):
    path = weighted.folder / "lesson.toml"
    path.write_text(
        path.read_text(encoding="utf-8").replace("points = 3", "points = -3"), encoding="utf-8"
    )
    with pytest.raises(ValueError):
        load_lesson(weighted.folder)


def test_scores_the_csv_gradescope_and_junit_use_the_points(weighted):
    steps = [
        failing("single-head", "likely.mask_after_softmax"),
        passing("leakage"),
        passing("multi-head"),
        passing("shapes"),
    ]
    r = make_record(weighted, "ann", "/x/ann.py", b"code", steps, "en", 0, 3.0, 0.5)
    assert r["score"] == 2.5 and r["max_score"] == 5.5 and r["lesson_version"] == "2026.1"
    assert [m["id"] for m in r["mistakes"]] == ["likely.mask_after_softmax"]
    none = make_record(weighted, "bob", None, None, [], "en", 0, 3.0, 0.0)
    assert none["status"] == "no file" and none["score"] == 0
    rows = list(csv.reader(io.StringIO(grades_csv(weighted, [none, r]))))
    assert rows[1] == ["points", "3", "1", "1", "0.5", "5.5", "100", ""]
    assert rows[2] == ["ann", "0", "1", "1", "0.5", "2.5", "45.45", "graded"]
    assert rows[3] == ["bob", "0", "0", "0", "0", "0", "0", "no file"]
    gs = gradescope(weighted, r, "en")
    assert [t["max_score"] for t in gs["tests"]] == [3, 1, 1, 0.5] and gs["score"] == 2.5
    json.dumps(gs)
    root = ET.fromstring(junit_xml(weighted, [r, none], "en"))
    ann = root.find("testsuite[@name='ann']")
    assert ann.get("failures") == "1" and ann.find("testcase[@name='single-head']/failure").get(
        "message"
    )
    assert root.find("testsuite[@name='bob']").get("errors") == "4"


def test_statuses():
    timeout = StepResult(
        "single-head",
        "timeout",
        [Check("runs", "timeout", Message("failure.timeout", {}))],
        Failure("timeout", "3 s"),
    )
    crash = StepResult(
        "leakage",
        "error",
        [Check("runs", "error", Message("failure.crash", {}))],
        Failure("crash", "SIGSEGV"),
    )
    raised = StepResult(
        "leakage",
        "error",
        [Check("runs", "error", Message("failure.raised", {}))],
        Failure("ValueError", "bad"),
    )
    assert status_of([timeout, crash]) == "timeout"
    assert status_of([passing("single-head"), crash]) == "error"
    assert (
        status_of([passing("single-head"), raised]) == "graded"
    )  # an exception is an ordinary mistake


def test_the_report_counts_each_student_once_per_mistake(weighted):
    twice = [
        failing("single-head", "likely.leak"),
        failing("leakage", "likely.leak"),
        passing("multi-head"),
        passing("shapes"),
    ]
    a = make_record(weighted, "a", "/a.py", b"a", twice, "en", 0, 3.0, 0.1)
    b = make_record(
        weighted,
        "b",
        "/b.py",
        b"b",
        twice[:1] + [passing("leakage")] + twice[2:],
        "zh",
        0,
        3.0,
        0.1,
    )
    rep = class_report(weighted, [a, b])
    # A row per step (#29: the table names the step), each student once in it.
    assert [(m.id, m.step, m.students) for m in rep.mistakes] == [
        ("likely.leak", "single-head", ["a", "b"]),
        ("likely.leak", "leakage", ["a"]),
    ]
    assert [(s.id, s.passed, s.of) for s in rep.steps] == [
        ("single-head", 0, 2),
        ("leakage", 1, 2),
        ("multi-head", 2, 2),
        ("shapes", 2, 2),
    ]
    assert dataclasses.asdict(rep)["by_status"] == {
        "graded": 2,
        "timeout": 0,
        "error": 0,
        "no file": 0,
        "not graded": 0,
    }
