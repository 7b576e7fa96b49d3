"""`attn-tutor grade` end to end: the real CLI in a subprocess, the real worker, real files.

One class is graded once for the module (correct files, ordinary mistakes, the starter, a hang
and a print flood among them, a student folder with no file, a file that is not UTF-8), and
every output is checked against its format and against the per-student JSON.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from class_kit import LIKELY, Student, plan, source_of, write_class  # noqa: E402

import tutor  # noqa: E402
from tutor.grade.summary import OWN_ROWS, SYMPTOMS  # noqa: E402
from tutor.model.lesson import get_lesson  # noqa: E402
from tutor.text.i18n import local_key  # noqa: E402

# The module's worker (or graded class) is made once: its tests run in one xdist process.
pytestmark = pytest.mark.xdist_group("test_grade")

ROOT = Path(__file__).resolve().parents[2]
LESSON = get_lesson("lm3-l3")
STEPS = [s.id for s in LESSON.checked_steps]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8")
# Per step. A class with hostile files: short, the hang costs it; long enough that a correct
# file on a loaded 2-core machine (others' jobs: load 6 seen) is not cut. Ordinary files only:
# as generous as the worker tests, so that no verdict there depends on the machine's load.
TIMEOUT = "5"
ORDINARY_TIMEOUT = "15"


def grade(*args, check=True, timeout=240) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "tutor", "grade", *map(str, args)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


CLASS = [
    Student("ann", "correct", "reference"),
    Student("ben", "correct", "renamed"),
    Student("cat", "wrong", "mask_after_softmax"),
    Student("dan", "wrong", "no_mask"),
    Student("eve", "hostile", "hang"),
    Student("fay", "wrong", "scale_sqrt_8_is_d_in"),
    Student("gus", "starter", "starter"),
    Student("hal", "hostile", "flood"),
    Student("ivy", "correct", "sqrt"),
    Student("jon", "wrong", "multi_no_out_proj"),
]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("class")
    folder = write_class(base / "class", CLASS)
    (folder / "kim").mkdir()  # a student whose folder holds no file
    (folder / "kim" / "notes.txt").write_text("forgot to upload\n")
    (folder / "lee").mkdir()
    (folder / "lee" / "lm3_l3.py").write_bytes(
        b"# caf\xe9 in Latin-1\n" + source_of(CLASS[0]).encode()
    )
    out = base / "out"
    proc = grade(folder, "--out", out, "--timeout", TIMEOUT, "--jobs", "2")
    records = {
        p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (out / "students").glob("*.json")
    }
    return folder, out, proc, records


def test_every_student_has_a_record_and_the_run_exits_0(graded):
    folder, out, proc, records = graded
    assert proc.returncode == 0
    assert sorted(records) == sorted([s.id for s in CLASS] + ["kim", "lee"])


def test_a_record_is_check_json_plus_what_traces_it(graded):
    folder, out, proc, records = graded
    for sid, r in records.items():
        assert {"lesson", "file", "steps", "passed", "total", "file_error"} <= set(r)
        assert r["lesson"] == "lm3-l3" and r["tutor_version"] == tutor.__version__
        assert r["lesson_version"] == LESSON.version
        if sid == "kim":
            assert r["status"] == "no file" and r["file"] is None and r["sha256"] is None
            continue
        raw = Path(r["file"]).read_bytes()
        assert r["sha256"] == hashlib.sha256(raw).hexdigest()
        assert [s["id"] for s in r["steps"]] == STEPS
        assert r["passed"] == sum(s["status"] == "pass" for s in r["steps"])


def test_the_record_matches_check_json_for_the_same_file(graded):
    folder, out, proc, records = graded
    check = subprocess.run(
        [
            sys.executable,
            "-m",
            "tutor",
            "check",
            "--json",
            "--timeout",
            ORDINARY_TIMEOUT,
            str(folder / "cat" / "lm3_l3.py"),
        ],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    expected = json.loads(check.stdout)
    got = {k: records["cat"][k] for k in expected}
    assert got == expected


def test_hostile_files_cost_only_themselves(graded):
    folder, out, proc, records = graded
    assert records["eve"]["status"] == "timeout"
    assert all(s["status"] == "timeout" for s in records["eve"]["steps"])
    # The flood prints for ever at import: it runs out of time too, and nothing else does.
    assert records["hal"]["status"] == "timeout"
    for s in CLASS:
        if s.kind == "correct":
            assert (
                records[s.id]["status"] == "graded" and records[s.id]["score"] == LESSON.max_points
            ), s
        if s.kind == "wrong":
            r = records[s.id]
            assert r["status"] == "graded" and r["score"] < LESSON.max_points
            # The id is the catalog key as the judge gives it (a lesson's own under its id).
            assert LIKELY[s.variant] in {local_key(m["id"]) for m in r["mistakes"]}, (
                s,
                r["mistakes"],
            )


def test_a_file_that_is_not_utf8_is_an_error_said_as_such(graded):
    r = graded[3]["lee"]
    assert r["status"] == "error" and r["score"] == 0
    assert r["file_error"] and "UTF-8" in r["file_error"]["message"]


def test_grades_csv(graded):
    folder, out, proc, records = graded
    rows = list(csv.reader((out / "grades.csv").open(encoding="utf-8", newline="")))
    assert rows[0] == ["student", *STEPS, "total", "percent", "status"]
    assert rows[1][0] == "points" and [float(x) for x in rows[1][1:-2]] == [
        *(s.points for s in LESSON.checked_steps),
        LESSON.max_points,
    ]
    body = rows[2:]
    assert [r[0] for r in body] == sorted(records)
    for row in body:
        r = records[row[0]]
        earned = [float(x) for x in row[1 : 1 + len(STEPS)]]
        assert sum(earned) == float(row[-3]) == r["score"]
        assert float(row[-2]) == pytest.approx(100 * r["score"] / r["max_score"], abs=0.01)
        assert row[-1] == r["status"] and row[-1] in ("graded", "timeout", "error", "no file")


def test_gradescope_results_follow_its_schema(graded):
    folder, out, proc, records = graded
    for sid, r in records.items():
        data = json.loads((out / "gradescope" / sid / "results.json").read_text(encoding="utf-8"))
        assert isinstance(data["score"], (int, float)) and isinstance(
            data["execution_time"], (int, float)
        )
        assert len(data["tests"]) == len(STEPS)
        for test in data["tests"]:
            assert set(test) >= {"name", "score", "max_score", "status", "output", "visibility"}
            assert test["status"] in ("passed", "failed") and test["visibility"] in (
                "visible",
                "hidden",
                "after_due_date",
                "after_published",
            )
            assert isinstance(test["name"], str) and isinstance(test["output"], str)
            assert (test["score"] == test["max_score"]) == (test["status"] == "passed")
        assert data["score"] == sum(t["score"] for t in data["tests"]) == r["score"]


def test_junit_xml_has_a_suite_per_student_and_a_case_per_step(graded):
    folder, out, proc, records = graded
    root = ET.parse(out / "junit.xml").getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == sorted(records)
    total_failures = 0
    for suite in suites:
        r = records[suite.get("name")]
        cases = suite.findall("testcase")
        assert [c.get("name") for c in cases] == STEPS and int(suite.get("tests")) == len(STEPS)
        bad = [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
        assert len(bad) == int(suite.get("failures")) + int(suite.get("errors"))
        assert len(STEPS) - len(bad) == sum(s["status"] == "pass" for s in r["steps"])
        for case in bad:
            node = case.find("failure") if case.find("failure") is not None else case.find("error")
            assert node.get("message")
        float(suite.get("time"))
        total_failures += int(suite.get("failures"))
    assert int(root.get("failures")) == total_failures


def _md_table(md: str, heading: str) -> list[list[str]]:
    part = md.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in part.splitlines() if line.startswith("|")][2:]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]


def test_the_class_reports_counts_agree_with_the_records(graded):
    folder, out, proc, records = graded
    md = (out / "report.md").read_text(encoding="utf-8")
    with_file = [r for r in records.values() if r["status"] != "no file"]
    steps = _md_table(md, "Pass rate per step")
    for step, row in zip(STEPS, steps, strict=False):
        passed = sum(
            any(s["id"] == step and s["status"] == "pass" for s in r["steps"]) for r in with_file
        )
        assert f"`{step}`" in row[0] and row[1] == f"{passed}/{len(with_file)}"
    who: dict[str, set[str]] = {}
    for r in records.values():
        for m in r["mistakes"]:
            who.setdefault(m["id"], set()).add(r["student"])
    rows: dict[str, set[str]] = {}
    for row in _md_table(md, "Likely mistakes"):
        mid = re.match(r"`([^`]+)`", row[1]).group(1)
        assert int(row[2]) == len(row[3].split(", "))
        rows.setdefault(mid, set()).update(row[3].split(", "))
    # Every student with a mistake is in its rows; a symptom (a leak) may be said by a more
    # specific mistake on the same function instead (tests/grade/test_report_rows.py).
    for mid, students in who.items():
        if local_key(mid) in OWN_ROWS:
            continue  # among the students to look at
        if local_key(mid) not in SYMPTOMS:
            assert rows.get(mid) == students, mid
        else:
            assert rows.get(mid, set()) <= students
    problems = {row[0] for row in _md_table(md, "Files that timed out or crashed")}
    assert problems == {
        r["student"] for r in records.values() if r["status"] in ("timeout", "error")
    }
    assert "No file from: kim." in md  # said among the students with no file


def test_the_html_report_is_self_contained(graded):
    html = (graded[1] / "report.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "</html>" in html
    assert not re.search(r"""(src|href)\s*=|https?://|@import|url\(""", html)
    assert 'style="width:' in html  # the bars are drawn in the page
    for r in graded[3].values():
        for m in r["mistakes"]:
            # a symptom may be said by a more specific mistake (test_report_rows.py)
            assert m["id"] in html or local_key(m["id"]) in SYMPTOMS


