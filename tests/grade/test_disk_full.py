"""A full disk while `grade` writes (tutor/grade/command.py, outputs.py): it says so in the
reader's language, keeps every grade (the table shows them all), writes every file it can, and
never leaves half a file. In-process with the writes made to fail, and once for real on a
full tmpfs (root only)."""

from __future__ import annotations

import argparse
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from class_kit import Student, write_class  # noqa: E402

from tutor.grade import command, outputs  # noqa: E402
from tutor.model.lesson import get_lesson  # noqa: E402
from tutor.model.results import Check, StepResult  # noqa: E402

LM3 = get_lesson("lm3-l3")
ROOT = Path(__file__).resolve().parents[2]


class FakeBatch:
    """Grades without a worker: every step passes. The write path is what is tried here."""

    def __init__(self, lesson, *a, **kw):
        self.lesson = lesson

    def grade(self, subs, on_graded):
        for sub in subs:
            steps = [StepResult(s.id, "pass", [Check("values", "pass")]) for s in LM3.checked_steps]
            on_graded(sub, b"x", steps, 0.1)


def args_for(folder: Path, out: Path, lang="en") -> argparse.Namespace:
    return argparse.Namespace(
        merge=None,
        submissions=[folder],
        jobs=1,
        grade_timeout=3.0,
        timeout=None,
        grade_lesson="lm3-l3",
        shard=None,
        seed=0,
        out=out,
        grade_lang=lang,
    )


def full_for(monkeypatch, names, stop_after=None):
    """write_text fails with ENOSPC for paths whose name is in names (for the first
    stop_after tries, if given: the space comes back)."""
    real = outputs.write_text
    tries = {"n": 0}

    def write_text(path, text):
        if path.name in names and (stop_after is None or tries["n"] < stop_after):
            tries["n"] += 1
            tmp = path.with_name(f".{path.name}.tmp")
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text[: len(text) // 2])  # half written when the disk fills
            try:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            finally:
                tmp.unlink()
        return real(path, text)

    monkeypatch.setattr(outputs, "write_text", write_text)


@pytest.fixture()
def a_class(tmp_path, monkeypatch):
    import tutor.grade.run as run

    monkeypatch.setattr(run, "Batch", FakeBatch)
    folder = write_class(tmp_path / "class", [Student(i, "correct", "reference") for i in "abc"])
    return folder, tmp_path / "out"


@pytest.mark.parametrize("lang, said", [("en", "The disk is full"), ("zh", "磁盘已满")])
def test_a_full_disk_costs_only_the_files_it_stops(a_class, monkeypatch, capsys, lang, said):
    folder, out = a_class
    full_for(monkeypatch, {"b.json", "junit.xml"})
    code = command.run_grade(args_for(folder, out, lang), lang, get_lesson, None)
    err = capsys.readouterr().err
    assert code == command.NOT_WRITTEN
    assert said in err and "junit.xml" in err and "b.json" in err
    for name in ("grades.csv", "report.md", "report.html", "students/a.json", "students/c.json"):
        assert (out / name).is_file(), name
    assert not (out / "junit.xml").exists() and not (out / "students" / "b.json").exists()
    assert len((out / "grades.csv").read_text().splitlines()) == 2 + 3  # b's grade is there
    assert not list(out.rglob(".*.tmp"))  # no half file left


def test_records_that_failed_are_written_once_the_space_comes_back(a_class, monkeypatch, capsys):
    folder, out = a_class
    full_for(monkeypatch, {"a.json", "b.json"}, stop_after=2)  # the filling child was cleaned up
    assert command.run_grade(args_for(folder, out), "en", get_lesson, None) == 0
    assert sorted(p.name for p in (out / "students").iterdir()) == ["a.json", "b.json", "c.json"]
    assert "disk" not in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_grade_on_a_full_tmpfs_says_so_and_shows_every_grade(tmp_path):
    folder = write_class(tmp_path / "class", [Student(i, "correct", "reference") for i in "ab"])
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (disk / "out").mkdir()
        with open(disk / "filler", "wb") as f:  # the disk fills up
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        proc = subprocess.run(
            [sys.executable, "-m", "tutor", "grade", folder, "--out", disk / "out", "--lang", "en"],
            env=dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8", COLUMNS="120"),
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert proc.returncode == command.NOT_WRITTEN, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr and "The disk is full" in proc.stderr
        assert "grades.csv" in proc.stderr
        assert "2 students: 2 graded" in proc.stdout  # every grade, in the table
        assert not list((disk / "out").rglob(".*.tmp"))
    finally:
        subprocess.run(["umount", str(disk)])
