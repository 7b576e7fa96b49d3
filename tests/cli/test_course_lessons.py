"""A course's own lessons, from a folder outside the package: listed, checked, proved, fenced."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.model.lesson import LESSONS_ENV, get_lesson, lesson_for_source

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd, env=None):
    """The CLI of this checkout, with a course folder only where a test gives one."""
    environ = {k: v for k, v in os.environ.items() if k != LESSONS_ENV}
    environ.update(PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "tutor", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environ,
        timeout=180,
    )


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """lab-02 copied as a course's lesson `ours`, its reference in its own folder."""
    root = tmp_path_factory.mktemp("course")
    folder = root / "ours"
    shutil.copytree(
        get_lesson("lab-02").folder, folder, ignore=shutil.ignore_patterns("__pycache__")
    )
    toml_path = folder / "lesson.toml"
    text = toml_path.read_text(encoding="utf-8")
    toml_path.write_text(
        text.replace('id = "lab-02"', 'id = "ours"').replace(
            'file = "lab_02.py"', 'file = "ours.py"'
        ),
        encoding="utf-8",
    )
    shutil.copy(ROOT / "reference" / "lab_02.py", folder / "reference.py")
    return root


def test_lessons_dir_lists_checks_and_proves_a_course_lesson(course, tmp_path):
    listed = json.loads(run("--lessons", str(course), "list", "--json", cwd=tmp_path).stdout)
    assert [lesson["id"] for lesson in listed["lessons"]][:2] == [
        "lm3-l3",
        "lab-02",
    ] and "ours" in [lesson["id"] for lesson in listed["lessons"]]
    solution = tmp_path / "ours.py"
    shutil.copy(course / "ours" / "reference.py", solution)
    checked = run("--lessons", str(course), "check", str(solution), "--json", cwd=tmp_path)
    report = json.loads(checked.stdout)
    assert (
        checked.returncode == 0
        and report["lesson"] == "ours"
        and report["passed"] == report["total"] == 4
    )
    # The same through the environment variable, and dev check proves the lesson.
    proved = run("dev", "check", "ours", cwd=tmp_path, env={LESSONS_ENV: str(course)})
    assert proved.returncode == 0, proved.stdout + proved.stderr


def test_a_course_lessons_reference_is_out_of_the_learners_reach(course, tmp_path):
    cheat = tmp_path / "ours.py"
    cheat.write_text(
        f"exec(open({str(course / 'ours' / 'reference.py')!r}).read())\n", encoding="utf-8"
    )
    report = json.loads(
        run("--lessons", str(course), "check", str(cheat), "--json", cwd=tmp_path).stdout
    )
    assert report["passed"] == 0 and report["file_error"], report


def test_a_missing_lessons_folder_is_bad_usage(tmp_path):
    done = run("--lessons", str(tmp_path / "nowhere"), "list", cwd=tmp_path)
    assert done.returncode == 2 and "nowhere" in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_file_is_matched_to_the_lesson_whose_functions_it_defines():
    assert lesson_for_source("import torch\ndef scaled_scores(q, k):\n    pass\n").id == "lab-02"
    assert lesson_for_source("def causal_attention(x, Wq, Wk, Wv):\n    pass\n").id == "lm3-l3"
    # A name two lessons' steps share (kv-cache starts from lm3-l3's layer) decides nothing alone;
    # the file's other names do.
    assert lesson_for_source("class CausalMultiHeadAttention:\n    pass\n") is None
    assert (
        lesson_for_source(
            "class CausalMultiHeadAttention:\n    pass\ndef generate(layer, x):\n    pass\n"
        ).id
        == "kv-cache"
    )
    assert lesson_for_source("def helper():\n    pass\n") is None


def test_a_course_lesson_names_its_own_checks(course, tmp_path):
    """A [checkname] entry in the lesson's catalogs says a passing check in its words, in both
    languages; checks it does not name keep the tutor's names."""
    named = tmp_path / "named"
    shutil.copytree(course, named)
    for lang, words in (
        ("en", "Scores match q·kᵀ/√d_k exactly"),
        ("zh", "分数与 q·kᵀ/√d_k 完全一致"),
    ):
        catalog = named / "ours" / f"messages.{lang}.toml"
        text = catalog.read_text(encoding="utf-8")
        entry = f'values = "{words}"\n'
        # Into lab-02's own [checkname] table: a second one would not be valid TOML.
        text = (
            text.replace("[checkname]\n", "[checkname]\n" + entry, 1)
            if "[checkname]\n" in text
            else text + "\n[checkname]\n" + entry
        )
        catalog.write_text(text, encoding="utf-8")
    solution = tmp_path / "ours.py"
    shutil.copy(course / "ours" / "reference.py", solution)
    for lang, words, kept in (
        ("en", "Scores match q·kᵀ/√d_k exactly", "Shapes are right"),
        ("zh", "分数与 q·kᵀ/√d_k 完全一致", "张量形状正确"),
    ):
        report = json.loads(
            run(
                "--lessons",
                str(named),
                "check",
                str(solution),
                "--json",
                "--lang",
                lang,
                cwd=tmp_path,
            ).stdout
        )
        scores = {c["id"]: c["message"] for c in report["steps"][0]["checks"]}
        assert scores["values"] == words and scores["shape"] == kept, scores
        # The other steps' "values" checks carry the same id: the lesson names them all.
        assert all(
            c["message"] == words
            for s in report["steps"]
            for c in s["checks"]
            if c["id"] == "values"
        )


@pytest.mark.parametrize(
    ("broken", "edit"),
    [
        ("lesson.toml", lambda text: text + "\nsteps = [\n"),
        ("messages.en.toml", lambda text: text + "\n[likely]\nx = 1\n"),  # a table twice
    ],
)
def test_a_course_lesson_that_does_not_load_is_left_out_and_said(course, tmp_path, broken, edit):
    """A typo in one course lesson's TOML leaves the tutor and every other lesson working: the
    lesson is left out, stderr names its folder and file, and dev check says what is wrong.
    Before, every command (even `list` and `dev check`) ended in a traceback."""
    folder = tmp_path / "course"
    shutil.copytree(course, folder)
    path = folder / "ours" / broken
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    listed = run("--lessons", str(folder), "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    ids = [lesson["id"] for lesson in json.loads(listed.stdout)["lessons"]]
    assert "ours" not in ids and {"lm3-l3", "lab-02", "kv-cache"} <= set(ids)
    assert "Traceback" not in listed.stderr
    assert str(folder / "ours") in listed.stderr and broken in listed.stderr
    proved = run("--lessons", str(folder), "dev", "check", "ours", cwd=tmp_path)
    assert proved.returncode == 1 and "Traceback" not in proved.stderr
    assert f"✗ {broken} is not valid TOML" in proved.stdout, proved.stdout
