"""A class of correct files and one hostile file aimed at the channel, the judge or the size
limit, through the real CLI (issue 23, classes 1 and 9): sorted first and sorted last, the
hostile file costs only itself. Every correct student keeps full marks and status `graded`,
`grade` exits 0 and writes every output, and nothing is left behind: no process, no
`attn-run-*` scratch folder; a correct file checked afterwards passes. `check --json` on the
hostile file alone prints every step and the right total.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from channel_kit import HOSTILE
from reliability_kit import REFERENCE, ROOT, wait_until

from tutor.model.lesson import get_lesson

LESSON = get_lesson("lm3-l3")
STEPS = [s.id for s in LESSON.checked_steps]
CORRECT = ["mia", "noa", "oli"]  # between the hostile file's two places
TIMEOUT = "10"  # per step: generous, so that a loaded machine cuts no correct file
OUTPUTS = ["grades.csv", "junit.xml", "report.md", "report.html"]


def _env(tmp: Path) -> dict:
    # A TMPDIR of the test's own: the runs' scratch folders are made there, and every process
    # the run starts carries it in its environment (how a leftover is found).
    return dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8", TMPDIR=str(tmp))


def _tutor(env: dict, *args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tutor", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _carrying(marker: str) -> list[int]:
    """Live processes whose environment holds marker."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker.encode() in f.read():
                    with open(f"/proc/{entry}/stat") as s:
                        if s.read().rsplit(")", 1)[1].split()[0] != "Z":
                            found.append(int(entry))
        except OSError:
            pass
    return found


def _nothing_left(tmp: Path) -> None:
    assert wait_until(lambda: not _carrying(str(tmp)), 10), _carrying(str(tmp))
    assert not list(tmp.glob("attn-run-*")), list(tmp.iterdir())


def _expect_steps(kind: str, data: dict) -> None:
    """What the hostile file's own steps say (a record, or `check --json`): its doing, named as
    such, and nothing said to be the tutor's fault."""
    steps = {s["id"]: s for s in data["steps"]}
    assert [s["id"] for s in data["steps"]] == STEPS
    text = json.dumps(data, ensure_ascii=False)
    assert "tutor's fault" not in text and "could not judge" not in text, text[:3000]
    if kind == "crafted_dump":  # its crash is its own; the steps it did not touch still pass
        assert steps["single-head"]["status"] == "error" and "SIGBUS" in text
        assert steps["shapes"]["status"] == "pass"
    elif kind == "deep_expression":  # judged: three steps pass, the TODO is a TODO
        assert [steps[s]["status"] for s in STEPS] == ["pass", "pass", "pass", "todo"]
    elif kind == "format_strings":  # judged; its texts shown as they are, never formatted
        assert steps["shapes"]["status"] == "fail"
        assert "{fn.__class__}" in text or "likely.{0}" in text
    elif kind == "oversized":  # said at once, with its size and the limit
        assert all(s["status"] == "error" for s in data["steps"])
        assert "2.0 MiB" in data["file_error"]["message"]
        assert "1 MiB" in data["file_error"]["message"]


def _expect_hostile(kind: str, record: dict) -> None:
    _expect_steps(kind, record)
    if kind in ("deep_expression", "format_strings"):
        assert record["status"] == "graded"
    else:
        assert record["status"] == "error"
    if kind == "oversized":
        assert record["score"] == 0


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_one_hostile_file_costs_only_itself(tmp_path, kind):
    """The hostile file twice, sorted first and sorted last, in one class."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = _env(tmp)
    folder = tmp_path / "class"
    hostile = ["aaa", "zzz"]
    for sid in CORRECT:
        (folder / sid).mkdir(parents=True)
        (folder / sid / "lm3_l3.py").write_text(REFERENCE["lm3-l3"], encoding="utf-8")
    for sid in hostile:
        (folder / sid).mkdir()
        (folder / sid / "lm3_l3.py").write_text(HOSTILE[kind], encoding="utf-8")
    out = tmp_path / "out"
    start = time.monotonic()
    proc = _tutor(env, "grade", folder, "--out", out, "--timeout", TIMEOUT, "--jobs", "2")
    seconds = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in OUTPUTS:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    records = {
        p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (out / "students").glob("*.json")
    }
    assert sorted(records) == sorted([*CORRECT, *hostile])
    for sid in records:
        assert (out / "gradescope" / sid / "results.json").is_file()
    for sid in CORRECT:
        r = records[sid]
        assert r["status"] == "graded" and r["score"] == LESSON.max_points, (sid, r["steps"])
        assert all(s["status"] == "pass" for s in r["steps"])
    for sid in hostile:
        _expect_hostile(kind, records[sid])
    if kind == "oversized":
        assert seconds < 60, seconds  # said at once: not a 2 MiB file run four times
    _nothing_left(tmp)
    # The machine is as it was: a correct file checked now passes.
    ok = tmp_path / "after" / "lm3_l3.py"
    ok.parent.mkdir()
    ok.write_text(REFERENCE["lm3-l3"], encoding="utf-8")
    check = _tutor(env, "check", "--json", "--timeout", TIMEOUT, ok, timeout=120)
    assert check.returncode == 0, check.stderr[-2000:]
    assert json.loads(check.stdout)["passed"] == len(STEPS)
    _nothing_left(tmp)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_check_json_prints_every_step_of_a_hostile_file(tmp_path, kind):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = _env(tmp)
    path = tmp_path / "lm3_l3.py"
    path.write_text(HOSTILE[kind], encoding="utf-8")
    proc = _tutor(env, "check", "--json", "--timeout", TIMEOUT, path, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]  # failures, not a crash of the tutor
    data = json.loads(proc.stdout)
    assert data["total"] == len(STEPS)
    _expect_steps(kind, data)
    _nothing_left(tmp)
