"""The ends of the range: the reference passes everything, the starter is all `todo`,
an empty file has nothing defined, and a file Python cannot parse is an error with a caret."""

from __future__ import annotations

import pytest
from worker_kit import (
    CHECKED_STEPS,
    REFERENCE,
    STARTER,
    Exp,
    failing,
    learner_file,
    message_keys,
    summary,
    verify,
)

from tutor.model.lesson import get_lesson

LESSONS = tuple(CHECKED_STEPS)  # every lesson, by data


def test_the_built_in_lessons_are_covered_with_their_checked_steps():
    assert LESSONS[:2] == ("lm3-l3", "lab-02")
    assert CHECKED_STEPS["lm3-l3"] == ("single-head", "leakage", "multi-head", "shapes")
    assert CHECKED_STEPS["lab-02"] == ("scores", "mask", "weights", "output")
    assert all(CHECKED_STEPS.values())


def test_kit_replaces_only_the_named_def():
    """The learner files of the other tests really are the reference with one piece swapped."""
    src = learner_file(
        "lm3-l3", {"expected_shapes": "def expected_shapes(B, T, H, hd):\n    return {}\n"}
    )
    assert src.count("def expected_shapes") == 1 and "return {}" in src
    assert (
        src.replace("def expected_shapes(B, T, H, hd):\n    return {}\n", "")
        == REFERENCE["lm3-l3"][: REFERENCE["lm3-l3"].index("def expected_shapes")]
    )
    src = learner_file(
        "lm3-l3", {"CausalMultiHeadAttention.forward": "def forward(self, x):\n    return x\n"}
    )
    assert "    def forward(self, x):\n        return x\n" in src
    assert "def causal_attention" in src and "def expected_shapes" in src and "def __init__" in src


def test_kit_reads_nested_message_keys_and_verify_is_not_vacuous():
    from tutor.model.results import Check, Message, StepResult

    m = Message(
        "check.other_sizes",
        {
            "reason": {
                "key": "check.values",
                "params": {"likely": {"key": "likely.scale_d", "params": {}}},
            },
            "likely": {"key": "likely.hardcoded", "params": {}},
        },
    )
    assert message_keys(m) == {
        "check.other_sizes",
        "check.values",
        "likely.scale_d",
        "likely.hardcoded",
    }
    ok = {s: StepResult(s, "pass", [Check("x", "pass")]) for s in CHECKED_STEPS["lab-02"]}
    verify(ok, "lab-02", {})
    bad = dict(ok, mask=StepResult("mask", "fail", [Check("values", "fail", m)]))
    verify(bad, "lab-02", {"mask": Exp("fail", "values", {"likely.scale_d"})})
    verify(
        bad,
        "lab-02",
        {"mask": Exp("fail", "values", {"likely.scale_d"}, absent={"likely.fill_zero"})},
    )
    for wrong in (
        {},
        {"mask": Exp("fail", "values", {"likely.fill_zero"})},
        {"mask": Exp("fail", "bool")},
        {"mask": Exp("error")},
        {"mask": Exp("fail", "values", absent={"likely.hardcoded"})},
    ):
        with pytest.raises(AssertionError):
            verify(bad, "lab-02", wrong)
    with pytest.raises(AssertionError):  # a "pass" with a failing check in it is not a pass
        verify(
            dict(ok, mask=StepResult("mask", "pass", [Check("values", "fail", m)])), "lab-02", {}
        )


@pytest.mark.parametrize("lesson", LESSONS)
def test_reference_passes_every_check(run, lesson):
    results = run(lesson, REFERENCE[lesson])
    assert set(results) == set(CHECKED_STEPS[lesson])
    for step, r in results.items():
        assert r.status == "pass", summary(results)
        assert r.checks, f"{step} passed without a single check"
        assert all(c.status == "pass" for c in r.checks), summary(results)
        assert r.failure is None
    # The checks that guard against the worst mistakes ran, and passed.
    ids = {step: {c.id for c in r.checks} for step, r in results.items()}
    if lesson == "lm3-l3":
        assert {
            "future-is-zero",
            "matches-pytorch",
            "other-sizes",
            "own-formula",
            "inputs-unchanged",
        } <= ids["single-head"]
        assert {"no-leak", "other-sizes"} <= ids["leakage"]
        assert {
            "no-leak",
            "matches-pytorch",
            "parameters",
            "heads-share-parameters",
            "other-sizes",
            "own-formula",
        } <= ids["multi-head"]
        assert {"values", "tuples", "other-sizes"} <= ids["shapes"]
    elif lesson == "lab-02":
        assert {"values", "other-sizes", "own-formula", "inputs-unchanged", "call-again"} <= ids[
            "scores"
        ]
        assert {"bool", "values", "other-sizes", "call-again"} <= ids["mask"]
        assert {
            "future-is-zero",
            "uses-given-mask",
            "values",
            "inputs-unchanged",
            "other-sizes",
            "call-again",
        } <= ids["weights"]
        assert {
            "future-is-zero",
            "matches-pytorch",
            "other-sizes",
            "own-formula",
            "call-again",
            "reference-helpers",
        } <= ids["output"]


