"""One check worker per test process for the experiment tests (worker_kit.SessionWorker, with
views, as the app runs a step on screen), started on first use: each check_source call started
a worker of its own (25 in these two modules). conftest.py closes it at the session's end."""

from __future__ import annotations

from worker_kit import SessionWorker

from tutor.model.results import StepResult

TIMEOUT = 10.0  # the step limit the tests used with check_source


class SharedWorker:
    def __init__(self) -> None:
        self.worker: SessionWorker | None = None

    def run(self, lesson, filename, source, steps, params=None) -> dict[str, StepResult]:
        if self.worker is None:
            self.worker = SessionWorker(timeout=TIMEOUT)
            self.worker.start()
        return self.worker.run_steps(lesson, filename, source, steps, params)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()


SHARED = SharedWorker()
