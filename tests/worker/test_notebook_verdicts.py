"""The labs' notebooks as the learner's file (issue #30), through the real worker: LM3-L3's as
handed out is `todo` on every step; with the reference pasted into its TODO cells it passes;
with a lesson's known mistakes pasted in it gets the .py file's diagnosis, its positions said
as cells. Its own leak() and self-check cells stay and change nothing. 实验 02's notebook
computes inline: without the four functions it is told what the lesson needs; with them in
cells it is checked as the .py is.

The notebooks are built here from the seeds (/work/shared/seeds) and the lessons' files.
"""

from __future__ import annotations

import ast
import copy
import json
import os
from pathlib import Path

import pytest
from worker_kit import CHECKED_STEPS, LESSONS, REFERENCE, message_keys, summary

from tutor.model.lesson import get_lesson
from tutor.model.mistakes import mistake_source, read_mistakes
from tutor.model.results import StepResult
from tutor.text.i18n import t
from tutor.workspace import notebook as nb
from tutor.workspace.learner_file import learner_text, placed

SEEDS = Path("/work/shared/seeds")
LM3_NB, LAB_NB = SEEDS / "000_cb42ea30ea1af979.txt", SEEDS / "003_1b51a5b4d7c1f269.txt"
pytestmark = pytest.mark.skipif(not LM3_NB.exists(), reason="the notebooks are not on this machine")
FOLDER = {lesson.id: lesson.folder for lesson in LESSONS}
# Known mistakes per lesson pasted into the notebook, spread over its list (all of them agreed
# with the .py's verdicts when this was written; ATTN_TUTOR_ALL_MISTAKES=1 runs them all).
SAMPLE = 10_000 if os.environ.get("ATTN_TUTOR_ALL_MISTAKES") else 12


