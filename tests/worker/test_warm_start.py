"""The suite's warm workers (tests/tools/warm_workers.py): a worker forked from the warm server
is a whole worker, a killed stand-in takes its worker along, and without a server the stand-in
starts the worker as in use."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest
from worker_kit import reference_statuses

from tutor.engine.client import WORKER_SCRIPT_ENV, EngineClient

ROOT = Path(__file__).resolve().parents[2]


def warm_server() -> psutil.Process:
    servers = [p for p in psutil.Process().children() if "warm_workers.py" in " ".join(p.cmdline())]
    assert len(servers) == 1, "this test process has no warm-worker server"
    return servers[0]


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


def test_a_warm_worker_is_the_servers_child_and_judges_as_a_worker_does():
    assert os.environ.get(WORKER_SCRIPT_ENV), "this test's workers are not started warm"
    server = warm_server()
    before = {p.pid for p in server.children()}
    client = EngineClient(None, timeout=15.0)
    client.start()
    try:
        assert client.ready.wait(60)
        workers = [p for p in server.children() if p.pid not in before]
        assert len(workers) == 1
        assert not psutil.Process(client.proc.pid).children()  # the stand-in only waits
        results = reference_statuses(client, "lab-02")
        assert results and set(results.values()) == {"pass"}, results
    finally:
        client.close()
    assert client.proc.returncode == 0
    assert gone_within(workers[0].pid, 10)


def test_a_killed_stand_in_takes_its_worker_along():
    server = warm_server()
    before = {p.pid for p in server.children()}
    client = EngineClient(None, timeout=15.0)
    client.start()
    assert client.ready.wait(60)
    (worker,) = [p for p in server.children() if p.pid not in before]
    os.kill(client.proc.pid, signal.SIGKILL)
    client.proc.wait()
    assert gone_within(worker.pid, 10)


def test_without_a_server_the_stand_in_starts_the_worker_as_in_use(monkeypatch):
    monkeypatch.delenv("ATTN_TUTOR_WARM_SOCKET", raising=False)
    client = EngineClient(None, timeout=15.0)
    client.start()
    try:
        assert client.ready.wait(60)
        # exec'd into the worker itself: the client's own child runs the supervisor
        assert "tutor.engine.supervisor" in " ".join(psutil.Process(client.proc.pid).cmdline())
        assert set(reference_statuses(client, "lab-02").values()) == {"pass"}
    finally:
        client.close()


@pytest.fixture(autouse=True)
def _warm(monkeypatch):
    monkeypatch.setenv(WORKER_SCRIPT_ENV, str(ROOT / "tests" / "tools" / "worker_standin.py"))
