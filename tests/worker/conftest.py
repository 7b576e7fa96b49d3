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

from worker_kit import SessionWorker  # noqa: E402


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
