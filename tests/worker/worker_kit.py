"""Helpers for the worker tests: one session worker, learner files built from the
reference solutions, and readers for verdicts. Imported by the tests in this folder.
"""

from __future__ import annotations

import json
import os
import threading
import zlib
from pathlib import Path

import pytest

from tutor.engine.client import EngineClient, WorkerGone
from tutor.model.lesson import all_lessons
from tutor.model.mistakes import Expect, failing, unmet  # noqa: F401  (failing: for tests)
from tutor.model.results import StepResult
from tutor.model.variants import apply_replacements, message_keys, replace_def, replace_method  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]

# Every lesson, by data: a new lesson gets these tests without a line here.
LESSONS = all_lessons()
REFERENCE = {lesson.id: lesson.reference_path.read_text(encoding="utf-8") for lesson in LESSONS}
STARTER = {lesson.id: lesson.starter_path.read_text(encoding="utf-8") for lesson in LESSONS}
FILENAME = {lesson.id: f"/tmp/attn-lab/{lesson.file_name}" for lesson in LESSONS}
# The lessons' checked steps, as the lesson model lists them (experiments are not judged).
CHECKED_STEPS = {lesson.id: tuple(s.id for s in lesson.checked_steps) for lesson in all_lessons()}
# Per step: generous, so a busy 2-core machine never turns a verdict into a timeout.
STEP_TIMEOUT = 15.0
RUN_TIMEOUT = 60.0


def shared_run(key: str):
    """An xdist group for a corpus file: the tests that run the same file (the mistakes' own
    test, the views-off comparison) run in one process, so its session worker's cache checks
    the file once for both. Six groups keep the two processes' loads even."""
    return pytest.mark.xdist_group(f"corpus-{zlib.crc32(key.encode()) % 6}")


class SessionWorker:
    def __init__(self, views: bool = True, timeout: float = STEP_TIMEOUT):
        self._lock = threading.Lock()
        self._results: dict[int, dict[str, StepResult]] = {}
        self._done: dict[int, threading.Event] = {}
        self._gone: list[dict] = []
        self._cache: dict[tuple[str, str], dict[str, StepResult]] = {}
        self.runs = 0  # files actually sent to the worker
        self.worker = EngineClient(self._on_event, timeout=timeout, views=views)

    def _event_for(self, gen: int) -> threading.Event:
        with self._lock:
            return self._done.setdefault(gen, threading.Event())

    def _on_event(self, event) -> None:
        kind = event.type
        if kind == "step":
            with self._lock:
                self._results.setdefault(event.gen, {})[event.result.id] = event.result
        elif kind == "done":
            self._event_for(event.gen).set()
        elif kind == "gone":
            self._gone.append(event)
            with self._lock:
                for ev in self._done.values():
                    ev.set()

    def start(self) -> None:
        self.worker.start()
        if not self.worker.ready.wait(60):
            raise WorkerGone("the check worker did not become ready")

    def run(self, lesson: str, source: str) -> dict[str, StepResult]:
        """Verdicts for one file; a file already checked this session is not run again."""
        key = (lesson, source)
        if key not in self._cache:
            self._cache[key] = self._run(lesson, source)
        return self._cache[key]

    def run_steps(
        self, lesson: str, filename: str, source: str, steps: list[str], params=None
    ) -> dict[str, StepResult]:
        """{step id: result} for these steps of one file (with their settings), never cached."""
        if self._gone:
            raise WorkerGone(f"the check worker ended: {self._gone[0]}")
        gen = self.worker.submit(lesson, filename, source, steps, params)
        done = self._event_for(gen)
        if not done.wait(RUN_TIMEOUT):
            raise TimeoutError(f"no 'done' for generation {gen} within {RUN_TIMEOUT} s")
        if self._gone:
            raise WorkerGone(f"the check worker ended: {self._gone[0]}")
        with self._lock:
            self._done.pop(gen, None)
            return self._results.pop(gen, {})

    def _run(self, lesson: str, source: str) -> dict[str, StepResult]:
        self.runs += 1
        results = self.run_steps(lesson, FILENAME[lesson], source, list(CHECKED_STEPS[lesson]))
        assert set(results) == set(CHECKED_STEPS[lesson]), f"steps reported: {sorted(results)}"
        _harvest(lesson, results)
        return results

    def close(self) -> None:
        self.worker.close()


def reference_statuses(client: EngineClient, lesson: str) -> dict[str, str]:
    """The lesson's reference run once through a started client: each step's status, once the
    run is done (or the worker gone). For tests of how a worker starts, not of verdicts."""
    statuses: dict[str, str] = {}
    done = threading.Event()

    def on_event(event) -> None:
        if event.type == "step":
            statuses[event.result.id] = event.result.status
        elif event.type in ("done", "gone"):
            done.set()

    client.attach(on_event)
    client.submit(lesson, FILENAME[lesson], REFERENCE[lesson])
    assert done.wait(RUN_TIMEOUT)
    return statuses


def _harvest(lesson: str, results: dict[str, StepResult]) -> None:
    """With ATTN_TUTOR_HARVEST=<file>: each failing check's message, as the judge made it, one
    JSON line each (tests/tools/harvest_messages.py joins them into the messages that
    tests/unit/test_every_message.py renders)."""
    path = os.environ.get("ATTN_TUTOR_HARVEST")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        for r in results.values():
            d = r.to_dict()
            for c in d["checks"]:
                if c["status"] != "pass" and c["message"]:
                    line = {"lesson": lesson, "step": r.id, "check": c["id"], **c}
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")


# ------------------------------------------------------------------ building learner files


def learner_file(lesson: str, replacements: dict[str, str], extra_header: str = "") -> str:
    """The reference solution with some top-level defs replaced.

    Keys are top-level names, or "Class.method" for one method. extra_header goes
    after the reference's imports (for an extra import a wrong version needs).
    """
    source = apply_replacements(REFERENCE[lesson], replacements, extra_header)
    compile(source, FILENAME[lesson], "exec")  # a test's own typo must not pass as a learner's
    return source


# ------------------------------------------------------------------ reading verdicts


def summary(results: dict[str, StepResult]) -> str:
    """A readable account of a run, for assertion messages."""
    out = []
    for sid, r in results.items():
        out.append(f"{sid}: {r.status}")
        for c in r.checks:
            if c.status != "pass":
                params = c.message.params if c.message else {}
                out.append(f"    {c.id} {c.status} {c.message.key if c.message else ''} {params}")
        if r.failure:
            out.append(f"    failure {r.failure.kind}: {r.failure.detail[:200]}")
    return "\n".join(out)


def Exp(  # noqa: N802  (read as a value in the tables: Exp("fail", "check", keys))
    status: str, check: str | None = None, keys=(), kind: str | None = None, absent=()
) -> Expect:
    """What one step of a run must give (tutor.model.mistakes.Expect, as lessons' mistakes say it)."""
    return Expect(status, check, frozenset(keys), kind, frozenset(absent))


PASS = Exp("pass")


def error(kind: str | None = None) -> Expect:
    """The learner's code raised at the notebook's own sizes: the honest verdict is an error."""
    return Exp("error", "runs", {"failure.exception"}, kind)


def verify(results: dict[str, StepResult], lesson: str, expect: dict[str, Expect]) -> None:
    """Every step in expect as described; every other checked step passes, every check of it."""
    problems = unmet(results, CHECKED_STEPS[lesson], expect)
    assert not problems, "\n".join(problems) + "\n" + summary(results)