def _seed(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _split(source: str, names: list[str]) -> tuple[str, dict[str, str]]:
    """The file's code outside the named top-level definitions, and each definition's code."""
    lines = source.splitlines(keepends=True)
    defs: dict[str, str] = {}
    used: set[int] = set()
    for node in ast.parse(source).body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        span = range(first - 1, node.end_lineno or node.lineno)
        if getattr(node, "name", None) in names:
            defs[node.name] = "".join(lines[i] for i in span)
            used.update(span)
    rest = "".join(line for i, line in enumerate(lines) if i not in used)
    return rest, defs


LM3_TODO = ["causal_attention", "CausalMultiHeadAttention", "expected_shapes"]


def lm3_notebook(source: str) -> bytes:
    """LM3-L3's notebook with the file's code pasted into its TODO cells: each definition into
    its own cell, the rest of the file (imports, helpers) above the first."""
    data = copy.deepcopy(_seed(LM3_NB))
    rest, defs = _split(source, LM3_TODO)
    for cell in data["cells"]:
        code = "".join(cell["source"])
        for name in LM3_TODO:
            if cell["cell_type"] == "code" and (
                code.startswith(f"def {name}(") or code.startswith(f"class {name}(")
            ):
                pasted = defs[name] if name != LM3_TODO[0] else rest + "\n\n" + defs[name]
                cell["source"] = pasted.splitlines(keepends=True)
    return json.dumps(data, indent=1).encode()


def lab02_notebook(source: str | None) -> bytes:
    """实验 02's notebook; with a file, its functions each in a cell after the imports' cell."""
    data = copy.deepcopy(_seed(LAB_NB))
    if source is not None:
        names = [f for s in get_lesson("lab-02").steps for f in s.functions]
        rest, defs = _split(source, names)
        new = [rest, *defs.values()]
        cells = [
            {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
             "source": code.splitlines(keepends=True)}
            for code in new
        ]  # fmt: skip
        data["cells"][2:2] = cells
    return json.dumps(data, ensure_ascii=False).encode()


def run_notebook(run, lesson: str, raw: bytes) -> dict[str, StepResult]:
    learner = learner_text("lab.ipynb", raw)
    assert learner.text is not None, learner.problem
    results = run(lesson, learner.text)
    said = placed([results[s] for s in CHECKED_STEPS[lesson]], learner, get_lesson(lesson))
    return {r.id: r for r in said}


def verdicts(results: dict[str, StepResult]) -> dict:
    """What a learner is told, without where: each step's status, failing checks and keys."""
    return {
        sid: (
            r.status,
            sorted(
                (c.id, c.status, tuple(sorted(message_keys(c.message) - {"notebook.line"})))
                for c in r.checks
            ),
        )
        for sid, r in results.items()
    }


def lines(value) -> list:
    """Every `line` parameter in a verdict's messages, and its frames' lines."""
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "line":
                found.append(v)
            else:
                found += lines(v)
    elif isinstance(value, list):
        for v in value:
            found += lines(v)
    return found


def test_lm3_notebook_as_handed_out_is_todo_on_every_step(run):
    results = run_notebook(run, "lm3-l3", LM3_NB.read_bytes())
    assert {r.status for r in results.values()} == {"todo"}, summary(results)
    frames = [f.line for r in results.values() if r.failure for f in r.failure.frames]
    cells = [line["params"]["cell"] for line in frames]
    assert set(cells) <= {6, 12, 16} and cells, frames  # the TODO cells, by their places


def test_lm3_notebook_with_the_reference_passes_every_step(run):
    results = run_notebook(run, "lm3-l3", lm3_notebook(REFERENCE["lm3-l3"]))
    assert {r.status for r in results.values()} == {"pass"}, summary(results)


def _sample(lesson: str):
    mistakes, _ = read_mistakes(FOLDER[lesson] / "mistakes.toml")
    usable = [m for m in mistakes if not m.file]
    return usable[:: max(1, len(usable) // SAMPLE)][:SAMPLE]


@pytest.mark.parametrize("mistake", _sample("lm3-l3"), ids=lambda m: m.id)
def test_lm3_notebook_with_a_mistake_gets_the_py_files_diagnosis(run, mistake):
    source = mistake_source(mistake, REFERENCE["lm3-l3"], FOLDER["lm3-l3"])
    raw = lm3_notebook(source)
    as_py = run("lm3-l3", source)
    as_notebook = run_notebook(run, "lm3-l3", raw)
    assert verdicts(as_notebook) == verdicts(as_py), summary(as_notebook) + "\n" + summary(as_py)
    _same_places(source, raw, as_py, as_notebook)


def _same_places(source, raw, as_py, as_notebook) -> None:
    """Each line the .py's verdict names is, in the notebook's, the place of the same code."""
    py_lines = source.splitlines()
    cells = [
        "".join(c["source"]).splitlines()
        for c in json.loads(raw)["cells"]  # cells counted from 1, text cells too
    ]
    for sid in as_py:
        before = lines([c.message.params for c in as_py[sid].checks if c.message])
        after = lines([c.message.params for c in as_notebook[sid].checks if c.message])
        assert len(before) == len(after)
        for py_line, place in zip(before, after, strict=True):
            if not isinstance(py_line, int):
                continue
            assert isinstance(place, dict) and place["key"] == "notebook.line", place
            cell, line = place["params"]["cell"], place["params"]["line"]
            assert cells[cell - 1][line - 1].strip() == py_lines[py_line - 1].strip()
            assert "cell" in t("record.code_line", "en", line=place, code="x")


def test_lab02_inline_notebook_is_told_which_functions_and_where(run):
    results = run_notebook(run, "lab-02", LAB_NB.read_bytes())
    for r in results.values():
        assert r.status != "pass"
        said = [c.message for c in r.checks if c.message and c.message.key == "notebook.missing"]
        assert said, summary(results)
        for lang in ("en", "zh"):
            text = t(said[0].key, lang, **said[0].params)
            assert "scaled_scores(q, k)" in text and "causal_mask(seq_len)" in text
            assert "4" in text  # the cell that computes the scores inline


def test_lab02_notebook_with_the_functions_is_checked_as_the_py_is(run):
    source = REFERENCE["lab-02"]
    results = run_notebook(run, "lab-02", lab02_notebook(source))
    assert {r.status for r in results.values()} == {"pass"}, summary(results)


@pytest.mark.parametrize("mistake", _sample("lab-02"), ids=lambda m: m.id)
def test_lab02_notebook_with_a_mistake_gets_the_py_files_diagnosis(run, mistake):
    source = mistake_source(mistake, REFERENCE["lab-02"], FOLDER["lab-02"])
    raw = lab02_notebook(source)
    as_py = run("lab-02", source)
    as_notebook = run_notebook(run, "lab-02", raw)
    assert verdicts(as_notebook) == verdicts(as_py), summary(as_notebook) + "\n" + summary(as_py)
    _same_places(source, raw, as_py, as_notebook)


def test_a_failing_self_check_cell_changes_nothing(run):
    """The reference, with the notebook's self-check 1 made to fail: every step still passes."""
    data = json.loads(lm3_notebook(REFERENCE["lm3-l3"]))
    for cell in data["cells"]:
        if "self-check 1 passed" in "".join(cell["source"]):
            cell["source"].insert(0, "assert False, 'a self-check that fails'\n")
    results = run_notebook(run, "lm3-l3", json.dumps(data).encode())
    assert {r.status for r in results.values()} == {"pass"}, summary(results)


def test_a_kept_cell_that_raises_is_the_files_error_said_in_its_cell(run):
    data = json.loads(lm3_notebook(REFERENCE["lm3-l3"]))
    data["cells"].append(
        {"cell_type": "code", "metadata": {"tags": [nb.KEEP_TAG]}, "outputs": [],
         "execution_count": None, "source": ["x = 1\n", "raise ValueError('kept')\n"]}
    )  # fmt: skip
    results = run_notebook(run, "lm3-l3", json.dumps(data).encode())
    for r in results.values():
        assert r.status == "error"
        (check,) = [c for c in r.checks if c.status != "pass"]
        assert check.message is not None
        assert t(check.message.key, "en", **check.message.params).count(
            f"line 2 of cell {len(data['cells'])}"
        )
