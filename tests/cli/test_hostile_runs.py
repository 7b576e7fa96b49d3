"""`attn-tutor check` end to end, through the real worker, against files a hostile learner
writes: their text reaches the terminal as text, and a tree they build in their scratch folder
breaks no later run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = (ROOT / "reference" / "lm3_l3.py").read_text()

# A window title and an OSC 52 clipboard write, an 8-bit CSI, a bidi override, a DEL, printed
# and raised at import.
LOUD = (
    "import sys\n"
    "print('\\x1b]2;owned\\x07\\x9b6n\\u202eabc\\x7f')\n"
    "raise ValueError('\\x1b]52;c;cm0gLXJmIH4=\\x07 \\u2067x\\u2069')\n"
)

# A tree in the run's scratch folder (its cwd), made as a learner would: deeper than Python's
# recursion limit (a recursive remover dies on it) and its path over PATH_MAX (4,096 bytes), no
# deeper. Landlock checks each mkdir against every folder above it, so the tree's cost grows
# with the square of its depth: 3,000 deep took 31 s of the suite.
DEEP = (
    REFERENCE
    + """
import os
for _ in range(1200):
    os.mkdir("dddd")
    os.chdir("dddd")
"""
)


def check(path: Path, *extra: str, tmp: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8", TMPDIR=str(tmp))
    return subprocess.run(
        [sys.executable, "-m", "tutor", "check", str(path), "--lesson", "lm3-l3", *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )


RAW = ["\x1b", "\x07", "\x9b", "\u202e", "\u2067", "\u2069", "\x7f"]


def test_learner_text_reaches_checks_output_as_text(tmp_path):
    path = tmp_path / "lm3_l3.py"
    path.write_text(LOUD)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    text = check(path, tmp=tmp)
    assert "ValueError" in text.stdout
    for ch in RAW:
        assert ch not in text.stdout + text.stderr, repr(ch)
    assert "\\x1b]52;c;" in text.stdout
    as_json = check(path, "--json", tmp=tmp)
    for ch in RAW:
        assert ch not in as_json.stdout, repr(ch)
    obj = json.loads(as_json.stdout)
    assert obj["file_error"] is not None


@pytest.fixture
def tmp_with_deep_trees(tmp_path):
    """A folder for the runs' scratch: if the tutor leaves the deep tree there, pytest's own
    cleanup (shutil.rmtree) would die on it in a later session, so rm -rf takes it."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    yield tmp
    subprocess.run(["rm", "-rf", "--one-file-system", str(tmp)], check=False)


def test_a_deep_tree_in_scratch_breaks_no_later_run(tmp_path, tmp_with_deep_trees):
    tmp = tmp_with_deep_trees
    deep = tmp_path / "deep" / "lm3_l3.py"
    deep.parent.mkdir()
    deep.write_text(DEEP)
    check(deep, tmp=tmp)
    assert not [p.name for p in tmp.iterdir() if p.name.startswith("attn-run-")]
    good = tmp_path / "good" / "lm3_l3.py"
    good.parent.mkdir()
    good.write_text(REFERENCE)
    after = check(good, "--json", tmp=tmp)
    assert after.returncode == 0, after.stderr[-2000:]
    obj = json.loads(after.stdout)
    assert obj["passed"] == obj["total"]
