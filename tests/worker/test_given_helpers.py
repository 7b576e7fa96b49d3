"""Issue #28: LM3-L3's `leak()` and `broken_attention`, given in the notebook "to test your
function", are in the starter, and the learner can call them: running the file prints the two
numbers the notebook prints, once causal_attention is written."""

import subprocess
import sys
from pathlib import Path

from tutor.model.lesson import get_lesson

LESSON = get_lesson("lm3-l3")


def test_the_starter_hands_over_leak_and_broken_attention(tmp_path):
    starter = LESSON.starter_path.read_text(encoding="utf-8")
    assert "def leak(fn, x):" in starter and "def broken_attention(x, Wq, Wk, Wv):" in starter
    reference = LESSON.reference_path.read_text(encoding="utf-8")
    start = reference.index("def causal_attention")
    written = reference[start : reference.index("\nclass ", start)]
    todo = starter[starter.index("def causal_attention") : starter.index("\nclass ")]
    path = Path(tmp_path) / "lm3_l3.py"
    path.write_text(starter.replace(todo, written), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    words = out.stdout.split()
    assert words[0] == "broken:" and float(words[1]) > 1e-3, out.stdout
    assert words[2] == "yours:" and float(words[3]) < 1e-6, out.stdout
