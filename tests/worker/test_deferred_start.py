"""The app starts the worker with defer=True: torch's import waits for go() (sent after the
first screen) or for a run, at most worker.GO_WAIT. No way may leave a save unjudged."""

from __future__ import annotations

import threading

from worker_kit import FILENAME, REFERENCE

from tutor.engine import supervisor as worker_module
from tutor.engine.client import EngineClient

RUN_TIMEOUT = 60.0


def run_deferred(go: bool, wait_ready: bool) -> dict:
    results, done = {}, threading.Event()

    def on_event(event):
        if event.type == "step":
            results[event.result.id] = event.result.status
        elif event.type in ("done", "gone"):
            done.set()

    w = EngineClient(on_event, timeout=15.0)
    w.start(defer=True)
    try:
        if go:
            w.go()
        if wait_ready:
            assert w.ready.wait(RUN_TIMEOUT), "the worker never got ready"
        w.submit("lm3-l3", FILENAME["lm3-l3"], REFERENCE["lm3-l3"], ["single-head"])
        assert done.wait(RUN_TIMEOUT)
        return results
    finally:
        w.close()


def test_a_deferred_worker_starts_on_go():
    assert run_deferred(go=True, wait_ready=True) == {"single-head": "pass"}


def test_a_deferred_worker_that_never_hears_go_starts_by_itself():
    # An app that hangs before its first screen must not leave the worker waiting for ever.
    assert worker_module.GO_WAIT <= 1.0
    assert run_deferred(go=False, wait_ready=True) == {"single-head": "pass"}


def test_a_run_sent_before_go_is_judged():
    # The app's first save can come before its go(): the run itself starts the import.
    assert run_deferred(go=False, wait_ready=False) == {"single-head": "pass"}
