"""How the worker splits a shared child's output between its steps (worker.keep_output /
take_output): the child writes a marker, MAGIC and the step's token, after each step's output."""

from __future__ import annotations

import os

import pytest

from tutor.engine.codec import MAGIC, FrameReader
from tutor.engine.supervisor import OUTPUT_TAIL, Job, Worker

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


def take_all(worker: Worker, job: Job, stream: bytes, chunk: int) -> list[tuple[str, int]]:
    for at in range(0, len(stream), chunk):
        worker.keep_output(job, stream[at : at + chunk])
    got = []
    for index in range(len(job.steps)):
        job.index = index
        got.append(worker.take_output(job))
    return got


@pytest.mark.parametrize("chunk", [1, 2, 5, 13, 28, 29, 30, 1000])
def test_each_step_gets_what_it_printed_however_the_reads_cut_the_stream(chunk):
    worker = Worker.__new__(Worker)  # only the output methods: no judge, no children
    stream = b"one\n" + MAGIC + TOKENS[0] + b"two\n" + MAGIC + TOKENS[1] + b"three\n"
    assert take_all(worker, make_job(), stream, chunk) == [
        ("one\n", 0),
        ("two\n", 0),
        ("three\n", 0),
    ]


def test_a_step_that_floods_keeps_its_tail_and_the_count_of_what_was_dropped():
    worker = Worker.__new__(Worker)
    stream = b"x" * (OUTPUT_TAIL + 500) + MAGIC + TOKENS[0] + b"quiet" + MAGIC + TOKENS[1]
    first, second, third = take_all(worker, make_job(), stream, 4096)
    assert first == (
        "x" * OUTPUT_TAIL,
        500,
    )  # the count is data: the UI words it in the learner's language
    assert second == ("quiet", 0) and third == ("", 0)


@pytest.mark.parametrize("chunk", [1000, OUTPUT_TAIL, OUTPUT_TAIL + 1, 1 << 20])
def test_a_flood_read_in_big_chunks_keeps_the_tail_and_finds_the_markers(chunk):
    # Reads as large as the pipe (see worker.READ_SIZE): a marker may sit anywhere in one.
    worker = Worker.__new__(Worker)
    first = b"a" * 3_000_000 + b"end of one"
    second = b"b" * 2_000_001 + b"end of two"
    stream = first + MAGIC + TOKENS[0] + second + MAGIC + TOKENS[1] + b"three"
    (one, lost1), (two, lost2), three = take_all(worker, make_job(), stream, chunk)
    assert one == first[-OUTPUT_TAIL:].decode() and lost1 == len(first) - OUTPUT_TAIL
    assert two == second[-OUTPUT_TAIL:].decode() and lost2 == len(second) - OUTPUT_TAIL
    assert three == ("three", 0)


def test_without_a_marker_all_output_so_far_goes_to_the_step_that_ended():
    # The learner's code closed the fd the child writes markers to.
    worker = Worker.__new__(Worker)
    job = make_job()
    worker.keep_output(job, b"printed by step 0 and some of step 1")
    job.index = 0
    assert worker.take_output(job) == ("printed by step 0 and some of step 1", 0)
    worker.keep_output(job, b"later")
    job.index = 1
    assert worker.take_output(job) == ("later", 0)


def test_after_the_last_marker_nothing_is_kept_for_steps_handed_elsewhere():
    # A hedged job: only its first step is still its own; the child runs on until killed.
    worker = Worker.__new__(Worker)
    job = make_job(TOKENS[:1])
    worker.keep_output(job, b"mine" + MAGIC + TOKENS[0] + b"step 1, judged from another child")
    assert worker.take_output(job) == ("mine", 0)
