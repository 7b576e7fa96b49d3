"""The batch loop (tutor.grade.run.Batch) against a stand-in for the worker: every file sent
is graded exactly once, however the worker's events interleave with the loop. The real
worker's Done for the last file could land between the loop's look at what had finished and
its test for what was still running: that file was dropped (1 run in 8 of a 6-file shard)."""

from __future__ import annotations

import sys
import threading

import pytest

from tutor.grade import run as batch_run
from tutor.grade.collect import Submission
from tutor.lesson import get_lesson
from tutor.results import Check, StepResult
from tutor.runner.messages import Done, StepVerdict

LESSON = get_lesson("lm3-l3")


class InstantWorker:
    """Answers each run at once, from its own thread, as the worker's reader thread does."""

    def __init__(self, on_event, **_):
        self.on_event, self.gen = on_event, 0

    def start(self):
        pass

    def submit(self, lesson, filename, source, steps, params=None):
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
    monkeypatch.setattr(batch_run, "Worker", InstantWorker)
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
