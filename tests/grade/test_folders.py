"""A student's folder is their submission (issue #29, 1): the file that defines the lesson's
functions is graded, whatever its name; it may import the student's other files; several
files that define them are said in the record. The confined child reads its own student's
folder and no other. The same in Gradescope's layout (docs/gradescope/run_autograder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from class_kit import REFERENCE, STARTER  # noqa: E402

from tutor.engine.confine.platform_probe import probe  # noqa: E402
from tutor.grade.collect import collect  # noqa: E402
from tutor.model.lesson import get_lesson  # noqa: E402

# The module's worker (or graded class) is made once: its tests run in one xdist process.
pytestmark = pytest.mark.xdist_group("test_folders")

ROOT = Path(__file__).resolve().parents[2]
LM3 = get_lesson("lm3-l3")
ENV = dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8")
TIMEOUT = "15"
# Another student's folder is refused by Landlock; without it (macOS) nothing refuses it.
LANDLOCK = bool(probe().landlock)

# The reference with its scale in a helper module beside it.
MAIN = REFERENCE.replace(
    "def causal_attention(x, Wq, Wk, Wv):",
    "from helpers import scale\n\n\ndef causal_attention(x, Wq, Wk, Wv):",
).replace("/ k.shape[-1] ** 0.5", "* scale(k)")
HELPERS = "def scale(k):\n    return k.shape[-1] ** -0.5\n"
# Reads a file beside it (allowed) and another student's (must be refused): each step fails
# unless the first works and the second does not.
PEEK = (
    REFERENCE
    + """

import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
_own = open(_os.path.join(_here, "notes.txt")).read()
try:
    _other = open(_os.path.join(_here, "..", "ann", "lm3_l3.py")).read()
except OSError:
    _other = None
_causal = causal_attention


def causal_attention(x, Wq, Wk, Wv):
    assert _own == "mine\\n" and _other is None, "read another student's folder"
    return _causal(x, Wq, Wk, Wv)
"""
)
assert MAIN != REFERENCE and "from helpers import scale" in MAIN
# Counts its imports in a module beside it: a step that finds the last step's count fails.
FRESH = (
    "import tally\n\ntally.imports.append(1)\n"
    "assert tally.imports == [1], 'tally.py kept the last step'\n\n" + REFERENCE
)
# MAIN whose causal_attention takes its child down: the steps after the crash run in children
# of their own, which must import helpers.py beside it too.
CRASH = (
    MAIN
    + """

def causal_attention(x, Wq, Wk, Wv):
    import os
    os._exit(3)
"""
)


def _write(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
        time.sleep(0.02)  # distinct mtimes: "the latest" is well defined


def _by_student(cls: Path) -> dict:
    return {s.student: s for s in collect([cls], LM3)}


def test_files_not_named_after_the_lesson_the_latest_is_graded_and_both_said(tmp_path):
    _write(tmp_path / "s07", {"attempt1.py": REFERENCE, "attempt2.py": REFERENCE + "# v2\n"})
    sub = _by_student(tmp_path)["s07"]
    assert sub.path is not None and sub.path.name == "attempt2.py"
    assert sub.several == ("attempt1.py", "attempt2.py") and sub.picked_by == "latest"
    assert sub.folder == (tmp_path / "s07").absolute()


def test_the_file_named_after_the_lesson_wins_over_a_later_one(tmp_path):
    _write(tmp_path / "s", {"lm3_l3.py": REFERENCE, "zz_copy.py": REFERENCE})
    sub = _by_student(tmp_path)["s"]
    assert sub.path.name == "lm3_l3.py" and sub.picked_by == "lesson_name"


def test_the_file_that_defines_the_lessons_names_not_its_helper(tmp_path):
    _write(tmp_path / "s08", {"my_attention.py": MAIN, "helpers.py": HELPERS, "zz.py": "x = 1\n"})
    sub = _by_student(tmp_path)["s08"]
    assert sub.path.name == "my_attention.py" and sub.several == () and sub.picked_by == ""


def test_the_file_that_defines_more_of_them_wins(tmp_path):
    part = "import torch\n\n\ndef causal_attention(x, Wq, Wk, Wv):\n    return x, x\n"
    _write(tmp_path / "s", {"b_full.py": REFERENCE, "c_part.py": part})
    sub = _by_student(tmp_path)["s"]
    assert sub.path.name == "b_full.py" and sub.picked_by == "most"
    assert sub.several == ("b_full.py", "c_part.py")


def test_an_upload_unzipped_into_a_folder_of_its_own(tmp_path):
    _write(tmp_path / "s", {"proj/attention.py": REFERENCE, "proj/README.md": "hi\n"})
    assert _by_student(tmp_path)["s"].path == tmp_path / "s" / "proj" / "attention.py"


def test_flat_files_have_no_folder_of_their_own(tmp_path):
    (tmp_path / "ann.py").write_text(REFERENCE)
    assert _by_student(tmp_path)["ann"].folder is None


def test_student_code_is_parsed_never_run(tmp_path):
    bomb = tmp_path / "ran"
    _write(tmp_path / "s", {"a.py": f"open({str(bomb)!r}, 'w')\n" + REFERENCE, "b.py": "x = 1\n"})
    assert _by_student(tmp_path)["s"].path.name == "a.py" and not bomb.exists()


def _grade(*args) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "tutor", "grade", *map(str, args)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A class in mixed layouts: folders with several files, a helper, none named after the
    lesson, a Chinese id; flat files; a file that peeks at another student's folder."""
    cls = tmp_path_factory.mktemp("mixed") / "class"
    _write(cls / "ann", {"lm3_l3.py": REFERENCE})
    _write(cls / "s07", {"attempt1.py": STARTER, "attempt2.py": REFERENCE})
    _write(cls / "s08", {"my_attention.py": MAIN, "helpers.py": HELPERS})
    _write(cls / "张三", {"作业.py": MAIN, "helpers.py": HELPERS})
    _write(cls / "peek", {"lm3_l3.py": PEEK, "notes.txt": "mine\n"})
    _write(cls / "crash", {"main.py": CRASH, "helpers.py": HELPERS})
    _write(cls / "fresh", {"lm3_l3.py": FRESH, "tally.py": "imports = []\n"})
    (cls / "bob_lm3_l3.py").write_text(REFERENCE, encoding="utf-8")
    out = cls.parent / "out"
    _grade(cls, "--out", out, "--timeout", TIMEOUT, "--jobs", "2")
    return (
        cls,
        out,
        {
            r["student"]: r
            for r in (
                json.loads(p.read_text(encoding="utf-8")) for p in (out / "students").glob("*.json")
            )
        },
    )


