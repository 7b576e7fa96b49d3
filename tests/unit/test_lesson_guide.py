"""docs/writing-a-lesson.md is true: its worked example, assembled from the page, is a lesson that
`attn-tutor dev check` proves, and the kit names the page lists are the kit's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "writing-a-lesson.md"
BLOCK = re.compile(r"^```\w+ file=(\S+)\n(.*?)^```$", re.M | re.S)


def example_files() -> dict[str, str]:
    return {name: body for name, body in BLOCK.findall(GUIDE.read_text(encoding="utf-8"))}


@pytest.mark.slow
def test_the_guides_example_is_a_lesson_dev_check_proves(tmp_path):
    files = example_files()
    assert {
        "lesson.toml",
        "checks.py",
        "starter.py",
        "reference.py",
        "warmup.py",
        "mistakes.toml",
        "messages.en.toml",
        "messages.zh.toml",
        "text/en/mean.md",
        "text/zh/mean.md",
    } <= set(files)
    folder = tmp_path / "causal-mean"
    for name, body in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(body, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "tutor", "--lessons", str(tmp_path), "dev", "check", "causal-mean"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mistake whole-sequence" in done.stdout and "mistake no-division" in done.stdout
    assert "✓ warm-up: warmup.py fails all 1 checked steps" in done.stdout, done.stdout


def test_the_kit_names_in_the_guide_are_the_kits():
    import ast

    kit = ast.parse((ROOT / "tutor" / "kit" / "__init__.py").read_text(encoding="utf-8"))
    exported = next(
        ast.literal_eval(n.value)
        for n in kit.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "__all__"
    )
    table = GUIDE.read_text(encoding="utf-8").split("### The kit", 1)[1].split("###", 1)[0]
    named = set(re.findall(r"`([A-Za-z_]+)(?:\(|`)", table))
    assert named <= set(exported), sorted(named - set(exported))
    assert set(exported) - {"visuals"} <= named, sorted(
        set(exported) - named
    )  # the page lists all of it