def test_the_report_in_chinese(tmp_path, graded):
    # --merge of one run's folder redraws its outputs; in Chinese, the report and its terms.
    proc = grade("--merge", graded[1], "--out", tmp_path / "zh", "--lang", "zh")
    md = (tmp_path / "zh" / "report.md").read_text(encoding="utf-8")
    assert "班级报告" in md and "可能的错误" in md and "各步骤的通过率" in proc.stdout


def test_bad_usage_exits_2(tmp_path):
    assert grade(tmp_path / "missing", check=False).returncode == 2
    assert grade("--shard", "3/2", tmp_path, check=False).returncode == 2
    assert grade(check=False).returncode == 2
    assert grade("--merge", tmp_path, check=False).returncode == 2  # no students/ in it


def test_shards_merged_give_what_one_run_gives(tmp_path):
    folder = write_class(tmp_path / "class", plan(12), layout="files")
    grade(folder, "--out", tmp_path / "one", "--timeout", ORDINARY_TIMEOUT)
    grade(folder, "--out", tmp_path / "a", "--shard", "1/2", "--timeout", ORDINARY_TIMEOUT)
    grade(folder, "--out", tmp_path / "b", "--shard", "2/2", "--timeout", ORDINARY_TIMEOUT)
    a, b = (len(list((tmp_path / x / "students").glob("*.json"))) for x in "ab")
    assert a and b and a + b == 12
    grade("--merge", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "merged")
    for name in ("grades.csv", "report.md", "report.html"):
        merged, one = ((tmp_path / x / name).read_text() for x in ("merged", "one"))
        assert merged == one, (
            name,
            list(difflib.unified_diff(one.splitlines(), merged.splitlines(), lineterm="")),
        )

    def untimed(path: Path) -> dict:
        r = json.loads(path.read_text(encoding="utf-8"))
        r.pop("seconds"), r.pop("ms")
        return r

    for path in sorted((tmp_path / "one" / "students").glob("*.json")):
        assert untimed(tmp_path / "merged" / "students" / path.name) == untimed(path)


