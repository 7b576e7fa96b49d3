"""The batch loop (tutor.grade.run.Batch) against a stand-in for the worker: every file sent
is graded exactly once, however the worker's events interleave with the loop. The real
worker's Done for the last file could land between the loop's look at what had finished and
its test for what was still running: that file was dropped (1 run in 8 of a 6-file shard)."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from tutor.engine.protocol import Done, Gone, StepVerdict
from tutor.grade import run as batch_run
from tutor.grade.collect import Submission
from tutor.model.lesson import get_lesson
from tutor.model.results import Check, StepResult

LESSON = get_lesson("lm3-l3")


class InstantWorker:
    """Answers each run at once, from its own thread, as the worker's reader thread does."""

    def __init__(self, on_event, **_):
        self.on_event, self.gen = on_event, 0

    def start(self):
        pass

    def submit(self, lesson, filename, source, steps, params=None, folder=None):
        self.gen += 1
        gen = self.gen

        def answer():
            for step in steps:
                self.on_event(StepVerdict(gen, StepResult(step, "pass", [Check("runs", "pass")])))
            self.on_event(Done(gen))

        threading.Thread(target=answer).start()
        return gen

    def close(self):
        pass


@pytest.fixture
def often_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the threads swap at almost every bytecode: the race shows
    yield
    sys.setswitchinterval(old)


def test_every_file_is_graded_once_however_the_events_interleave(
    tmp_path, monkeypatch, often_switching
):
    monkeypatch.setattr(batch_run, "EngineClient", InstantWorker)
    files = []
    for i in range(4):
        path = tmp_path / f"s{i}.py"
        path.write_text("x = 1\n", encoding="utf-8")
        files.append(Submission(f"s{i}", path))
    for _ in range(300):
        graded = []
        batch_run.Batch(LESSON, timeout=3.0, jobs=2).grade(
            files, lambda sub, raw, steps, s, graded=graded: graded.append(sub.student)
        )
        assert sorted(graded) == [f.student for f in files]


class DyingWorker(InstantWorker):
    """Ends (Gone) whenever it is given the attacker's file, as a worker a file killed would;
    other files are answered a little later, so they are in flight when it dies."""

    def submit(self, lesson, filename, source, steps, params=None, folder=None):
        self.gen += 1
        gen = self.gen
        if "attacker" in filename:
            threading.Thread(target=lambda: self.on_event(Gone(1))).start()
            return gen

        def answer():
            time.sleep(0.05)
            for step in steps:
                self.on_event(StepVerdict(gen, StepResult(step, "pass", [Check("runs", "pass")])))
            self.on_event(Done(gen))

        threading.Thread(target=answer).start()
        return gen


@pytest.mark.parametrize("attacker", ["aa_attacker", "zz_attacker"])
def test_a_file_that_kills_the_worker_costs_only_itself(tmp_path, monkeypatch, attacker):
    """Sorted first or last: the batch goes on, every other file (those in flight beside it
    too) is graded in full, and the attacker alone is said to be unjudgeable."""
    from tutor.grade.record import status_of

    monkeypatch.setattr(batch_run, "EngineClient", DyingWorker)
    names = sorted([attacker, "s1", "s2", "s3"])
    files = []
    for name in names:
        path = tmp_path / f"{name}.py"
        path.write_text("x = 1\n", encoding="utf-8")
        files.append(Submission(name, path))
    graded = {}

    def on_graded(sub, raw, steps, seconds):
        assert sub.student not in graded
        graded[sub.student] = steps

    batch_run.Batch(LESSON, timeout=3.0, jobs=2).grade(files, on_graded)
    assert sorted(graded) == names
    expected = [s.id for s in LESSON.checked_steps]
    for name in names:
        steps = graded[name]
        assert [s.id for s in steps] == expected
        if name == attacker:
            assert all(s.status == "error" and s.failure.kind == "unjudged" for s in steps)
            assert status_of(steps, expected) == "error"
        else:
            assert all(s.status == "pass" for s in steps), (name, steps)
            assert status_of(steps, expected) == "graded"


def test_graded_means_every_step_was_judged():
    from tutor.grade.record import status_of
    from tutor.model.results import Message

    expected = [s.id for s in LESSON.checked_steps]
    passing = [StepResult(s, "pass", [Check("runs", "pass")]) for s in expected]
    assert status_of(passing, expected) == "graded"
    assert status_of(passing[:-1], expected) == "error"  # a step without a verdict
    unjudged = StepResult(
        expected[0], "error", [Check("judge", "error", Message("failure.judge", {"detail": "x"}))]
    )
    assert status_of([unjudged, *passing[1:]], expected) == "error"
