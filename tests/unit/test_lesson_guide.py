"""docs/writing-a-lesson.md is true: each of its worked examples, assembled from the page, is a
lesson that `attn-tutor dev check` proves, and the kit names the page lists are the kit's."""

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


SECOND = "window-attention/"  # the second example's blocks name their folder


def example_files(second: bool = False) -> dict[str, str]:
    """One worked example's files: the first's (causal-mean), or the second's without its folder."""
    blocks = BLOCK.findall(GUIDE.read_text(encoding="utf-8"))
    if second:
        return {name.removeprefix(SECOND): body for name, body in blocks if name.startswith(SECOND)}
    return {name: body for name, body in blocks if not name.startswith(SECOND)}


LESSON_FILES = {
    "lesson.toml",
    "checks.py",
    "starter.py",
    "reference.py",
    "warmup.py",
    "mistakes.toml",
    "messages.en.toml",
    "messages.zh.toml",
}
EXAMPLES = {
    "causal-mean": (
        False,
        {"text/en/mean.md", "text/zh/mean.md"},
        ["mistake whole-sequence", "mistake no-division"],
        "✓ warm-up: warmup.py fails all 1 checked steps",
    ),
    "window-attention": (
        True,
        {"text/en/attend.md", "text/zh/attend.md", "text/en/reach.md", "text/zh/reach.md"},
        [
            "mistake causal-only: attend window-is-zero (check.hidden_weight, likely.no_window)",
            "mistake window-too-wide: attend window-is-zero",
            "mistake no-mask: attend future-is-zero",
            "✓ experiments: the reference runs every experiment step (1)",
        ],
        "✓ warm-up: warmup.py fails all 1 checked steps",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("lesson", EXAMPLES)
def test_the_guides_examples_are_lessons_dev_check_proves(tmp_path, lesson):
    second, texts, lines, warm = EXAMPLES[lesson]
    files = example_files(second)
    assert LESSON_FILES | texts <= set(files), sorted(LESSON_FILES | texts - set(files))
    folder = tmp_path / lesson
    for name, body in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(body, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "tutor", "--lessons", str(tmp_path), "dev", "check", lesson],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for line in [*lines, warm]:
        assert line in done.stdout, done.stdout


def test_the_kit_names_in_the_guide_are_the_kits():
    import ast

    kit = ast.parse((ROOT / "tutor" / "kit" / "__init__.py").read_text(encoding="utf-8"))
    # The kit's __init__ is imports only: every name it imports is exported.
    assert all(isinstance(n, (ast.Expr, ast.ImportFrom)) for n in kit.body)
    exported = [
        a.asname or a.name for n in kit.body if isinstance(n, ast.ImportFrom) for a in n.names
    ]
    table = GUIDE.read_text(encoding="utf-8").split("### The kit", 1)[1].split("###", 1)[0]
    named = set(re.findall(r"`([A-Za-z_]+)(?:\(|`)", table))
    assert named <= set(exported), sorted(named - set(exported))
    assert set(exported) - {"visuals"} <= named, sorted(
        set(exported) - named
    )  # the page lists all of it
