"""The grade files, each made from the students' records (record.py) alone. Pure: no torch.

OUT/students/<id>.json            the record: `check --json`'s object + sha256, versions, score
OUT/grades.csv                    a row per student; the first row gives each step's points
OUT/gradescope/<id>/results.json  Gradescope's autograder schema
OUT/junit.xml                     a testsuite per student, a testcase per step
OUT/similarity.json               near-identical submissions: evidence to look at (similar.py)
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

from tutor.grade.message_text import with_caret
from tutor.grade.record import step_status
from tutor.text.i18n import t
from tutor.text.safe_text import csv_cell, file_name, json_text, xml_text

STUDENTS = "students"


def safe_name(student: str) -> str:
    """A student id as a file name of its own (safe_text.file_name: two ids, two names)."""
    return file_name(student)


def write_text(path: Path, text: str) -> None:
    """Whole or not at all: an interrupted run or a full disk never leaves half a file (the
    file of an earlier run stays as it was)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8", newline="")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()  # its blocks back, on a full disk
        raise


def dumps(obj) -> str:
    """One line: json's C encoder, which an indent turns off (that made writing the records
    4% of a 200-file grade's CPU). `python -m json.tool` or jq shows them indented."""
    return json_text(obj, sort_keys=True) + "\n"


def write_record(out: Path, record: dict) -> None:
    write_text(out / STUDENTS / f"{safe_name(record['student'])}.json", dumps(record))


def read_records(folder: Path) -> list[dict]:
    records = []
    for path in sorted((folder / STUDENTS).glob("*.json")):
        records.append(json.loads(path.read_text(encoding="utf-8")))
    return records


def _number(x: float) -> str:
    return f"{x:g}"


def percent(record: dict) -> float:
    return round(100 * record["score"] / record["max_score"], 2) if record["max_score"] else 0.0


def grades_csv(lesson, records: list[dict]) -> str:
    steps = [s.id for s in lesson.checked_steps]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student", *steps, "total", "percent", "status"])
    w.writerow(
        [
            "points",
            *(_number(s.points) for s in lesson.checked_steps),
            _number(lesson.max_points),
            "100",
            "",
        ]
    )
    for r in sorted(records, key=lambda r: r["student"]):
        earned = [_number(r["points"][s] if step_status(r, s) == "pass" else 0) for s in steps]
        w.writerow(
            [
                csv_cell(r["student"]),
                *earned,
                _number(r["score"]),
                _number(percent(r)),
                csv_cell(r["status"]),
            ]
        )
    return buf.getvalue()


def _step_output(record: dict, step_id: str, lang: str) -> str:
    """What a student reads under a step: the messages of its checks that did not pass."""
    if record["status"] == "no file":
        return t("grade.no_file", lang)
    if record["status"] == "not graded":
        return t("grade.not_graded", lang)
    for s in record["steps"]:
        if s["id"] == step_id:
            lines = [c["message"] for c in s["checks"] if c["status"] != "pass"]
            said = "\n".join(lines) if lines else t("grade.step_passed", lang)
            return with_caret(said, record) if lines else said
    return t("grade.not_run", lang)


def gradescope(lesson, record: dict, lang: str) -> dict:
    """Gradescope's results.json: tests[] with name, score, max_score, status, output,
    visibility; score and execution_time at the top."""
    tests: list[dict[str, object]] = []
    for step in lesson.checked_steps:
        passed = step_status(record, step.id) == "pass"
        tests.append(
            {
                "name": t("grade.test_name", lang, title=step.title[lang], id=step.id),
                "number": str(len(tests) + 1),
                "score": step.points if passed else 0,
                "max_score": step.points,
                "status": "passed" if passed else "failed",
                "output": _step_output(record, step.id, lang),
                "visibility": "visible",
            }
        )
    out = {
        "score": record["score"],
        "execution_time": record["seconds"],
        "tests": tests,
        "output": t(
            "grade.gradescope_output",
            lang,
            status=t(f"grade.status.{status_key(record['status'])}", lang),
            score=_number(record["score"]),
            max=_number(record["max_score"]),
            sha=(record["sha256"] or "-")[:12],
            version=record["tutor_version"],
            lesson_version=record["lesson_version"],
        ),
        "visibility": "visible",
        "stdout_visibility": "hidden",
    }
    return out


def status_key(status: str) -> str:
    return status.replace(" ", "_")


def junit_xml(lesson, records: list[dict], lang: str) -> str:
    root = ET.Element("testsuites", name=f"attn-tutor grade {lesson.id}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for r in sorted(records, key=lambda r: r["student"]):
        suite = ET.SubElement(root, "testsuite", name=xml_text(r["student"]))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        ms = r.get("ms", {})
        for step in lesson.checked_steps:
            status = step_status(r, step.id)
            case = ET.SubElement(
                suite,
                "testcase",
                classname=xml_text(f"{lesson.id}.{r['student']}"),
                name=step.id,
                time=f"{ms.get(step.id, 0.0) / 1000:.3f}",
            )
            counts["tests"] += 1
            if status == "pass":
                continue
            if r["status"] == "not graded":  # the run was stopped before this file
                ET.SubElement(case, "skipped", message=t("grade.not_graded", lang))
                counts["skipped"] += 1
                continue
            text = xml_text(_step_output(r, step.id, lang))
            tag = "failure" if status in ("fail", "todo") else "error"
            counts["failures" if tag == "failure" else "errors"] += 1
            node = ET.SubElement(
                case, tag, message=text.splitlines()[0] if text else status, type=status
            )
            node.text = text
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
        suite.set("time", f"{r['seconds']:.3f}")
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_all(
    out: Path, lesson, records: list[dict], lang: str, rep=None
) -> list[tuple[Path, OSError]]:
    """Every file made from the records (their JSONs are written as each student is graded),
    each on its own: one that cannot be written (a full disk) costs that file only. Returns
    those not written, with why. rep: summary.with_similarity's, if made already."""
    from tutor.grade.report import report_html, report_md
    from tutor.grade.similar import to_json
    from tutor.grade.summary import with_similarity

    failed: list[tuple[Path, OSError]] = []

    def write(path: Path, make) -> None:
        try:
            write_text(path, make())
        except OSError as exc:
            failed.append((path, exc))

    write(out / "grades.csv", lambda: grades_csv(lesson, records))
    for r in records:
        write(
            out / "gradescope" / safe_name(r["student"]) / "results.json",
            lambda r=r: dumps(gradescope(lesson, r, lang)),
        )
    write(out / "junit.xml", lambda: junit_xml(lesson, records, lang))
    rep = rep or with_similarity(lesson, records)
    write(out / "similarity.json", lambda: json_text(to_json(rep.similar), indent=1) + "\n")
    write(out / "report.md", lambda: report_md(lesson, rep, lang))
    write(out / "report.html", lambda: report_html(lesson, rep, lang))
    return failed
