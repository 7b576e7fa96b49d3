"""`attn-tutor dev check [LESSON|PATH]`: a line per check, exit 0 only when all pass.

The failing cases work on a copy of a lesson in tmp_path, laid out as the checkout is
(lessons/<id>/ beside reference/), loaded through the PATH argument: the worker then runs
the copy's checks.py and reference, not the installed ones.
"""

import re
import shutil
from pathlib import Path

import pytest
from test_cli import ROOT, run

from tutor import toml
from tutor.model.lesson import all_lessons

LESSONS = {lesson.id: lesson.file_name for lesson in all_lessons()}  # every lesson, by data


def lines_of(out) -> list[str]:
    """The check lines (✓/✗, ! for a warning), without the header and the summary."""
    return [line for line in out.stdout.splitlines() if line[:2] in ("✓ ", "✗ ", "! ")]


def failed(out) -> list[str]:
    return [line for line in lines_of(out) if line.startswith("✗ ")]


def copy_lesson(tmp_path: Path, lesson: str) -> Path:
    """A copy of the lesson, its mistakes cut to one per step: running all of them is most of
    a `dev check`'s time, and tests/worker/test_lesson_mistakes.py runs them all once."""
    folder = tmp_path / "lessons" / lesson
    shutil.copytree(ROOT / "lessons" / lesson, folder)
    (tmp_path / "reference").mkdir(exist_ok=True)
    shutil.copy(ROOT / "reference" / LESSONS[lesson], tmp_path / "reference" / LESSONS[lesson])
    one_mistake_per_step(folder)
    return folder


