"""One check worker per test process for the experiment tests, as `check` runs a file but
without a torch import per test (each check_source started a worker of its own: 25 in these
two modules). conftest.py closes it at the session's end."""

from __future__ import annotations

import threading

from tutor.engine.client import EngineClient, WorkerGone
from tutor.engine.protocol import Done, Gone, StepVerdict
from tutor.model.results import StepResult

TIMEOUT = 10.0  # the step limit the tests used with check_source
RUN_TIMEOUT = 120.0


class SharedWorker:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[int, dict[str, StepResult]] = {}
        self._done: dict[int, threading.Event] = {}
        self._gone: list[Gone] = []
        self.worker: EngineClient | None = None

    def _event(self, gen: int) -> threading.Event:
        with self._lock:
            return self._done.setdefault(gen, threading.Event())

    def _on_event(self, event) -> None:
        if isinstance(event, StepVerdict):
            with self._lock:
                self._results.setdefault(event.gen, {})[event.result.id] = event.result
        elif isinstance(event, Done):
            self._event(event.gen).set()
        elif isinstance(event, Gone):
            self._gone.append(event)
            with self._lock:
                for done in self._done.values():
                    done.set()

    def run(self, lesson, filename, source, steps, params=None) -> dict[str, StepResult]:
        """{step id: result} for these steps of the file, with views, as the app runs them."""
        if self.worker is None:
            self.worker = EngineClient(self._on_event, timeout=TIMEOUT)
            self.worker.start()
            if not self.worker.ready.wait(60):
                raise WorkerGone("the check worker did not become ready")
        if self._gone:
            raise WorkerGone(f"the check worker ended: {self._gone[0]}")
        gen = self.worker.submit(lesson, filename, source, steps, params)
        if not self._event(gen).wait(RUN_TIMEOUT):
            raise TimeoutError(f"no 'done' for generation {gen} within {RUN_TIMEOUT} s")
        if self._gone:
            raise WorkerGone(f"the check worker ended: {self._gone[0]}")
        with self._lock:
            return self._results.pop(gen, {})

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()


SHARED = SharedWorker()
