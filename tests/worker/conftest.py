"""One real check worker for the whole session (see worker_kit.SessionWorker).

Starting a worker costs a torch import (~2.5 s), so every test in this folder shares
one: `run(lesson, source)` submits a file and waits for the "done" event of that
generation, then returns {step_id: StepResult}. No mocks: the worker forks a child
per step that runs the learner file, and the judge process gives the verdicts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from worker_kit import STEP_TIMEOUT, SessionWorker  # noqa: E402

UNHURRIED_TIMEOUT = STEP_TIMEOUT * 4


@pytest.fixture(scope="session")
def session_worker():
    sw = SessionWorker()
    sw.start()
    try:
        yield sw
    finally:
        sw.close()


@pytest.fixture(scope="session")
def run(session_worker):
    """run(lesson, source) -> {step_id: StepResult}, through the one session worker."""
    return session_worker.run


@pytest.fixture(scope="session")
def run_unwatched():
    """run_unwatched(lesson, source): as `check` and `grade` run a file, without views; the judge
    waits for the lesson's mutants where a diagnosis from behaviour needs them."""
    sw = SessionWorker(views=False)
    sw.start()
    try:
        yield sw.run
    finally:
        sw.close()


@pytest.fixture(scope="session")
def run_unhurried():
    """run_unhurried(lesson, source, views=True): the same, on a worker of its own whose step limit
    no busy machine reaches, started on first use. For files whose verdict is the subject and
    whose cost is torch's, not theirs (torch.compile's first call, flex_attention's eager path):
    on two cores under xdist they can pass the 15 s limit and turn a verdict into a timeout."""
    workers: dict[bool, SessionWorker] = {}

    def run(lesson: str, source: str, views: bool = True):
        if views not in workers:
            workers[views] = SessionWorker(views=views, timeout=UNHURRIED_TIMEOUT)
            workers[views].start()
        return workers[views].run(lesson, source)

    yield run
    for worker in workers.values():
        worker.close()