@pytest.mark.parametrize("lesson", LESSONS)
def test_starter_is_todo_everywhere(run, lesson):
    results = run(lesson, STARTER[lesson])
    assert set(results) == set(CHECKED_STEPS[lesson])
    for _step, r in results.items():
        assert r.status == "todo", summary(results)
        assert [(c.id, c.status, c.message.key) for c in r.checks] == [
            ("implemented", "todo", "check.todo")
        ]
        assert r.failure is not None and r.failure.kind == "NotImplementedError"


def test_todo_names_the_method_that_still_raises_not_its_class(run):
    """kv-cache's class is written but for forward_cached: the message points at that method."""
    results = run("kv-cache", STARTER["kv-cache"])
    named = {step: r.checks[0].message.params["fn"] for step, r in results.items()}
    assert named == {
        "cached-attention": "CausalMultiHeadAttention.forward_cached",
        "generate": "generate",
        "cache-discipline": "CausalMultiHeadAttention.forward_cached",
    }, named


def test_half_done_file_is_pass_then_todo(run):
    """causal_attention written, the rest still the starter's: single-head and leakage pass, the others todo."""
    source = STARTER["lm3-l3"].replace(
        '    raise NotImplementedError("single-head causal attention")\n',
        "    q, k, v = x @ Wq, x @ Wk, x @ Wv\n"
        "    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5\n"
        "    T = x.shape[1]\n"
        "    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)\n"
        "    weights = torch.softmax(scores.masked_fill(future, float('-inf')), dim=-1)\n"
        "    return weights @ v, weights\n",
    )
    assert source != STARTER["lm3-l3"]
    results = run("lm3-l3", source)
    statuses = {step: r.status for step, r in results.items()}
    assert statuses == {
        "single-head": "pass",
        "leakage": "pass",
        "multi-head": "todo",
        "shapes": "todo",
    }, summary(results)


@pytest.mark.parametrize("lesson", LESSONS)
@pytest.mark.parametrize("source", ["", "\n\n# nothing yet\n"], ids=["empty", "comment-only"])
def test_empty_file_is_missing_everywhere(run, lesson, source):
    results = run(lesson, source)
    assert set(results) == set(CHECKED_STEPS[lesson])
    for step, r in results.items():
        assert r.status == "fail", summary(results)
        assert [(c.id, c.status) for c in r.checks] == [("defined", "fail")], summary(results)
        msg = r.checks[0].message
        assert msg.key == "check.missing"
        # The name the step needs, which the message tells the learner to define: the first
        # of the step's functions in lesson.toml.
        needs = get_lesson(lesson).step(step).functions[0]
        assert msg.params.get("name") == needs


@pytest.mark.parametrize("lesson", LESSONS)
def test_syntax_error_is_an_error_with_a_caret(run, lesson):
    # A missing closing parenthesis in the middle of an otherwise correct file.
    source = learner_file(lesson, {}).rstrip("\n") + "\n\n\nbroken = (1 +\n"
    results = run(lesson, source)
    assert set(results) == set(CHECKED_STEPS[lesson])
    line = source.count("\n")
    for _step, r in results.items():
        assert r.status == "error", summary(results)
        fails = failing(r)
        assert set(fails) == {"file-loads"}, summary(results)
        assert "failure.syntax" in fails["file-loads"]
        assert r.failure is not None and r.failure.kind == "SyntaxError"
        caret = r.failure.caret
        assert caret.splitlines()[-1].strip().endswith("^"), caret
        assert "broken = (1 +" in caret
        assert f"{line:>4} |" in caret or f"{line} |" in caret, (line, caret)
        assert r.checks[0].message.params.get("line") == line


@pytest.mark.parametrize("lesson", LESSONS)
def test_syntax_error_caret_points_at_the_column(run, lesson):
    source = learner_file(lesson, {}) + "\nx = 1 +* 2\n"
    results = run(lesson, source)
    for r in results.values():
        assert r.status == "error"
        text_line, caret_line = r.failure.caret.splitlines()[-2:]
        code = text_line.split("| ", 1)[1]
        col = caret_line.split("| ", 1)[1].index("^")
        assert code == "x = 1 +* 2"
        assert code[col] == "*", (code, col)
