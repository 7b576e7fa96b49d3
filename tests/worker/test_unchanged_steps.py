"""The app runs again only the steps a save can have changed (tutor/workspace/unchanged.py): a
pass carries the names its probe read of the learner's module (the child records them), and a
later save whose code for those names, what they name and the file's top level is the same
text shows that pass again."""

from __future__ import annotations

import json

import pytest

from tutor.engine import child
from tutor.engine.checks_loader import load_checks
from tutor.engine.client import check_sources
from tutor.model.lesson import all_lessons
from tutor.model.results import StepResult
from tutor.workspace import unchanged

LESSONS = all_lessons()
CHECKS = load_checks(LESSONS)


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.id for lesson in LESSONS])
def test_a_pass_carries_the_names_its_probe_read(lesson):
    # Through the child, the judge and the worker to the client: each checked step of the
    # reference passes with the names it read, its own functions among them.
    source = lesson.reference_path.read_text(encoding="utf-8")
    (results,) = check_sources(lesson.id, [(lesson.file_name, source, None)], timeout=30)
    by_id = {r.id: r for r in results}
    for step in lesson.checked_steps:
        result = by_id[step.id]
        assert result.status == "pass", result
        assert result.reads is not None and set(step.functions) <= set(result.reads), result.reads


@pytest.mark.slow
def test_a_probe_that_reads_the_whole_namespace_reads_unknown_names(monkeypatch):
    lesson = next(lesson for lesson in LESSONS if lesson.id == "lm3-l3")
    source = lesson.reference_path.read_text(encoding="utf-8")
    checks = CHECKS[lesson.id]
    spec = checks.STEPS["shapes"]

    def probe(ctx, inputs):
        vars(ctx.module)  # any name of the file may matter now
        return spec.probe(ctx, inputs)

    monkeypatch.setitem(checks.STEPS, "shapes", type(spec)(probe, spec.judge, spec.functions))
    code = compile(source, lesson.file_name, "exec")
    job = {"source": source, "filename": lesson.file_name}
    report, _ = child._run(job, "shapes", code, checks, checks.make_inputs())
    assert report.reads is None
    monkeypatch.setitem(checks.STEPS, "shapes", spec)
    report, _ = child._run(job, "shapes", code, checks, checks.make_inputs())
    assert report.reads == ["expected_shapes"]


def test_a_step_keeps_its_fingerprint_when_only_another_steps_code_changes():
    source = "import torch\n\ndef f(x):\n    return g(x)\n\ndef g(x):\n    return x\n\ndef h(x):\n    return 2 * x\n"
    steps = {"uses-f": ["f"], "uses-h": ["h"]}
    before = unchanged.fingerprints(source, steps)
    after_h = unchanged.fingerprints(source.replace("2 * x", "3 * x"), steps)
    after_g = unchanged.fingerprints(source.replace("return x", "return -x"), steps)
    assert before["uses-f"] == after_h["uses-f"] and before["uses-h"] != after_h["uses-h"]
    assert before["uses-f"] != after_g["uses-f"]  # g is reached through f
    assert before["uses-h"] == after_g["uses-h"]
    # Moved down by lines added above: the same code, the same fingerprint.
    assert unchanged.fingerprints("\n\n" + source, steps) == before


@pytest.mark.parametrize(
    "change",
    [
        "K = 2\n",  # the top level: every step
        "import torch.nn as nn\n",
        "@functools.cache\n",
    ],
)
def test_the_top_level_and_decorators_belong_to_every_step(change):
    source = "import functools\n\ndef h(x):\n    return x\n"
    steps = {"s": ["h"]}
    before = unchanged.fingerprints(source, steps)
    if change.startswith("@"):
        changed = source.replace("def h", change + "def h")
    else:
        changed = source + change
    assert unchanged.fingerprints(changed, steps) != before


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    return globals()['g'](x)\n",
        "import helpers\ndef f(x):\n    return x\n",
        "from . import helpers\ndef f(x):\n    return x\n",
        "import os\ndef f(x):\n    return x\n",
        "def f(x):\n    return getattr(x, 'sum')()\n",
        "def f(x):\n    return open(__file__).read()\n",
        "def f(x):\n    return x\ndef f(x):\n    return -x\n",
        "def f(x:\n",
        "def f(x):\n    return x\ndef __getattr__(name):\n    return f\n",
    ],
    ids=[
        "globals",
        "own-module",
        "relative",
        "os",
        "getattr",
        "own-file",
        "twice",
        "syntax",
        "module-getattr",
    ],
)
def test_a_file_that_may_reach_code_another_way_runs_every_step(source):
    assert unchanged.fingerprints(source, {"s": ["f"]}) == {}