def test_every_student_in_the_mixed_class_is_found_and_graded(mixed):
    cls, out, records = mixed
    assert sorted(records) == sorted(["ann", "s07", "s08", "张三", "peek", "bob", "crash", "fresh"])
    for sid, r in records.items():
        if sid == "crash" or (sid == "peek" and not LANDLOCK):
            continue
        assert r["status"] == "graded" and r["score"] == LM3.max_points, (sid, r["steps"])


def test_a_student_file_imports_a_helper_beside_it(mixed):
    cls, out, records = mixed
    for sid, name in (("s08", "my_attention.py"), ("张三", "作业.py")):
        assert records[sid]["file"].endswith(name)
        assert all(s["status"] == "pass" for s in records[sid]["steps"]), records[sid]["steps"]


def test_each_step_imports_the_students_other_files_afresh(mixed):
    """Steps share one child in `grade`: a module of the student's folder that a step
    imported is forgotten before the next, which starts from the file's own import."""
    steps = mixed[2]["fresh"]["steps"]
    assert len(steps) > 1 and all(s["status"] == "pass" for s in steps), steps


def test_after_a_crash_the_next_children_import_the_helper_too(mixed):
    steps = {s["id"]: s for s in mixed[2]["crash"]["steps"]}
    assert steps["single-head"]["status"] == "error", steps
    assert steps["shapes"]["status"] == "pass" and steps["multi-head"]["status"] == "pass", steps


def test_several_files_are_said_in_the_record(mixed):
    r = mixed[2]["s07"]
    assert r["file"].endswith("attempt2.py")
    assert r["several_files"] == ["attempt1.py", "attempt2.py"] and r["picked_by"] == "latest"
    assert mixed[2]["ann"]["several_files"] == [] and mixed[2]["ann"]["picked_by"] is None


@pytest.mark.skipif(not LANDLOCK, reason="no Landlock: nothing refuses another folder")
def test_the_confined_child_reads_its_own_folder_and_no_other(mixed):
    # PEEK passes only if it read notes.txt beside it and was refused ann's file.
    r = mixed[2]["peek"]
    assert [s["status"] for s in r["steps"]] == ["pass"] * len(LM3.checked_steps), r["steps"]


def test_gradescope_grades_the_file_that_defines_the_functions(tmp_path):
    root = tmp_path / "autograder"
    _write(root / "submission", {"my_attention.py": MAIN, "helpers.py": HELPERS})
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
    assert data["score"] == LM3.max_points, data
    assert sorted(p.name for p in (root / "submission").iterdir()) == [
        "helpers.py",
        "my_attention.py",
    ]