def test_the_same_seed_gives_the_same_grades(tmp_path):
    students = [
        Student("a", "correct", "reference"),
        Student("b", "wrong", "no_mask"),
        Student("c", "correct", "reshape"),
    ]
    folder = write_class(tmp_path / "class", students)
    for run in ("s1", "s2"):
        grade(folder, "--out", tmp_path / run, "--seed", "7", "--timeout", ORDINARY_TIMEOUT)
    assert (tmp_path / "s1" / "grades.csv").read_text() == (
        tmp_path / "s2" / "grades.csv"
    ).read_text()
    r = json.loads((tmp_path / "s1" / "students" / "a.json").read_text())
    assert r["seed"] == 7 and r["score"] == LESSON.max_points  # correct code passes on fresh inputs
    assert (
        json.loads((tmp_path / "s1" / "students" / "b.json").read_text())["score"]
        < LESSON.max_points
    )


@pytest.mark.usefixtures("ctrl_c_reaches_the_grade")
def test_ctrl_c_stops_cleanly_and_keeps_what_was_graded(tmp_path):
    folder = write_class(tmp_path / "class", plan(60), layout="files")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tutor", "grade", str(folder), "--out", str(out), "--jobs", "1"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while len(list((out / "students").glob("*.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr
    records = [json.loads(p.read_text()) for p in (out / "students").glob("*.json")]
    kept = sorted(r["student"] for r in records if r["status"] != "not graded")
    assert 3 <= len(kept) < 60 and len(records) == 60  # the others: "not graded" (#29)
    rows = list(csv.reader((out / "grades.csv").open(encoding="utf-8")))
    assert [r[0] for r in rows[2:] if r[-1] != "not graded"] == kept
    assert len(list((out / "gradescope").glob("*/results.json"))) == 60
    assert not list(out.rglob(".*.tmp"))  # no half-written file
    # The worker and its children are gone with the run.
    leftover = subprocess.run(
        ["pgrep", "-f", "tutor.engine.supervisor"], capture_output=True, text=True
    ).stdout.split()
    assert all(not _is_descendant_of(int(pid), proc.pid) for pid in leftover)


def _is_descendant_of(pid: int, ancestor: int) -> bool:
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return False
        pid = int(stat[1])
        if pid == ancestor:
            return True
    return False


def test_gradescope_run_autograder_on_a_simulated_layout(tmp_path):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "lm3_l3.py").write_text(source_of(Student("x", "wrong", "no_mask")))
    env = dict(
        ENV,
        AUTOGRADER_ROOT=str(root),
        ATTN_TUTOR=f"{sys.executable} -m tutor",
        ATTN_TIMEOUT=TIMEOUT,
    )
    script = ROOT / "docs" / "gradescope" / "run_autograder"
    proc = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    assert [t["status"] for t in data["tests"]].count("failed") >= 1
    assert 0 < data["score"] < LESSON.max_points
    assert (
        subprocess.run(["bash", "-n", str(ROOT / "docs" / "gradescope" / "setup.sh")]).returncode
        == 0
    )
