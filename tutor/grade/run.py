"""Grading many files through one warm worker, `jobs` of them at a time. Imports no torch.

The worker (tutor.engine.supervisor) runs each file in a child of its own, under the same limits
as in the app; `keep` runs (client.EngineClient(keep=True)) run side by side instead of the newer
superseding the older. A hang, crash, memory bomb or flood is that child's: its file gets a
timeout or an error, the others go on. Should the worker itself die (a tutor bug, never a
learner's file), the files it held are graded again in a new one, each alone; a file that
takes that one down too is the only one said to be unjudgeable (Batch._restart).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tutor.engine.client import EngineClient, unreadable_results
from tutor.engine.protocol import Done, Gone, RunError, StepVerdict
from tutor.grade.collect import Submission, read_no_link
from tutor.model.results import StepResult
from tutor.workspace.learner_file import LearnerText, learner_text, placed

# A run whose Done has not come this long after every step's limit: the worker lost it.
LOST_AFTER = 30.0


@dataclass
class _Run:
    sub: Submission
    raw: bytes
    learner: LearnerText
    started: float
    results: dict[str, StepResult] = field(default_factory=dict)
    tries: int = 1
    alone: bool = False  # sent again after a worker's death: no other file runs beside it


def default_jobs() -> int:
    # A run per core. More did not help on 2 cores (200 files: 8.9 s with 2, 12.2 s with 3,
    # 13.6 s with 4): the worker's forks and the judge already take the slack.
    return os.cpu_count() or 1


def read_submission(sub: Submission) -> tuple[bytes | None, str | None, tuple | None]:
    """(raw, source, problem): problem, a (key, params) for a file that cannot be run at all
    (unreadable, not UTF-8, not a notebook): it is graded without a child."""
    raw, learner, problem = read_learner(sub)
    return raw, None if learner is None else learner.text, problem


def read_learner(sub: Submission) -> tuple[bytes | None, LearnerText | None, tuple | None]:
    """As read_submission, with the places of a notebook's lines."""
    if sub.path is None:
        return None, None, None
    raw, problem = read_no_link(sub)  # a symbolic link is not followed
    if raw is None:
        return None, None, problem
    learner = learner_text(sub.path, raw)  # read all the same: its record keeps the file's hash
    if learner.text is None:
        return raw, None, learner.problem
    return raw, learner, None


