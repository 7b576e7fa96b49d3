"""The `attn-tutor check` and `list` contract, through the real console script path."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.engine.confine.platform_probe import probe
from tutor.model.lesson import all_lessons, get_lesson

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd=None, env=None):
    """The CLI in `cwd`, by default the test's own empty folder (tests/conftest.py): never the
    checkout, where an `attn-tutor` run leaves an attn-lab/ with its state."""
    environ = dict(os.environ, PYTHONPATH=str(ROOT))
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "tutor", *args],
        capture_output=True,
        text=True,
        cwd=cwd or Path.cwd(),
        env=environ,
        timeout=120,
    )


def here(relative: str) -> str:
    return str(ROOT / relative)


def test_reference_passes_and_json_is_one_object():
    for lesson, file in ((each.id, str(each.reference_path)) for each in all_lessons()):
        out = run("check", file, "--lesson", lesson, "--json")
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        assert set(data) == {
            "schema_version",
            "lesson",
            "file",
            "steps",
            "passed",
            "total",
            "file_error",
            "protections_off",
        }
        assert data["schema_version"] == 1
        assert data["lesson"] == lesson and data["file"] == file and data["file_error"] is None
        assert data["protections_off"] == probe().off()
        assert data["passed"] == data["total"] == len(get_lesson(lesson).checked_steps)
        for step in data["steps"]:
            assert set(step) == {"id", "status", "checks"}
            assert step["status"] == "pass"
            assert step["checks"] and all(
                set(c) == {"id", "status", "message"} for c in step["checks"]
            )


@pytest.mark.parametrize(
    "lang, words",
    [
        ("en", "file confinement (Landlock), the system call filter"),
        ("zh", "文件访问限制（Landlock）、系统调用过滤"),
    ],
)
def test_check_says_once_which_protections_are_off(lang, words):
    """As on a platform without them: the reference still passes, and one line says what is off."""
    out = run(
        "check",
        here("reference/lm3_l3.py"),
        "--lesson",
        "lm3-l3",
        "--lang",
        lang,
        env={"ATTN_TUTOR_DISABLE": "landlock,seccomp"},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count(words) == 1, out.stdout
    as_json = json.loads(
        run(
            "check",
            here("reference/lm3_l3.py"),
            "--lesson",
            "lm3-l3",
            "--json",
            env={"ATTN_TUTOR_DISABLE": "landlock,seccomp"},
        ).stdout
    )
    assert {"landlock", "seccomp"} <= set(as_json["protections_off"]) and as_json["passed"] == 4


def test_check_says_nothing_of_protections_where_all_are_on():
    if probe().off():
        pytest.skip(f"this platform lacks {probe().off()}")
    out = run("check", here("reference/lm3_l3.py"), "--lesson", "lm3-l3")
    assert "Landlock" not in out.stdout and "seccomp" not in out.stdout, out.stdout


def test_starter_is_all_todo_and_exits_1(tmp_path):
    out = run("check", here("lessons/lab-02/starter.py"), "--lesson", "lab-02", "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert [s["status"] for s in data["steps"]] == ["todo"] * 4
    assert data["passed"] == 0


def test_human_output_in_chinese_for_a_broken_file(tmp_path):
    broken = (ROOT / "reference/lab_02.py").read_text().replace('float("-inf")', "0.0")
    path = tmp_path / "lab_02.py"
    path.write_text(broken)
    out = run("check", str(path), "--lang", "zh")
    assert out.returncode == 1
    assert "✗ weights" in out.stdout
    assert "未通过" in out.stdout
    assert "-inf" in out.stdout


def test_default_file_is_the_workspace_file(tmp_path):
    (tmp_path / "attn-lab").mkdir()
    (tmp_path / "attn-lab" / "lm3_l3.py").write_text((ROOT / "reference/lm3_l3.py").read_text())
    out = run("check", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["file"].endswith("attn-lab/lm3_l3.py")


@pytest.mark.parametrize(
    "args",
    [
        ("check", "no/such/file.py"),
        ("check", here("reference/lm3_l3.py"), "--lesson", "nope"),
        ("check", here("reference")),
    ],
)
def test_bad_usage_exits_2_with_one_line(args):
    out = run(*args)
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1


def test_unknown_lesson_for_a_file_with_no_hint(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("x = 1\n")
    out = run("check", str(path))
    assert out.returncode == 2 and "--lesson" in out.stderr


def test_list_json_and_version_and_help():
    out = run("list", "--json")
    data = json.loads(out.stdout)
    assert [lesson["id"] for lesson in data["lessons"]] == [lesson.id for lesson in all_lessons()]
    assert [lesson["id"] for lesson in data["lessons"]][:2] == ["lm3-l3", "lab-02"]
    assert data["lessons"][0]["steps"][0]["id"] == "single-head"
    assert run("--version").stdout.startswith("attn-tutor ")
    assert "check" in run("--help").stdout
    assert "检查" in run("--help", env={"LANG": "zh_CN.UTF-8"}).stdout


def test_a_file_that_uses_numpy_passes(tmp_path):
    """NumPy is a dependency of the tutor now: a learner's file may use it (the app's process
    still never imports it: tests/unit/test_import_contracts.py)."""
    source = (
        (ROOT / "reference/lab_02.py")
        .read_text()
        .replace("import torch\n", "import numpy as np\nimport torch\n", 1)
        .replace(
            "    return weights @ v, weights",
            "    print('weights as numpy:', weights.numpy().shape)\n    return weights @ v, weights",
        )
    )
    assert "numpy()" in source
    path = tmp_path / "lab_02.py"
    path.write_text(source)
    out = run("check", str(path), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["passed"] == 4


def test_help_follows_the_locale_unless_the_workspace_remembers_a_choice(tmp_path):
    """The README's test command after its run command: the app leaves a state file with
    progress but no language (nobody chose one), so --help follows LANG; a language chosen
    with `l` or --lang is remembered and wins."""
    state = tmp_path / "attn-lab" / ".attn-tutor" / "state.json"
    state.parent.mkdir(parents=True)
    progress = {
        "version": 1,
        "lang": None,
        "lesson": "lm3-l3",
        "lessons": {"lm3-l3": {"step": "single-head"}},
    }
    state.write_text(json.dumps(progress))
    assert "检查" in run("--help", cwd=tmp_path, env={"LANG": "zh_CN.UTF-8"}).stdout
    assert "检查" not in run("--help", cwd=tmp_path).stdout
    state.write_text(json.dumps({**progress, "lang": "en"}))
    assert "检查" not in run("--help", cwd=tmp_path, env={"LANG": "zh_CN.UTF-8"}).stdout


@pytest.mark.parametrize(
    "lang, not_run",
    [("en", "not run: your file does not load"), ("zh", "未运行：你的文件无法加载")],
)
def test_a_file_that_does_not_load_is_said_once(tmp_path, lang, not_run):
    """An import that fails is the file's error: printed once, each step shown as not run
    because of it; --json keeps every step's status and adds file_error."""
    source = (
        (ROOT / "reference/lab_02.py")
        .read_text()
        .replace(
            "import torch\n", "import torch\nimport attn_tutor_no_such_package.pyplot as plt\n", 1
        )
    )
    path = tmp_path / "lab_02.py"
    path.write_text(source)
    out = run("check", str(path), "--lang", lang)
    assert out.returncode == 1
    assert out.stdout.count(not_run) == 4, out.stdout
    for step in ("scores", "mask", "weights", "output"):
        assert any(
            line.startswith("✗ " + step) and line.endswith(not_run)
            for line in out.stdout.splitlines()
        )
    data = json.loads(run("check", str(path), "--json", "--lang", lang).stdout)
    assert [s["status"] for s in data["steps"]] == ["error"] * 4 and data["passed"] == 0
    assert [c["id"] for s in data["steps"] for c in s["checks"]] == ["file-loads"] * 4
    line = source.splitlines().index("import attn_tutor_no_such_package.pyplot as plt") + 1
    assert (
        data["file_error"]["line"] == line
        and "attn_tutor_no_such_package" in data["file_error"]["message"]
    )
    assert data["file_error"]["message"] == data["steps"][0]["checks"][0]["message"]
    # The message once in the text, its Markdown code marks left out.
    assert out.stdout.count(data["file_error"]["message"].replace("`", "")) == 1, out.stdout


