"""A learner's file past client.MAX_SOURCE_BYTES is said at once, with its size and the limit,
in check, grade and the app alike (issue 23, class 9): no child, no worker."""

from __future__ import annotations

import time

from tutor.engine.client import MAX_SOURCE_BYTES, check_file, size_text, too_large
from tutor.grade.collect import Submission
from tutor.grade.run import read_submission
from tutor.model.lesson import get_lesson
from tutor.text import i18n

LESSON = get_lesson("lm3-l3")
BIG = b"# " + b"comment " * (MAX_SOURCE_BYTES // 8) + b"\n"


def test_the_limit_is_far_above_any_solution():
    assert MAX_SOURCE_BYTES >= 1 << 20
    for lesson in ("lm3-l3", "kv-cache"):
        reference = get_lesson(lesson).reference_path.read_bytes()
        assert too_large(len(reference)) is None and len(reference) * 50 < MAX_SOURCE_BYTES


def test_sizes_read_as_people_write_them():
    assert size_text(MAX_SOURCE_BYTES) == "1 MiB"
    assert size_text(104 << 20) == "104 MiB"
    assert size_text(int(2.5 * (1 << 20))) == "2.5 MiB"
    assert size_text(12) == "12 bytes"


def test_check_says_a_file_too_large_at_once_in_every_step(tmp_path):
    path = tmp_path / "lm3_l3.py"
    path.write_bytes(BIG)
    start = time.monotonic()
    steps = check_file(LESSON, path, BIG)
    assert time.monotonic() - start < 1  # no worker was started for it
    assert [s.id for s in steps] == [s.id for s in LESSON.checked_steps]
    for step in steps:
        assert step.status == "error"
        message = step.checks[0].message
        assert message.key == "failure.too_large"
        for lang in i18n.LANGS:
            text = i18n.t(message.key, lang, **message.params)
            assert size_text(len(BIG)) in text and "1 MiB" in text


def test_grade_says_so_without_a_run(tmp_path):
    path = tmp_path / "lm3_l3.py"
    path.write_bytes(BIG)
    raw, source, problem = read_submission(Submission("s1", path))
    assert raw == BIG and source is None
    assert problem[0] == "failure.too_large" and problem[1]["limit"] == "1 MiB"