class Batch:
    """Grades submissions; on_graded(sub, raw, steps, seconds) is called on the caller's
    thread, in the order the files finish."""

    def __init__(self, lesson, timeout: float, jobs: int, seed: int = 0):
        self.lesson = lesson
        self.timeout = timeout
        self.jobs = max(1, jobs)
        self.seed = seed
        self.order = [s.id for s in lesson.checked_steps]
        self._cond = threading.Condition()
        self._runs: dict[int, _Run] = {}  # gen -> run in flight
        self._finished: list[tuple[_Run, list[StepResult]]] = []
        self._gone = False
        self._tries: dict[str, int] = {}  # student -> runs sent (a worker's death sends again)
        self.worker: EngineClient | None = None
        self._serial = 0  # the worker now in use: events of one closed before are dropped

    # --- the worker

    def _start(self) -> None:
        # No one looks at a graded run's views: the probes and judges skip them (see tutor.kit).
        with self._cond:
            self._serial += 1
            serial = self._serial
            self._gone = False
        self.worker = EngineClient(
            lambda event: self._on_event(event, serial),
            timeout=self.timeout,
            keep=True,
            seed=self.seed,
            views=False,
        )
        self.worker.start()

    def _on_event(self, event, serial: int = 0) -> None:  # the reader thread
        with self._cond:
            if serial != self._serial:
                return  # a worker already given up: its gens are not this one's
            if isinstance(event, StepVerdict):
                run = self._runs.get(event.gen)
                if run is not None:
                    run.results[event.result.id] = event.result
            elif isinstance(event, (Done, RunError)):
                run = self._runs.pop(event.gen, None) if isinstance(event, Done) else None
                if run is not None:
                    steps = [run.results[s] for s in self.order if s in run.results]
                    self._finished.append((run, placed(steps, run.learner, self.lesson)))
            elif isinstance(event, Gone):
                self._gone = True
            self._cond.notify_all()

    def _submit(self, run: _Run) -> None:
        with self._cond:  # held so that no event of this gen comes before it is known
            assert self.worker is not None  # the caller started one
            assert run.learner.text is not None  # a file without a text is graded without a run
            folder = run.sub.folder
            gen = self.worker.submit(
                self.lesson.id,
                str(run.sub.path),
                run.learner.text,
                self.order,
                folder=None if folder is None else str(folder),
            )
            run.started = time.monotonic()
            self._runs[gen] = run

    # --- the batch

    def grade(
        self,
        submissions: list[Submission],
        on_graded: Callable,
        should_stop: Callable[[], bool] = lambda: False,
    ):
        queue = list(submissions)
        try:
            while queue or self._pending():
                if should_stop():
                    return
                # Files that need no child are graded at once, in order. A file sent again after
                # a worker's death runs alone: should the worker die again, that file was why.
                while queue and len(self._runs) < self.jobs:
                    sub = queue[0]
                    alone = self._tries.get(sub.student, 0) > 0
                    with self._cond:  # the reader thread pops finished runs from _runs
                        busy = list(self._runs.values())
                    if busy and (alone or any(r.alone for r in busy)):
                        break
                    queue.pop(0)
                    raw, learner, instead = read_learner(sub)
                    if learner is None:
                        steps = [] if instead is None else unreadable_results(self.lesson, *instead)
                        on_graded(sub, raw, steps, 0.0)
                        continue
                    if self.worker is None:
                        self._start()
                    assert raw is not None  # a file with a source was read
                    self._submit(
                        _Run(
                            sub,
                            raw,
                            learner,
                            time.monotonic(),
                            tries=self._tries.get(sub.student, 0) + 1,
                            alone=alone,
                        )
                    )
                    if alone:
                        break
                with self._cond:
                    if not self._finished and not self._gone and self._runs:
                        self._cond.wait(timeout=0.5)
                    finished, self._finished = self._finished, []
                    gone = self._gone
                for run, steps in finished:
                    on_graded(run.sub, run.raw, steps, time.monotonic() - run.started)
                if gone or self._lost():
                    queue[:0] = self._restart()
        finally:
            if self.worker is not None:
                self.worker.close()

    def _pending(self) -> bool:
        """Runs in flight, or finished and not yet handed on. Asked under the lock: the reader
        thread moves a run from one to the other, and a Done landing between two unlocked looks
        dropped that file."""
        with self._cond:
            return bool(self._runs or self._finished)

    def _lost(self) -> bool:
        limit = self.timeout * len(self.order) + LOST_AFTER
        now = time.monotonic()
        with self._cond:
            return any(now - run.started > limit for run in self._runs.values())

    def _restart(self) -> list[Submission]:
        """The worker died or lost a run: the files in flight go again, each alone (a file that
        ran beside the cause is never charged for it); one that takes a worker down again while
        it runs alone is said to be unjudgeable. The next file starts a new worker."""
        with self._cond:
            runs, self._runs = list(self._runs.values()), {}
            self._gone = False
            self._serial += 1  # whatever the old worker still says is not for the new one
        if self.worker is not None:
            self.worker.close()
        self.worker = None
        again = []
        for run in runs:
            self._tries[run.sub.student] = run.tries
            if not run.alone:
                again.append(run.sub)
            else:
                with self._cond:
                    self._finished.append((run, unjudged(self.lesson)))
        return again


def unjudged(lesson) -> list[StepResult]:
    """A file that took the worker down when it ran alone: the tutor could not judge it."""
    from tutor.model.results import Check, Failure, Message

    return [
        StepResult(
            s.id,
            "error",
            [Check("file-loads", "error", Message("failure.unjudged", {"what": "worker"}))],
            Failure("unjudged", "worker"),
        )
        for s in lesson.checked_steps
    ]
