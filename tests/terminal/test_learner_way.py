"""Issue #28 as it was seen: the real app in tmux at 80×24, the real watcher and worker."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from tmux_kit import ROOT, app_in_tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def lab(tmp_path, name: str, source: str) -> None:
    (tmp_path / "attn-lab").mkdir()
    (tmp_path / "attn-lab" / name).write_text(source, encoding="utf-8")


def test_hints_read_in_order_and_nothing_covers_them(tmp_path):
    """Hints oldest first, the solution announced before it is shown, and "No more hints"
    said in the panel: no toast over the last hint's text."""
    broken = (ROOT / "reference" / "lab_02.py").read_text().replace('float("-inf")', "0.0")
    lab(tmp_path, "lab_02.py", broken)
    with app_in_tmux(tmp_path, "--lesson", "lab-02", "--step", "weights", "--lang", "en") as pane:
        pane.wait_for(lambda s: "0, not -inf" in s and "✗ failed" in s)
        pane.keys("h", "h")
        screen = pane.wait_for(lambda s: "Hint 2/3" in s)
        assert "Hint 3 is the whole solution" in screen, screen
        lines = screen.splitlines()
        if any("Hint 1/3" in line for line in lines):
            assert min(i for i, x in enumerate(lines) if "Hint 1/3" in x) < min(
                i for i, x in enumerate(lines) if "Hint 2/3" in x
            )
        pane.keys("h", "h")
        screen = pane.wait_for(lambda s: "No more hints for this step." in s)
        assert "Hint 3/3" in screen and "float('-inf')), dim=-1)" in screen, screen
        assert "▔" not in screen and "▁▁▁" not in screen  # no toast frame on the panel


def test_a_visited_reflection_is_not_passed(tmp_path):
    """With every checked step passing, the reflection step visited with no answer: the step
    list and `list --json` both say it is to do."""
    lab(tmp_path, "lm3_l3.py", (ROOT / "reference" / "lm3_l3.py").read_text())
    with app_in_tmux(tmp_path, "--lesson", "lm3-l3", "--step", "reflect", "--lang", "en") as pane:
        screen = pane.wait_for(lambda s: "4/4 checked steps" in s, seconds=90)
        side = [line.split("│")[0] for line in screen.splitlines()]
        row = next(line for line in side if "Reflection questions" in line)
        assert row.lstrip().startswith("·"), screen
        assert next(line for line in side if "Single-head" in line).lstrip().startswith("✓")
    out = subprocess.run(
        [sys.executable, "-m", "tutor", "list", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    steps = {s["id"]: s for s in json.loads(out.stdout)["lessons"][0]["steps"]}
    assert steps["reflect"]["status"] == "todo" and steps["reflect"]["answered"] == 0
    assert steps["single-head"]["status"] == "pass"


def test_l_switches_the_help_and_the_lesson_switcher(tmp_path):
    lab(tmp_path, "lm3_l3.py", (ROOT / "reference" / "lm3_l3.py").read_text())
    with app_in_tmux(tmp_path, "--lesson", "lm3-l3", "--lang", "en") as pane:
        pane.wait_for(lambda s: "checks ready" in s, seconds=90)
        pane.keys("?")
        pane.wait_for(lambda s: "next step" in s.lower())
        pane.keys("l")
        pane.wait_for(lambda s: "下一步" in s and "English" in s)
        pane.keys("Escape", "L")
        pane.wait_for(lambda s: "逐个生成" in s or "课程" in s)
        pane.keys("l")
        pane.wait_for(lambda s: "Generating one token" in s)
