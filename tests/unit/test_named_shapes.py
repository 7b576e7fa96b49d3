"""The kit's named shapes: a {stage: shape} answer judged against shapes measured on tensors,
each kind of wrong answer by its own check and the lesson's key for it."""

from __future__ import annotations

import pytest
import torch

from tutor.kit import NAMED_SHAPES_WORDS, Stop, Verdict, judge_named_shapes, msg, shapes_of

KEYS = {w: f"lesson.{w}" for w in NAMED_SHAPES_WORDS}
TRUTH = shapes_of(["x", "scores"], [torch.zeros(2, 3), torch.zeros(2, 3, 3)])


def judged(got) -> Verdict:
    v = Verdict()
    try:
        judge_named_shapes(v, got, TRUTH, keys=KEYS, likely=lambda k, g: msg("likely.x", stage=k))
    except Stop:
        pass
    return v


def test_the_measured_shapes_pass():
    assert TRUTH == {"x": (2, 3), "scores": (2, 3, 3)}
    v = judged({"x": (2, 3), "scores": (2, 3, 3)})
    assert v.passed() and [c.id for c in v.checks] == [
        "returns-dict",
        "all-keys",
        "tuples",
        "values",
    ]


@pytest.mark.parametrize(
    ("got", "check", "key"),
    [
        ([(2, 3)], "returns-dict", "lesson.not_dict"),
        ({"x": (2, 3)}, "all-keys", "lesson.missing"),
        ({"x": [2, 3], "scores": (2, 3, 3)}, "tuples", "lesson.type"),
        ({"x": (2, 3.0), "scores": (2, 3, 3)}, "tuples", "lesson.float"),
        ({"x": (2, 3), "scores": (2, 3, 2)}, "values", "lesson.value"),
    ],
)
def test_each_wrong_answer_fails_its_own_check(got, check, key):
    v = judged(got)
    failed = next(c for c in v.checks if c.status == "fail")
    assert (failed.id, failed.message.key) == (check, key)


def test_without_keys_the_engine_says_it_with_the_number_of_names():
    from tutor.kit import NAMED_SHAPES_KEYS
    from tutor.text.i18n import engine_catalog

    for lang in ("en", "zh"):
        assert set(NAMED_SHAPES_KEYS.values()) <= set(engine_catalog(lang))
    v = Verdict()
    with pytest.raises(Stop):
        judge_named_shapes(v, {"x": (2, 3)}, TRUTH, likely=lambda k, g: msg("likely.x"))
    bad = v.failed_message()
    assert bad["key"] == "check.shapes_missing" and bad["params"]["count"] == 2