def test_a_module_beside_the_file_named_as_a_library_runs_every_step(tmp_path):
    source = "import torch\ndef f(x):\n    return x\n"
    assert unchanged.fingerprints(source, {"s": ["f"]}, tmp_path)
    (tmp_path / "torch.py").write_text("", encoding="utf-8")
    assert unchanged.fingerprints(source, {"s": ["f"]}, tmp_path) == {}


STEPS_SOURCE = "import torch\n\ndef f(x):\n    return x\n\ndef h(x):\n    return 2 * x\n"


def passed(step: str, reads=("f",), output: str = "") -> StepResult:
    return StepResult(step, "pass", output=output, reads=tuple(reads) if reads else None)


def test_passed_steps_show_a_pass_again_only_on_the_same_code_and_settings():
    passed_steps = unchanged.PassedSteps()
    passed_steps.note(passed("uses-f"), STEPS_SOURCE, "null")
    passed_steps.note(passed("uses-h", ["h"]), STEPS_SOURCE, json.dumps({"n": 1}))
    edited = STEPS_SOURCE.replace("2 * x", "3 * x")
    assert passed_steps.unchanged(edited, {"uses-h": json.dumps({"n": 1})}) == {"uses-f"}
    assert passed_steps.unchanged(STEPS_SOURCE, {"uses-h": json.dumps({"n": 2})}) == {"uses-f"}
    assert passed_steps.unchanged(STEPS_SOURCE, {"uses-h": json.dumps({"n": 1})}) == {
        "uses-f",
        "uses-h",
    }
    passed_steps.note(StepResult("uses-f", "fail", reads=("f",)), STEPS_SOURCE, "null")
    assert "uses-f" not in passed_steps.unchanged(STEPS_SOURCE, {})
    passed_steps.forget("uses-h")
    assert passed_steps.unchanged(STEPS_SOURCE, {"uses-h": json.dumps({"n": 1})}) == set()


@pytest.mark.parametrize(
    "result",
    [passed("s", reads=None), passed("s", output="UserWarning at line 3")],
    ids=["names-unknown", "printed"],
)
def test_a_pass_whose_names_are_unknown_or_that_printed_runs_again(result):
    passed_steps = unchanged.PassedSteps()
    passed_steps.note(result, STEPS_SOURCE, "null")
    assert passed_steps.unchanged(STEPS_SOURCE, {}) == set()


def test_a_name_the_probe_read_that_the_file_lacked_counts_once_defined():
    # ctx.optional("g") read g and found nothing: a file that defines g later runs the step.
    passed_steps = unchanged.PassedSteps()
    passed_steps.note(passed("s", reads=["f", "g"]), STEPS_SOURCE, "null")
    assert passed_steps.unchanged(STEPS_SOURCE + "\ndef g(x):\n    return x\n", {}) == set()
    assert passed_steps.unchanged(STEPS_SOURCE + "\n# a comment\n", {}) == {"s"}


def test_names_cut_or_too_many_on_the_wire_are_unknown():
    from tutor.engine import protocol

    def through(reads):
        message = protocol.Outputs({"calls": []}, [], reads)
        return protocol.Outputs.from_json(json.loads(json.dumps(message.to_json()))).reads

    assert through(["f", "g"]) == ["f", "g"]
    assert through(["f" * 300]) is None  # cut to 200 characters: another name
    assert through([f"f{i}" for i in range(65)]) is None


@pytest.mark.parametrize(
    "source",
    [
        *(lesson.reference_path.read_text(encoding="utf-8") for lesson in all_lessons()),
        'x = \'é\'; y = 2\r\n@dec(\r\n  1)\r\ndef f():\r\n    return \'ü\' + """a\rb"""\r\n',
        "s = '\f'\n\nclass A:  # 注释\n    z = '\\u2028'\n\n\ndef g(): return A\n",
        "def h():\n    return 1",  # no newline at the end
    ],
)
def test_a_definitions_text_is_the_one_ast_gives(source):
    """The fingerprint's text of each top-level node is ast.get_source_segment's, taken
    without splitting the source again for each node: line breaks as ast counts them,
    offsets in UTF-8 bytes."""
    import ast

    segment = unchanged._Segments(source)
    tree = ast.parse(source)
    nodes = [*tree.body]
    for node in tree.body:
        nodes += getattr(node, "decorator_list", [])
    assert nodes
    for node in nodes:
        assert segment(node) == ast.get_source_segment(source, node)
