"""An error while the file loads is the file's, said once and about the file: an import of a
package the tutor does not have (the lab-02 notebook imports matplotlib), an exception at the
top level. Not one message per step phrased as "`scaled_scores` raised …"."""

from __future__ import annotations

import importlib.util
import textwrap

import pytest
from reliability_kit import CHECKED, REFERENCE, first_message, summary, with_code

MISSING = "attn_tutor_no_such_package"  # surely not installed, wherever the tests run


def _file_level(run, lesson, key):
    messages = []
    for step in CHECKED[lesson]:
        r = run.results[step]
        assert r.status == "error" and [c.id for c in r.checks] == ["file-loads"], summary(
            run.results
        )
        message = first_message(r)
        assert message.key == key and "fn" not in message.params, summary(run.results)
        messages.append((message.key, message.params))
    assert all(m == messages[0] for m in messages), messages  # the same words in every step
    return messages[0][1]


@pytest.mark.parametrize(
    "statement",
    [
        f"import {MISSING}.pyplot as plt",
        f"from {MISSING} import pyplot",
        f"import torch, {MISSING}",
    ],
)
def test_a_package_the_tutor_does_not_have_is_one_message_about_that_import(live, statement):
    source = REFERENCE["lab-02"].replace("import torch\n", f"import torch\n{statement}\n", 1)
    params = _file_level(live.run("lab-02", source), "lab-02", "failure.missing_package")
    assert params["module"] == MISSING and params["code"] == statement
    assert params["line"] == source.splitlines().index(statement) + 1


@pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is not None, reason="matplotlib is installed here"
)
def test_the_notebooks_matplotlib_import(live):
    source = "import matplotlib.pyplot as plt\n" + REFERENCE["lab-02"]
    params = _file_level(live.run("lab-02", source), "lab-02", "failure.missing_package")
    assert params["module"] == "matplotlib" and params["line"] == 1


def test_wrapped_in_try_except_the_import_does_no_harm(live):
    source = (
        f"try:\n    import {MISSING}.pyplot as plt\nexcept ImportError:\n    plt = None\n"
        + REFERENCE["lab-02"]
    )
    run = live.run("lab-02", source)
    assert all(r.status == "pass" for r in run.results.values()), summary(run.results)


def test_a_missing_package_imported_in_a_function_fails_that_step_with_the_same_advice(live):
    run = live.run(
        "lm3-l3",
        with_code(f"""
        _original = expected_shapes
        def expected_shapes(B, T, H, hd):
            import {MISSING}
            return _original(B, T, H, hd)
        """),
    )
    r = run.results["shapes"]
    assert r.status == "error" and first_message(r).key == "failure.missing_package", summary(
        run.results
    )
    assert first_message(r).params["module"] == MISSING
    assert all(run.results[s].status == "pass" for s in ("single-head", "leakage", "multi-head")), (
        summary(run.results)
    )


@pytest.mark.parametrize(
    "code, kind",
    [
        ("x = 1 / 0", "ZeroDivisionError"),
        ("raise RuntimeError('set up first')", "RuntimeError"),
        (
            "import torch\nWq = torch.randn(8, 4)\nWq @ Wq",
            "RuntimeError",
        ),  # the notebook's cell, pasted wrong
        ("def f():\n    return undefined_name\nf()", "NameError"),
    ],
)
def test_an_exception_at_the_top_level_is_the_files(live, code, kind):
    source = with_code(code)
    params = _file_level(live.run("lm3-l3", source), "lm3-l3", "failure.file_exception")
    assert params["kind"] == kind and params["line"] != "?"
    assert (
        textwrap.dedent(code).splitlines()[-1].strip() in source.splitlines()[params["line"] - 1]
        or kind == "NameError"
    )
