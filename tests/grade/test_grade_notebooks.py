"""Notebooks among a class's submissions (issue #30): collected beside .py files, picked in a
student's folder, and graded end to end with `attn-tutor grade` and `attn-tutor check`."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.grade.collect import collect
from tutor.model.lesson import get_lesson

ROOT = Path(__file__).resolve().parents[2]
LM3 = get_lesson("lm3-l3")
REFERENCE = LM3.reference_path.read_text(encoding="utf-8")
ENV = dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8")


def notebook(*sources: str) -> str:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# LM3-L3"}]
    cells += [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s}
        for s in sources
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4})


def test_a_class_folder_collects_notebooks_beside_py_files(tmp_path):
    (tmp_path / "alice.ipynb").write_text(notebook(REFERENCE))
    (tmp_path / "bob_lm3_l3.py").write_text(REFERENCE)
    (tmp_path / "notes.txt").write_text("not a submission")
    carol = tmp_path / "carol"
    carol.mkdir()
    (carol / "scratch.py").write_text("x = 1\n")
    (carol / "lab.ipynb").write_text(notebook("import torch", REFERENCE))
    found = {s.student: s.path.name for s in collect([tmp_path], LM3)}
    assert found == {"alice": "alice.ipynb", "bob": "bob_lm3_l3.py", "carol": "lab.ipynb"}


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tutor", *args],
        env=ENV,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_grade_a_mix_of_notebooks_and_py_files(tmp_path):
    wrong = REFERENCE.replace("T = x.shape[-2]", "T = 6", 1)  # the lab's T written in
    assert wrong != REFERENCE
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ann.ipynb").write_text(notebook(REFERENCE, "assert False  # a self-check"))
    (folder / "ben.py").write_text(REFERENCE)
    (folder / "cy.ipynb").write_text(notebook("import torch", wrong))
    (folder / "dee.ipynb").write_text('{"cells": [')
    before = (folder / "dee.ipynb").read_bytes()
    proc = _run("grade", str(folder), "--lesson", "lm3-l3", "--out", "out", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "out/grades.csv").open())}
    assert rows["ann"]["percent"] == rows["ben"]["percent"] == "100"
    assert rows["cy"]["percent"] != "100" and rows["cy"]["status"] == "graded"
    assert rows["dee"]["status"] == "error"
    assert (folder / "dee.ipynb").read_bytes() == before  # nothing lost
    cy = json.loads((tmp_path / "out/students/cy.json").read_text())
    wheres = [c.get("where") or {} for s in cy["steps"] for c in s["checks"]]
    assert any(w.get("cell") == "3" for w in wheres), wheres  # line N of the code cell 3


def test_check_a_notebook_with_a_syntax_error_names_the_cell(tmp_path):
    path = tmp_path / "lab.ipynb"
    path.write_text(notebook("import torch", "def causal_attention(x, Wq, Wk, Wv):\n    return (x"))
    proc = _run("check", "--json", "--lesson", "lm3-l3", str(path), cwd=tmp_path)
    said = json.loads(proc.stdout)
    assert said["file_error"]["cell"] == 3, said["file_error"]
    assert said["file_error"]["line"] in (2, 3)
    text = _run("--lang", "zh", "check", "--lesson", "lm3-l3", str(path), cwd=tmp_path).stdout
    assert "第 3 个单元格的第" in text


@pytest.mark.parametrize("lang, words", [("en", "not valid JSON"), ("zh", "不是有效的 JSON")])
def test_check_an_invalid_notebook_says_so_in_both_languages(tmp_path, lang, words):
    path = tmp_path / "lm3_l3.ipynb"
    path.write_text('{"cells": [')
    proc = _run("--lang", lang, "check", str(path), cwd=tmp_path)
    assert proc.returncode == 1 and words in proc.stdout, proc.stdout + proc.stderr