def edit(path: Path, old: str, new: str) -> None:
    """path with its one occurrence of old replaced by new (a test that edits nothing proves
    nothing: old must be there, once)."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path.name, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def mistake_ids(folder: Path) -> list[str]:
    text = (folder / "mistakes.toml").read_text(encoding="utf-8")
    return [m["id"] for m in toml.loads(text).get("mistakes", [])]


def one_mistake_per_step(folder: Path) -> list[str]:
    """The lesson's mistakes.toml cut to the first mistake that fails each step: the whole list
    runs in tests/worker/test_lesson_mistakes.py, once. Their ids."""
    text = (folder / "mistakes.toml").read_text(encoding="utf-8")
    head, *blocks = re.split(r"(?=^\[\[mistakes\]\]$)", text, flags=re.M)
    kept, steps, ids = [], set(), []
    for block in blocks:
        mistake = toml.loads(block)["mistakes"][0]
        failing = {s for s, e in mistake["expect"].items() if e.get("status", "fail") != "pass"}
        if failing - steps:
            kept.append(block)
            steps |= failing
            ids.append(mistake["id"])
    (folder / "mistakes.toml").write_text(head + "".join(kept), encoding="utf-8")
    return ids


@pytest.fixture(scope="module")
def every_lesson(tmp_path_factory):
    """`dev check` without an argument, run once, on copies that stand in for the built-in
    lessons (same ids), each cut to a mistake per step: the run, each lesson's lines in it, and
    the ids of the mistakes kept."""
    root = tmp_path_factory.mktemp("dev-check-all")
    kept = {lesson: mistake_ids(copy_lesson(root, lesson)) for lesson in LESSONS}
    env = {"ATTN_TUTOR_LESSONS": str(root / "lessons")}
    out = run("dev", "check", "--timeout", "30", cwd=root, env=env)
    sections: dict[str, list[str]] = {}
    for line in out.stdout.splitlines():
        if line.startswith("dev check "):
            current = sections.setdefault(line.split()[2], [])
        elif sections:
            current.append(line)
    return out, sections, kept


# The tests that read every_lesson run in one xdist process, so the fixture runs once.
@pytest.mark.xdist_group("dev-check-every-lesson")
@pytest.mark.parametrize("lesson", list(LESSONS))
def test_dev_check_passes_for_the_lesson(every_lesson, lesson):
    out, sections, kept = every_lesson
    section = sections[lesson]
    lines = [line for line in section if line[:2] in ("✓ ", "✗ ", "! ")]
    assert lines and not [line for line in lines if line.startswith("✗ ")], out.stdout
    assert kept[lesson]
    for mistake in kept[lesson]:  # each variant said, as caught
        assert any(line.startswith(f"✓ mistake {mistake}: ") for line in lines), out.stdout
    assert any(line.startswith("✓ checks: ") for line in lines), out.stdout
    for word in (
        "schema",
        "files",
        "texts",
        "hints",
        "message keys",
        "catalogs",
        "starter",
        "reference",
        "saves",
        "warm-up",
        "experiments",
    ):
        assert any(line.startswith(f"✓ {word}: ") for line in lines), (word, out.stdout)
    summary = [line for line in section if line.strip()][-1]
    assert summary == f"{len(lines)}/{len(lines)} checks passed", out.stdout


@pytest.mark.xdist_group("dev-check-every-lesson")
def test_without_an_argument_every_lesson_is_checked(every_lesson):
    out, sections, _ = every_lesson
    assert out.returncode == 0, out.stdout + out.stderr
    headers = [line for line in out.stdout.splitlines() if line.startswith("dev check ")]
    assert [h.split()[2] for h in headers] == list(LESSONS) == list(sections)
    assert not failed(out)


def test_a_lesson_named_by_its_id_is_the_one_checked():
    # The per-lesson runs used to go through this too: an id names that lesson's folder alone.
    from tutor.cli.main import _dev_folders

    for lesson in all_lessons():
        assert _dev_folders(lesson.id, "en") == [lesson.folder]
    assert _dev_folders(None, "en") == [lesson.folder for lesson in all_lessons()]


def test_dev_check_of_a_copy_by_path_passes_in_chinese(tmp_path):
    folder = copy_lesson(tmp_path, "lab-02")
    out = run("dev", "check", str(folder / "lesson.toml"), "--lang", "zh")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "✓ 参考实现：" in out.stdout and "项检查通过" in out.stdout


def test_a_failing_step_is_told_in_the_readers_language(tmp_path):
    folder = copy_lesson(tmp_path, "lab-02")
    edit(tmp_path / "reference" / "lab_02.py", 'float("-inf")', "0.0")
    out = run("dev", "check", str(folder), "--lang", "zh")
    assert out.returncode == 1
    assert (
        "✗ 参考实现：并非每个需要检查的步骤都通过（步骤 weights：未通过，检查 future-is-zero（check.future）"
        in out.stdout
    ), out.stdout


def test_a_missing_catalog_key_is_named_with_where_it_is_used(tmp_path):
    folder = copy_lesson(tmp_path, "lab-02")
    checks = folder / "checks.py"
    source = checks.read_text()
    assert source.count('msg("likely.weights_shape")') >= 1
    checks.write_text(source.replace('msg("likely.weights_shape")', 'msg("likely.no_such_key")', 1))
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    bad = failed(out)
    assert any("'likely.no_such_key' (checks.py:" in line and "en.toml" in line for line in bad), (
        out.stdout
    )
    assert any("'likely.no_such_key' (checks.py:" in line and "zh.toml" in line for line in bad), (
        out.stdout
    )


def test_a_key_built_at_run_time_that_cannot_be_resolved_fails(tmp_path):
    folder = copy_lesson(tmp_path, "lab-02")
    checks = folder / "checks.py"
    checks.write_text(
        checks.read_text() + '\n\ndef _later(name):\n    return msg(f"likely.{name}")\n'
    )
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    assert any("built at run time at checks.py:" in line for line in failed(out)), out.stdout


def test_a_starter_that_passes_fails_the_starter_check(tmp_path):
    folder = copy_lesson(tmp_path, "lab-02")
    shutil.copy(ROOT / "reference" / "lab_02.py", folder / "starter.py")
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    assert failed(out) == [
        "✗ starter: not todo on every checked step "
        "(scores: passed, mask: passed, weights: passed, output: passed)"
    ], out.stdout


def test_a_warmup_that_passes_a_step_fails_the_warmup_check(tmp_path):
    """warmup.py runs in every child: a function of it that is right is a solution handed out."""
    folder = copy_lesson(tmp_path, "lab-02")
    warmup = folder / "warmup.py"
    source = warmup.read_text()
    wrong = source[source.index("def causal_mask") : source.index("def attention_weights")]
    right = "def causal_mask(seq_len):\n    return torch.ones(seq_len, seq_len).triu(1) > 0\n\n\n"
    warmup.write_text(source.replace(wrong, right))
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    assert failed(out) == [
        "✗ warm-up: warmup.py must fail every checked step with wrong values, neither passing "
        "nor raising (mask: passed)"
    ], out.stdout


def test_a_warmup_that_raises_or_lacks_a_name_fails(tmp_path):
    """A step whose warm-up raises warms nothing: it must fail with wrong values."""
    folder = copy_lesson(tmp_path, "lab-02")
    warmup = folder / "warmup.py"
    source = warmup.read_text()
    edit(warmup, "return torch.softmax", "raise ValueError  # ")
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    (warm,) = [line for line in failed(out) if line.startswith("✗ warm-up: ")]
    assert "weights: error" in warm and "output: error" in warm, out.stdout
    assert "scores:" not in warm and "mask:" not in warm, out.stdout
    warmup.write_text(source[: source.index("def attention(")])  # its step could not run
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    assert "✗ files: step 'output' is about attention, which warmup.py does not define" in (
        failed(out)
    ), out.stdout


def test_a_warmup_that_copies_the_reference_fails(tmp_path):
    folder = copy_lesson(tmp_path, "lab-02")
    reference = (tmp_path / "reference" / "lab_02.py").read_text()
    line = next(x for x in reference.splitlines() if "masked_fill" in x)
    warmup = folder / "warmup.py"
    warmup.write_text(warmup.read_text() + f"\n\ndef unused(scores, mask):\n{line}\n")
    at = len(warmup.read_text().splitlines())
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    assert [line for line in failed(out) if line.startswith("✗ warm-up: ")] == [
        f"✗ warm-up: 1 lines of warmup.py are the reference's own (lines {at}); it runs in every "
        "child: write it another way"
    ], out.stdout


def test_a_reference_with_a_bug_fails_the_reference_check(tmp_path):
    folder = copy_lesson(tmp_path, "lab-02")
    edit(tmp_path / "reference" / "lab_02.py", 'float("-inf")', "0.0")
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    bad = [line for line in failed(out) if line.startswith("✗ reference: ")]
    assert bad and "weights: failed, future-is-zero (check.future)" in bad[0], out.stdout


def test_a_variant_the_checks_let_through_fails(tmp_path):
    folder = copy_lesson(tmp_path, "lab-02")
    mistakes = folder / "mistakes.toml"
    # "Wrong" only in form: the same formula written another way must pass, so it is reported.
    mistakes.write_text(
        mistakes.read_text()
        + '''
[[mistakes]]
id = "not-wrong"
[mistakes.replace]
scaled_scores = """
def scaled_scores(q, k):
    return (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
"""
[mistakes.expect]
scores = { status = "fail", check = "values", keys = ["check.values"] }
'''
    )
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    assert failed(out) == [
        "✗ mistake not-wrong: step scores passes; the checks let this wrong variant through"
    ], out.stdout


def test_schema_problems_are_each_a_line(tmp_path):
    folder = copy_lesson(tmp_path, "lm3-l3")
    toml_path = folder / "lesson.toml"
    text = toml_path.read_text().replace("format_version = 1", "format_version = 2")
    toml_path.write_text(text.replace('kind = "reflect"', 'kind = "essay"'))
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    assert failed(out) == [
        "✗ schema: format_version is 2; this tutor reads format_version = 1",
        "✗ schema: step reflect has kind 'essay'; the kinds are: checked, experiment, reflect",
    ], out.stdout


def test_a_step_function_the_starter_lacks_is_named(tmp_path):
    folder = copy_lesson(tmp_path, "lab-02")
    edit(folder / "starter.py", "def causal_mask(", "def causal_mask_renamed(")
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    assert "✗ files: step 'mask' is about causal_mask, which starter.py does not define" in failed(
        out
    ), out.stdout


def test_an_experiment_step_that_fails_on_the_reference_is_named(tmp_path):
    """dev check runs the experiment steps too, views on, as the app does when one is on screen:
    a judge that raises there was seen only by a learner."""
    folder = copy_lesson(tmp_path, "lab-02")
    seed = "def seed_weights(inputs):\n"
    edit(folder / "checks.py", seed, f"{seed}    1 / 0\n")
    out = run("dev", "check", str(folder))
    assert out.returncode == 1
    assert failed(out) == [
        "✗ experiments: the reference does not run every experiment step "
        "(heatmap: error, judge (failure.judge))"
    ], out.stdout


def test_a_probe_that_reads_the_whole_namespace_is_said_to_run_on_every_save(tmp_path):
    folder = copy_lesson(tmp_path, "lab-02")
    probe = "def probe_output(ctx, inputs):\n"
    edit(folder / "checks.py", probe, f"{probe}    vars(ctx.module)\n")
    out = run("dev", "check", str(folder))
    assert out.returncode == 0, out.stdout  # a warning: the step still works, only slower
    (line,) = [line for line in lines_of(out) if line.startswith("! saves: ")]
    assert "output" in line and "whole namespace" in line and "ctx.defines" in line, line


def test_a_table_wider_than_the_text_at_80_columns_is_named(tmp_path):
    folder = copy_lesson(tmp_path, "lab-02")
    wide = 'table([f"column {i}" for i in range(12)], [[f"value {i}" for i in range(12)]]),'
    view = '        v.visuals["view"] = [\n'
    edit(folder / "checks.py", view, f'        v.visuals["view"] = [{wide}\n')
    edit(folder / "checks.py", "from tutor.kit import (\n", "from tutor.kit import (\n    table,\n")
    out = run("dev", "check", str(folder), "--lang", "zh")
    assert out.returncode == 1
    (line,) = failed(out)
    assert line.startswith("✗ 实验步骤：步骤 exercises 画出的表格宽 ") and "（en）" in line, (
        out.stdout
    )
    assert "正文只有 52 列" in line, out.stdout


@pytest.mark.parametrize(
    "args", [("dev", "check", "no-such-lesson"), ("dev", "check", "/"), ("dev",)]
)
def test_bad_usage_exits_2(args):
    out = run(*args)
    assert out.returncode == 2 and out.stdout == ""


def test_dev_check_help_in_both_languages():
    assert "LESSON|PATH" in run("dev", "check", "--help").stdout
    assert "课程" in run("dev", "check", "--help", "--lang", "zh").stdout


def test_dev_check_into_a_closed_pipe_keeps_the_failures_exit_code(tmp_path):
    """`dev check | head` with the reader gone before the verdict: exit 1 still, as without the
    pipe (it exited 0, the code of a lesson that passes)."""
    import os
    import subprocess
    import sys

    folder = copy_lesson(tmp_path, "lm3-l3")
    toml_path = folder / "lesson.toml"
    toml_path.write_text(toml_path.read_text().replace("format_version = 1", "format_version = 2"))
    read, write = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "tutor", "dev", "check", str(folder)],
        stdout=write,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    os.close(write)
    os.close(read)
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 1 and err == "", err
