"""How the worker splits a shared child's output between its steps (output_capture.keep_output
/ take_output): the child writes a marker, MAGIC and the step's token, after each step's output."""

from __future__ import annotations

import os

import pytest

from tutor.engine.codec import MAGIC, FrameReader
from tutor.engine.jobs import Job
from tutor.engine.output_capture import OUTPUT_TAIL, keep_output, take_output

TOKENS = [os.urandom(16) for _ in range(3)]


def make_job(tokens=TOKENS) -> Job:
    steps = [f"step{i}" for i in range(len(tokens))]
    return Job(
        0,
        1,
        "lm3-l3",
        steps,
        list(tokens),
        "",
        "f.py",
        {},
        0,
        -1,
        -1,
        0.0,
        0.0,
        0.0,
        3.0,
        FrameReader(tokens[0]),
        0,
    )


def take_all(job: Job, stream: bytes, chunk: int) -> list[tuple[str, int]]:
    for at in range(0, len(stream), chunk):
        keep_output(job, stream[at : at + chunk])
    got = []
    for index in range(len(job.steps)):
        job.index = index
        got.append(take_output(job))
    return got


@pytest.mark.parametrize("chunk", [1, 2, 5, 13, 28, 29, 30, 1000])
def test_each_step_gets_what_it_printed_however_the_reads_cut_the_stream(chunk):
    stream = b"one\n" + MAGIC + TOKENS[0] + b"two\n" + MAGIC + TOKENS[1] + b"three\n"
    assert take_all(make_job(), stream, chunk) == [
        ("one\n", 0),
        ("two\n", 0),
        ("three\n", 0),
    ]


def test_a_step_that_floods_keeps_its_tail_and_the_count_of_what_was_dropped():
    stream = b"x" * (OUTPUT_TAIL + 500) + MAGIC + TOKENS[0] + b"quiet" + MAGIC + TOKENS[1]
    first, second, third = take_all(make_job(), stream, 4096)
    assert first == (
        "x" * OUTPUT_TAIL,
        500,
    )  # the count is data: the UI words it in the learner's language
    assert second == ("quiet", 0) and third == ("", 0)


@pytest.mark.parametrize("chunk", [1000, OUTPUT_TAIL, OUTPUT_TAIL + 1, 1 << 20])
def test_a_flood_read_in_big_chunks_keeps_the_tail_and_finds_the_markers(chunk):
    # Reads as large as the pipe (see output_capture.READ_SIZE): a marker may sit anywhere in one.
    first = b"a" * 3_000_000 + b"end of one"
    second = b"b" * 2_000_001 + b"end of two"
    stream = first + MAGIC + TOKENS[0] + second + MAGIC + TOKENS[1] + b"three"
    (one, lost1), (two, lost2), three = take_all(make_job(), stream, chunk)
    assert one == first[-OUTPUT_TAIL:].decode() and lost1 == len(first) - OUTPUT_TAIL
    assert two == second[-OUTPUT_TAIL:].decode() and lost2 == len(second) - OUTPUT_TAIL
    assert three == ("three", 0)


def test_without_a_marker_all_output_so_far_goes_to_the_step_that_ended():
    # The learner's code closed the fd the child writes markers to.
    job = make_job()
    keep_output(job, b"printed by step 0 and some of step 1")
    job.index = 0
    assert take_output(job) == ("printed by step 0 and some of step 1", 0)
    keep_output(job, b"later")
    job.index = 1
    assert take_output(job) == ("later", 0)


def test_after_the_last_marker_nothing_is_kept_for_steps_handed_elsewhere():
    # A hedged job: only its first step is still its own; the child runs on until killed.
    job = make_job(TOKENS[:1])
    keep_output(job, b"mine" + MAGIC + TOKENS[0] + b"step 1, judged from another child")
    assert take_output(job) == ("mine", 0)
