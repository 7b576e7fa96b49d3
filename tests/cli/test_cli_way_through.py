"""The CLI beside the app: progress, solutions after a pass, the last lesson, and text that fits
a terminal or a pipe (no Markdown, no talk of saving, no traceback when the reader leaves)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd: Path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("ATTN_TUTOR_LESSONS", None)
    return subprocess.run(
        [sys.executable, "-m", "tutor", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def workspace(tmp_path: Path, lesson: str, status: dict) -> Path:
    state = tmp_path / "attn-lab" / ".attn-tutor" / "state.json"
    state.parent.mkdir(parents=True)
    state.write_text(
        json.dumps(
            {
                "version": 1,
                "lang": None,
                "lesson": lesson,
                "lessons": {lesson: {"step": None, "status": status, "hints": {}}},
            }
        )
    )
    return tmp_path / "attn-lab"


def test_check_without_a_lesson_takes_the_one_the_app_used_last(tmp_path):
    lab = workspace(tmp_path, "lab-02", {})
    shutil.copy(ROOT / "reference" / "lab_02.py", lab / "lab_02.py")
    out = run("check", "--json", cwd=tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout)["lesson"] == "lab-02", (
        out.stdout + out.stderr
    )


def test_list_shows_each_lessons_progress(tmp_path):
    workspace(tmp_path, "lm3-l3", {"single-head": "pass", "leakage": "fail"})
    listed = json.loads(run("list", "--json", cwd=tmp_path).stdout)["lessons"]
    lm3 = next(lesson for lesson in listed if lesson["id"] == "lm3-l3")
    assert (lm3["passed"], lm3["checked"]) == (1, 4)
    assert [s["status"] for s in lm3["steps"][:3]] == ["pass", "fail", None]
    text = run("list", cwd=tmp_path).stdout
    assert (
        "1/4" in text.splitlines()[0]
        and re.search(r"✓ single-head", text)
        and re.search(r"✗ leakage", text)
    )


def test_a_solution_is_shown_after_the_step_passed_and_only_then(tmp_path):
    lab = workspace(tmp_path, "lm3-l3", {"single-head": "pass"})
    locked = run("solution", "leakage", cwd=tmp_path)
    assert locked.returncode == 1 and not locked.stdout and "leakage" in locked.stderr
    shown = run("solution", "single-head", cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout.startswith("def causal_attention(")
    assert "class CausalMultiHeadAttention" not in shown.stdout  # that step's code only
    shutil.copy(ROOT / "lessons" / "lm3-l3" / "starter.py", lab / "lm3_l3.py")
    diff = run("solution", "single-head", "--diff", cwd=tmp_path).stdout
    assert (
        diff.startswith("--- yours")
        and "-    raise NotImplementedError" in diff
        and "+    scores = " in diff
    )
    assert (
        run("solution", "memory", "--force", cwd=tmp_path).returncode == 2
    )  # an experiment has no code


@pytest.mark.parametrize(
    "command", [[], ["check"], ["reset"], ["list"], ["solution"], ["dev", "check"]]
)
def test_help_shows_no_internal_names(tmp_path, command):
    out = run(*command, "--help", cwd=tmp_path).stdout
    # argparse's names from dests (RESET_LESSON, CHECK_TIMEOUT); the environment's ATTN_TUTOR_* are meant
    assert not re.search(r"\b(?!ATTN_TUTOR_)[A-Z]+_[A-Z_]+\b", out), out


def test_check_text_has_no_markdown_and_no_talk_of_saving(tmp_path):
    starter = tmp_path / "lm3_l3.py"
    shutil.copy(ROOT / "lessons" / "lm3-l3" / "starter.py", starter)
    for lang in ("en", "zh"):
        out = run("check", str(starter), "--lang", lang, cwd=tmp_path).stdout
        assert "`" not in out and "causal_attention" in out
        assert "save" not in out.lower() and "保存" not in out


def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path):
    starter = tmp_path / "lm3_l3.py"
    shutil.copy(ROOT / "lessons" / "lm3-l3" / "starter.py", starter)
    read, write = os.pipe()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen(
        [sys.executable, "-m", "tutor", "check", str(starter)],
        stdout=write,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    os.close(write)
    os.close(read)  # `| head` that has already gone
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) != 0 and "Traceback" not in err and "BrokenPipe" not in err, err


def _into_a_closed_pipe(args: list[str], cwd: Path) -> tuple[int, str]:
    read, write = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "tutor", *args],
        stdout=write,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    os.close(write)
    os.close(read)
    err = child.stderr.read().decode()
    return child.wait(timeout=120), err


@pytest.mark.parametrize(
    "file, code", [("reference/lm3_l3.py", 0), ("lessons/lm3-l3/starter.py", 1)]
)
def test_check_into_a_closed_pipe_keeps_the_verdicts_exit_code(tmp_path, file, code):
    """`check | head` exits as plain `check` does: 0 when every step passes."""
    solution = tmp_path / "lm3_l3.py"
    shutil.copy(ROOT / file, solution)
    assert _into_a_closed_pipe(["check", str(solution)], tmp_path) == (code, "")


def test_list_into_a_closed_pipe_exits_0(tmp_path):
    workspace(tmp_path, "lm3-l3", {"single-head": "pass"})
    assert _into_a_closed_pipe(["list"], tmp_path) == (0, "")


@pytest.mark.parametrize(
    "args, code",
    [
        (["check", "no-such-file.py"], 2),
        (["reset"], 2),
        (["solution", "no-such-step"], 2),
        (["solution", "single-head"], 1),  # not passed yet
        (["--lesson", "nope"], 2),
        (["--lessons", "no-such-folder", "list"], 2),
    ],
    ids=["check", "reset", "solution", "solution-locked", "app", "lessons-dir"],
)
def test_a_complaint_into_a_closed_pipe_keeps_its_exit_code(tmp_path, args, code):
    """`attn-tutor ... 2>&1 | head` with the reader gone: the line on stderr cannot be written,
    and the command exited 0 as if it had worked."""
    read, write = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "tutor", *args],
        stdout=write,
        stderr=write,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    os.close(write)
    os.close(read)
    assert child.wait(timeout=120) == code
    assert run(*args, cwd=tmp_path).returncode == code  # as without a pipe


def test_reset_without_a_lesson_takes_the_one_used_last(tmp_path):
    """As check and solution do: in a folder last used for lab-02, reset works on lab_02.py."""
    lab = workspace(tmp_path, "lab-02", {})
    shutil.copy(ROOT / "reference" / "lab_02.py", lab / "lab_02.py")
    out = run("reset", "mask", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "NotImplementedError" in (lab / "lab_02.py").read_text()
    assert not (lab / "lm3_l3.py").exists()


@pytest.mark.parametrize("state", ["none", "corrupt"])
def test_with_no_lesson_on_record_every_command_takes_the_one_whose_file_is_there(tmp_path, state):
    """check, solution and reset choose the lesson one way: without --lesson and with no lesson
    on record (no state, or one that does not read), the lesson whose file is in attn-lab/, not
    lm3-l3's missing lm3_l3.py."""
    lab = tmp_path / "attn-lab"
    lab.mkdir()
    if state == "corrupt":
        (lab / ".attn-tutor").mkdir()
        (lab / ".attn-tutor" / "state.json").write_text("{not json")
    shutil.copy(ROOT / "reference" / "lab_02.py", lab / "lab_02.py")
    checked = run("check", "--json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["lesson"] == "lab-02"
    shown = run("solution", "scores", "--force", cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout.startswith("def scaled_scores("), shown.stderr
    reset = run("reset", "mask", cwd=tmp_path)
    assert reset.returncode == 0, reset.stderr
    assert "NotImplementedError" in (lab / "lab_02.py").read_text()
    assert not (lab / "lm3_l3.py").exists()


def test_with_several_lesson_files_and_no_record_the_newest_is_taken(tmp_path):
    lab = tmp_path / "attn-lab"
    lab.mkdir()
    shutil.copy(ROOT / "reference" / "lab_02.py", lab / "lab_02.py")
    shutil.copy(ROOT / "lessons" / "lm3-l3" / "starter.py", lab / "lm3_l3.py")
    os.utime(lab / "lm3_l3.py", (1_000_000_000, 1_000_000_000))  # saved long ago
    checked = run("check", "--json", cwd=tmp_path)
    assert json.loads(checked.stdout)["lesson"] == "lab-02", checked.stderr
