"""A worker with nothing to do sleeps: in the app's mode and in `grade`'s, whose pool keeps
fewer spares than the app's (an idle `grade` worker spun on select(0) at a core's half)."""

from __future__ import annotations

import time

import psutil
import pytest

from tutor.engine.client import EngineClient


def _cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


@pytest.mark.parametrize("batch", [False, True], ids=["app", "grade"])
def test_an_idle_worker_takes_no_cpu(batch):
    worker = EngineClient(None, keep=batch)
    worker.start()
    try:
        assert worker.ready.wait(60), "the worker never got ready"
        assert worker.proc is not None
        time.sleep(1.0)  # its spares forked
        before = _cpu(worker.proc.pid)
        time.sleep(2.0)
        assert _cpu(worker.proc.pid) - before < 0.2
    finally:
        worker.close()
