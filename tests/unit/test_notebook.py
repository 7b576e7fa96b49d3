"""A notebook as the learner's file (issue #30), without a worker: reading it as Jupyter, VS Code
and a hand-made JSON write it, which cells and statements are taken, where each line came from,
verdicts' positions said as cells, and the errors of what is not a notebook."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import pytest

from tutor.model.lesson import get_lesson
from tutor.model.results import Check, Failure, Frame, Message, StepResult
from tutor.text.i18n import t
from tutor.text.record_text import check_record_text, record_json
from tutor.text.verdict_text import failure_lines, file_error_to_json
from tutor.workspace import notebook as nb
from tutor.workspace.learner_file import learner_text, placed
from tutor.workspace.watch import FileWatcher

SEEDS = Path("/work/shared/seeds")
LM3_NB, LAB_NB = SEEDS / "000_cb42ea30ea1af979.txt", SEEDS / "003_1b51a5b4d7c1f269.txt"
seeds = pytest.mark.skipif(not LM3_NB.exists(), reason="the notebooks are not on this machine")


def code_cell(source: str | list[str], **extra) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source,
        **extra,
    }


def jupyter(cells: list[dict], minor: int = 5) -> bytes:
    """As Jupyter writes a notebook: nbformat 4.x, sources as lists of lines, ids, indent 1."""
    for n, cell in enumerate(cells):
        if minor >= 5:
            cell.setdefault("id", f"c{n}")
        if isinstance(cell["source"], str):
            cell["source"] = cell["source"].splitlines(keepends=True)
    data = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": minor,
    }
    return (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode()


def vscode(cells: list[dict]) -> bytes:
    """As VS Code writes one: sources as one string each, metadata of its own, indent 4."""
    for cell in cells:
        if isinstance(cell["source"], list):
            cell["source"] = "".join(cell["source"])
        cell["metadata"] = {"vscode": {"languageId": "python"}, **cell.get("metadata", {})}
    data = {
        "cells": cells,
        "metadata": {"language_info": {"name": "python"}, "orig_nbformat": 4},
        "nbformat": 4,
        "nbformat_minor": 2,
    }
    return json.dumps(data, indent=4).encode()


def minimal(sources: list[str]) -> bytes:
    """A hand-made notebook: cells with a type and a source, nothing else."""
    return json.dumps({"cells": [{"cell_type": "code", "source": s} for s in sources]}).encode()


CODE = "import torch\n\ndef f(x):\n    return x + 1\n"


@pytest.mark.parametrize("write", [jupyter, vscode], ids=["jupyter", "vscode"])
def test_jupyter_and_vscode_notebooks_give_the_same_code(write):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# title"}, code_cell(CODE)]
    source = nb.read_notebook(write(cells))
    assert source.text == CODE.replace("\n\n", "\n")
    assert source.places == ((2, 1), (2, 3), (2, 4))  # the blank line is not taken
    assert source.cells == 1


def test_a_hand_made_minimal_notebook_is_read():
    source = nb.read_notebook(minimal(["import torch", "def f(x):\n    return x"]))
    assert source.text == "import torch\ndef f(x):\n    return x\n"
    assert source.places == ((1, 1), (2, 1), (2, 2))


def test_an_nbformat_3_notebook_is_read():
    data = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {},
        "worksheets": [
            {"cells": [{"cell_type": "code", "input": CODE, "outputs": [], "language": "python"}]}
        ],
    }
    assert nb.read_notebook(json.dumps(data).encode()).text == CODE.replace("\n\n", "\n")


@pytest.mark.parametrize(
    "raw, key",
    [
        (b'{"cells": [', "failure.notebook_json"),
        (b"", "failure.notebook_json"),
        (b"\xff\xfe{}", "failure.notebook_json"),
        (b"[1, 2]", "failure.notebook_invalid"),
        (b'{"cells": [{"cell_type": "code", "source": 3}]}', "failure.notebook_invalid"),
        (b'{"cells": [{"cell_type": "spreadsheet", "source": ""}]}', "failure.notebook_invalid"),
    ],
)
def test_what_is_not_a_notebook_says_why(raw, key):
    with pytest.raises(nb.NotebookError) as caught:
        nb.read_notebook(raw)
    assert caught.value.key == key
    for lang in ("en", "zh"):
        text = t(key, lang, **caught.value.params)
        assert "{detail}" not in text and "{json_line}" not in text and text != key


def test_an_invalid_notebook_is_a_file_error_in_both_languages_and_is_not_changed(tmp_path):
    path = tmp_path / "lab.ipynb"
    path.write_bytes(b'{"cells": [{"cell_type": "code", "source": "x = 1"')
    before = path.read_bytes()
    learner = learner_text(path, before)
    assert learner.text is None and learner.problem is not None
    key, params = learner.problem
    assert params["json_line"] == 1
    assert "not valid JSON" in t(key, "en", **params)
    assert "不是有效的 JSON" in t(key, "zh", **params)
    assert path.read_bytes() == before


@seeds
def test_lm3_l3_takes_the_definitions_and_leaves_the_self_checks():
    source = nb.read_notebook(LM3_NB.read_bytes())
    text = source.text
    for kept in (
        "import torch.nn.functional as F",
        "def causal_attention",
        "class CausalMultiHeadAttention",
        "def expected_shapes",
        "def leak",  # the notebook's helper: defined, never called at the top level
        "B, T, d = 2, 6, 8",
    ):
        assert kept in text
    for left in (
        "assert",
        "print(",
        "torch.manual_seed",
        "bad = leak",
        "for n_tokens",
        "mha =",
        "out, w = causal_attention",
        "shapes = expected_shapes",
    ):
        assert left not in text.replace("    assert d_out", ""), left
    compile(text, "lab.ipynb", "exec")  # one module, as the checks import it
    assert source.place(text.splitlines().index("def causal_attention(x, Wq, Wk, Wv):") + 1) == (
        6,
        1,
    )


@seeds
def test_lab_02_inline_notebook_defines_nothing_and_says_where_its_code_is():
    source = nb.read_notebook(LAB_NB.read_bytes())
    assert "def " not in source.text
    assert "matplotlib" not in source.text and "plt." not in source.text  # only the plot
    assert "batch, heads, seq_len, head_dim = 1, 2, 6, 8" in source.text
    assert [cell for cell, _ in source.inline] == [2, 4, 6, 8]
    assert "scores" in dict(source.inline)[4]


def test_tags_keep_and_skip_a_cell():
    cells = [
        code_cell("x = make()\nprint(x)\n", metadata={"tags": [nb.KEEP_TAG]}),
        code_cell("def f():\n    return 1\n", metadata={"tags": [nb.SKIP_TAG]}),
        code_cell("def g():\n    return 2\n"),
    ]
    source = nb.read_notebook(jupyter(cells))
    assert source.text == "x = make()\nprint(x)\ndef g():\n    return 2\n"
    assert source.places[2] == (3, 1)


def test_magics_and_display_are_neutralised_and_cell_magics_left_out():
    cells = [
        code_cell("%matplotlib inline\n!pip install torch\nimport math\n"),
        code_cell("%%timeit\nslow()\n"),
        code_cell(
            "def f(x):\n    %time y = x\n    return x\nfiles = !ls\ntorch.triu?\n",
            metadata={"tags": [nb.KEEP_TAG]},
        ),
        code_cell("display(f(1))\nz = 3\n", metadata={"tags": [nb.KEEP_TAG]}),
    ]
    source = nb.read_notebook(jupyter(cells))
    compile(source.text, "lab.ipynb", "exec")
    assert "import math" in source.text and "slow" not in source.text
    assert "%" not in source.text and "!" not in source.text and "display" not in source.text
    assert "    pass" in source.text  # the magic inside a def keeps the block's lines
    assert source.places[-1] == (4, 2)


def test_the_default_rule_statement_by_statement():
    cell = "\n".join(
        [
            "import os",  # taken
            "import matplotlib.pyplot as plt",  # left: only draws
            "import not_a_package_anywhere",  # left: not installed where the checks run
            "N = 4",  # taken: calls nothing
            "M = N * 2",  # taken: names taken before
            "w = weights @ v",  # left: names what was never taken
            "here = os.getcwd()",  # taken: calls a library, not the notebook
            "rows = [i * N for i in range(N)]",  # taken: a comprehension's own names
            "def g():",
            "    return N",
            "out = g()",  # left: runs the notebook's own code (a self-check's work)
            "wrapped = list(map(g, rows))",  # left: the same, through a library
            "alias = g",  # taken: runs nothing
            "sq = lambda x: g() + x",  # taken: its body runs when it is called
            "try:",
            "    import numpy as np",
            "except ImportError:",
            "    np = None",
            "assert N == 4",  # left: a self-check
            "print(N)",  # left
            "for i in range(3):",  # left: a loop (training, a table)
            "    N += i",
            "fig, ax = plt.subplots()",  # left: plt was left out
        ]
    )
    source = nb.read_notebook(minimal([cell]))
    assert source.text.splitlines() == [
        "import os",
        "N = 4",
        "M = N * 2",
        "here = os.getcwd()",
        "rows = [i * N for i in range(N)]",
        "def g():",
        "    return N",
        "alias = g",
        "sq = lambda x: g() + x",
        "try:",
        "    import numpy as np",
        "except ImportError:",
        "    np = None",
    ]


def test_a_cell_that_does_not_parse_is_taken_whole():
    source = nb.read_notebook(minimal(["def ok():\n    return 1", "print('x')\ndef f(:\n"]))
    assert source.text.endswith("print('x')\ndef f(:\n")
    with pytest.raises(SyntaxError) as caught:
        compile(source.text, "lab.ipynb", "exec")
    assert source.place(caught.value.lineno) == (2, 2)


def _lm3_result() -> StepResult:
    likely = {"key": "likely.squeeze", "params": {"line": 4, "code": "x.squeeze()", "ones": "B"}}
    return StepResult(
        "single-head",
        "fail",
        [
            Check("implemented", "pass"),
            Check("shape", "fail", Message("check.raised", {"fn": "f", "kind": "E", "line": 3})),
            Check("rows", "fail", Message("check.rows_sum", {"row": 0, "likely": likely})),
        ],
        Failure("ValueError", "bad", [Frame(3, "f", "    return x")], ""),
    )


def test_positions_in_a_verdict_are_said_as_cells():
    source = nb.read_notebook(minimal(["import torch", "def f(x):\n    return x\n    x.squeeze()"]))
    result = nb.placed(_lm3_result(), source)
    raised = result.checks[1]
    assert t(raised.message.key, "en", **raised.message.params) == (
        "f raised E at line 2 of cell 2."
    )
    assert (
        t(raised.message.key, "zh", **raised.message.params)
        == "f 在第 2 个单元格的第 2 行抛出了 E。"
    )
    assert failure_lines(result.failure, "en")[0] == "line 2 of cell 2, in f:"
    code = check_record_text(result.checks[2], "en", cli=True).code
    assert code.startswith("Line 3 of cell 2:")
    assert record_json(result.checks[2], "en")["where"]["cell"] == "2"


def test_a_syntax_error_caret_and_the_file_error_name_the_cell():
    source = nb.read_notebook(minimal(["import torch", "def f(:\n    pass"]))
    check = Check(
        "file-loads", "error", Message("failure.syntax", {"line": 2, "kind": "S", "detail": "d"})
    )
    failure = Failure("SyntaxError", "d", [], "   2 | def f(:\n     |      ^")
    step = nb.placed(StepResult("single-head", "error", [check], failure), source)
    assert step.failure is not None
    assert step.failure.caret.splitlines()[0] == "[2]   1 | def f(:"
    said = file_error_to_json([step], "en")
    assert said is not None
    assert said["cell"] == 2 and said["line"] == 1
    assert "line 1 of cell 2" in said["message"]


def test_a_missing_function_names_the_lessons_functions_and_the_inline_cells():
    lesson = get_lesson("lab-02")
    source = nb.read_notebook(minimal(["import torch\nq = torch.randn(2)", "s = q @ q\nprint(s)"]))
    missing = Check("defined", "fail", Message("check.missing", {"name": "scaled_scores"}))
    step = StepResult("scores", "fail", [missing])
    (said,) = placed([step], _learner(source), lesson)
    message = said.checks[0].message
    assert message is not None and message.key == "notebook.missing"
    en = t(message.key, "en", **message.params)
    zh = t(message.key, "zh", **message.params)
    for text in (en, zh):
        assert "scaled_scores(q, k)" in text and "attention(q, k, v)" in text
        assert "1, 2" in text  # the cells whose code was left out
    assert "cells 1, 2" in en and "第 1, 2 个单元格" in zh


def _learner(source: nb.NotebookSource):
    from tutor.workspace.learner_file import LearnerText

    return LearnerText(source.text, None, source)


def test_a_py_file_is_read_as_before():
    learner = learner_text("lab.py", b"def f():\n    return 1\n")
    assert learner.text == "def f():\n    return 1\n" and learner.notebook is None
    assert learner_text("lab.py", b"\xff").problem[0] == "failure.encoding"


def test_is_whole():
    assert nb.is_whole(minimal(["x = 1"]))
    assert not nb.is_whole(minimal(["x = 1"])[:-3])
    assert not nb.is_whole(b"")


async def test_the_watcher_waits_for_a_notebook_to_be_whole(tmp_path: Path):
    path = tmp_path / "lab.ipynb"
    path.write_bytes(minimal(["x = 0"]))
    seen: asyncio.Queue = asyncio.Queue()

    async def watch():
        async for saved in FileWatcher(path, whole=nb.is_whole, settle=0.03).changes(initial=True):
            seen.put_nowait(saved)

    task = asyncio.create_task(watch())
    try:
        await asyncio.wait_for(seen.get(), 3)
        for i in range(4):  # VS Code: truncate, then the JSON in two writes
            whole = minimal([f"x = {i + 1}"])
            with open(path, "wb") as f:
                f.write(whole[:10])
                f.flush()
                await asyncio.sleep(0.01)
                f.write(whole[10:])
            saved = await asyncio.wait_for(seen.get(), 3)
            assert saved.raw == whole  # never the half-written JSON
        await asyncio.sleep(0.25)
        assert seen.empty()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_lines_are_counted_as_python_counts_them():
    source = nb.read_notebook(minimal(["x = 1\f\ny = 2\r\nz = 3\rdef f():\n    return 1/0"]))
    assert [p for _, p in source.places] == [1, 2, 3, 4, 5]
    code = compile(source.text, "lab.ipynb", "exec")
    namespace: dict = {}
    exec(code, namespace)
    with pytest.raises(ZeroDivisionError) as caught:
        namespace["f"]()
    assert source.place(caught.traceback[-1].lineno + 1) == (1, 5)


def test_an_import_of_the_notebooks_own_module_is_taken(tmp_path):
    (tmp_path / "helpers_of_mine.py").write_text("def f():\n    return 1\n")
    raw = minimal(["import helpers_of_mine\nfrom helpers_of_mine import f"])
    assert "import" not in nb.read_notebook(raw).text  # found nowhere
    said = learner_text(tmp_path / "lab.ipynb", raw).text
    assert said == "import helpers_of_mine\nfrom helpers_of_mine import f\n"
