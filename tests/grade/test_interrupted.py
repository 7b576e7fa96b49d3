"""An interrupted run says so (issue #29, 5): after Ctrl+C or SIGTERM the report, the CSV and the
records name the students not graded as such, never as 0 or as timed out; counts are in correct
English and Chinese; the HTML's narrow columns do not wrap a Chinese header a character a line."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from class_kit import REFERENCE, plan, write_class  # noqa: E402

from tutor.grade.record import make_record  # noqa: E402
from tutor.grade.report import class_report, report_html  # noqa: E402
from tutor.model.lesson import get_lesson  # noqa: E402
from tutor.model.results import Check, StepResult  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LM3 = get_lesson("lm3-l3")
ENV = dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8")


def _stop_midway(tmp_path: Path, sig: int, *extra: str):
    folder = write_class(tmp_path / "class", plan(40), layout="files")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tutor",
            "grade",
            str(folder),
            "--out",
            str(out),
            "--jobs",
            "1",
            *extra,
        ],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while len(list((out / "students").glob("*.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=90)
    records = {
        r["student"]: r
        for r in (
            json.loads(p.read_text(encoding="utf-8")) for p in (out / "students").glob("*.json")
        )
    }
    return proc, stdout, stderr, out, records


@pytest.mark.usefixtures("ctrl_c_reaches_the_grade")
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_run_says_so_everywhere(tmp_path, sig, code):
    proc, stdout, stderr, out, records = _stop_midway(tmp_path, sig)
    assert proc.returncode == code, stderr[-2000:]
    assert "Traceback" not in stderr
    assert len(records) == 40  # every student has a record, graded or not
    stopped = sorted(s for s, r in records.items() if r["status"] == "not graded")
    graded = [r for r in records.values() if r["status"] != "not graded"]
    assert stopped and len(graded) >= 3
    for s in stopped:
        r = records[s]
        assert r["interrupted"] is True and r["steps"] == [] and r["sha256"] is None
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "The run was stopped before the end" in md
    assert f"{len(graded)} of 40 students were graded" in md
    assert f"{len(stopped)} not graded" in md
    timed_out = sum(r["status"] == "timeout" for r in graded)
    assert f"{timed_out} timed out" in md  # the stopped ones are not counted as timed out
    listed = md.split("Not graded (the run was stopped first): ", 1)[1].split(".\n", 1)[0]
    assert listed.split(", ") == [s.replace("_", "\\_") for s in stopped]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'class="stopped"' in html and "The run was stopped before the end" in html
    rows = {r[0]: r for r in csv.reader((out / "grades.csv").open(encoding="utf-8"))}
    assert all(rows[s][-1] == "not graded" for s in stopped)
    assert "not graded" in (out / "gradescope" / stopped[0] / "results.json").read_text()


def _passing_record(student: str) -> dict:
    steps = [StepResult(s.id, "pass", [Check("values", "pass")]) for s in LM3.checked_steps]
    return make_record(LM3, student, f"/c/{student}.py", b"x", steps, "zh", 0, 3.0, 0.1)


def test_one_submission_is_said_in_the_singular(tmp_path):
    (tmp_path / "ann_lm3_l3.py").write_text(REFERENCE, encoding="utf-8")
    for lang, said, report in (
        ("en", "1 submission graded in", "1 student: 1 graded"),
        ("zh", "共批改 1 份作业", "共 1 名学生：已批改 1 名"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "tutor", "grade", str(tmp_path / "ann_lm3_l3.py")]
            + ["--out", str(tmp_path / lang), "--lang", lang, "--timeout", "15"],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert said in proc.stderr and "1 submissions" not in proc.stderr
        assert report in (tmp_path / lang / "report.md").read_text(encoding="utf-8")


def _nowrap_selectors(html: str) -> set[str]:
    css = html.split("<style>", 1)[1].split("</style>", 1)[0]
    found: set[str] = set()
    for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", css):
        if re.search(r"white-space:\s*nowrap", body):
            found |= {s.strip() for s in selectors.split(",")}
    return found


def test_narrow_chinese_columns_do_not_wrap_a_character_a_line():
    rep = class_report(LM3, [_passing_record("张三"), _passing_record("李四")])
    html = report_html(LM3, rep, "zh")
    nowrap = _nowrap_selectors(html)
    assert "th" in nowrap  # 人数, 状态, 通过率: headers stay on one line
    assert {"td.n", "td.s"} <= nowrap  # counts and statuses too
    # Every count cell is a td.n; the text columns have a minimum width.
    assert re.search(r"td\.t\s*\{[^}]*min-width", html) and re.search(
        r"td\.w\s*\{[^}]*min-width", html
    )
    assert not re.search(r"<td>\d+(/\d+)?</td>", html)


def test_merge_takes_a_grade_over_a_stopped_runs_not_graded(tmp_path):
    from tutor.grade import outputs
    from tutor.grade.record import not_graded_record

    stopped = not_graded_record(LM3, "ann", None, "en", 0, 3.0)
    outputs.write_record(tmp_path / "a", stopped)
    outputs.write_record(tmp_path / "a", _passing_record("bob"))
    outputs.write_record(tmp_path / "b", _passing_record("ann"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tutor",
            "grade",
            "--merge",
            str(tmp_path / "a"),
            str(tmp_path / "b"),
        ]
        + ["--out", str(tmp_path / "m")],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    merged = {r["student"]: r["status"] for r in outputs.read_records(tmp_path / "m")}
    assert merged == {"ann": "graded", "bob": "graded"}
    assert "stopped" not in (tmp_path / "m" / "report.md").read_text()