def test_a_file_whose_steps_fail_on_their_own_has_no_file_error(tmp_path):
    broken = (ROOT / "reference/lab_02.py").read_text().replace('float("-inf")', "0.0")
    path = tmp_path / "lab_02.py"
    path.write_text(broken)
    data = json.loads(run("check", str(path), "--json").stdout)
    assert data["file_error"] is None and data["passed"] < 4


@pytest.mark.parametrize(
    "args",
    [
        ("--lang", "zh", "--help"),
        ("--lang", "zh", "check", "--help"),
        ("--lang", "zh", "dev", "check", "--help"),
    ],
)
def test_chinese_help_has_no_argparse_english(args):
    out = run(*args).stdout
    assert out.startswith("用法：attn-tutor") and "位置参数：" in out or "选项：" in out, out
    for english in (
        "usage:",
        "positional arguments",
        "options:",
        "show this help",
        "show program's version",
    ):
        assert english not in out, (english, out)
    assert "用法：用法" not in out


def test_chinese_usage_errors_say_so_in_chinese():
    out = run("--lang", "zh", "check", "--bogus")
    assert out.returncode == 2 and out.stderr.startswith("用法：") and "错误：" in out.stderr


@pytest.mark.parametrize(
    "command", [[], ["check"], ["grade"], ["list"], ["solution"], ["reset"], ["dev", "check"]]
)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_help_page_fits_80_columns(command, lang):
    """argparse wraps by characters; a Chinese character takes two columns of the terminal."""
    from rich.cells import cell_len

    out = run(*command, "--help", "--lang", lang, env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    wide = [line for line in out.stdout.splitlines() if cell_len(line) > 80]
    assert not wide, wide


def test_list_marks_a_step_with_questions_by_its_answers_not_its_run(tmp_path):
    """Issue #28, 1: lm3-l3's reflection had run (visited: its probe passed) with no question
    answered, and `list --json` said `pass`. A step with questions is passed once every one has
    an answer, in every lesson, whatever its run said."""
    from tutor.workspace.store import AnswerSheet, Section, Store

    lab = tmp_path / "attn-lab"
    lab.mkdir()
    store = Store(lab)
    asked = {lesson.id: [s for s in lesson.steps if s.questions] for lesson in all_lessons()}
    assert {"lm3-l3", "lab-02", "kv-cache"} <= {lid for lid, steps in asked.items() if steps}
    store.update(
        lambda state: state.setdefault("lessons", {}).update(
            {lid: {"status": {s.id: "pass" for s in steps}} for lid, steps in asked.items()}
        )
    )

    def statuses():
        data = json.loads(run("list", "--json", cwd=tmp_path).stdout)
        return {
            (lesson["id"], s["id"]): (s["status"], s.get("answered"), s.get("questions"))
            for lesson in data["lessons"]
            for s in lesson["steps"]
            if (lesson["id"], s["id"]) in {(lid, st.id) for lid, sts in asked.items() for st in sts}
        }

    before = statuses()
    assert before and all(v[0] == "todo" and v[1] == 0 for v in before.values()), before
    for lid, steps in asked.items():
        lesson = get_lesson(lid)
        sheet = AnswerSheet(
            name=lesson.answers_file,
            sections=tuple(Section(s.id, s.id, s.questions["en"]) for s in steps),
            legacy_step=steps[0].id if steps else "",
        )
        for s in steps:
            for i in range(len(s.questions["en"])):
                store.save_answer(sheet, s.id, i, f"my answer {i}", base="", both=lambda a, b: b)
    after = statuses()
    assert all(v[0] == "pass" and v[1] == v[2] for v in after.values()), after
