"""The client's side of the handshake: the worker's first event, Ready, carries its protocol
version, and a client refuses a worker that speaks another (a worker of another checkout),
with an error that says so, instead of misreading its messages."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from tutor.engine import client
from tutor.engine.client import EngineClient, ProtocolMismatch
from tutor.engine.protocol import Gone, Ready
from tutor.engine.wire import PROTOCOL_VERSION

pytestmark = pytest.mark.slow  # starts a (tiny) process in place of the worker


def fake_worker(monkeypatch, protocol: int | None) -> None:
    """`python -m tutor.engine.supervisor` replaced by a script that says it is ready, speaking
    `protocol` (None: a ready line without one, as before versions), then waits."""
    ready = {"type": "ready", "pid": 1, "off": []}
    if protocol is not None:
        ready["protocol"] = protocol
    script = f"import sys; print({json.dumps(json.dumps(ready))}, flush=True); sys.stdin.read()"
    real = subprocess.Popen
    monkeypatch.setattr(
        client.subprocess, "Popen", lambda args, **kw: real([sys.executable, "-c", script], **kw)
    )


def started(monkeypatch, protocol: int | None) -> tuple[EngineClient, list, threading.Event]:
    fake_worker(monkeypatch, protocol)
    events: list = []
    came = threading.Event()

    def on_event(event) -> None:
        events.append(event)
        came.set()

    worker = EngineClient(on_event, timeout=3.0)
    worker.start()
    assert came.wait(10), "no event from the fake worker"
    return worker, events, came


@pytest.mark.parametrize("theirs", [PROTOCOL_VERSION + 1, None])
def test_a_worker_of_another_protocol_version_is_refused_with_a_clear_error(monkeypatch, theirs):
    worker, events, _ = started(monkeypatch, theirs)
    try:
        (gone,) = events
        assert isinstance(gone, Gone)
        said = f"protocol version {theirs or 0}, this client {PROTOCOL_VERSION}"
        assert said in gone.detail
        assert not worker.ready.is_set()
        with pytest.raises(ProtocolMismatch, match=said):
            worker.submit("lm3-l3", "attention.py", "x = 1\n")
        assert worker.proc is not None and worker.proc.wait(5) is not None  # stopped
    finally:
        worker.close()


def test_a_worker_of_this_version_is_ready(monkeypatch):
    worker, events, _ = started(monkeypatch, PROTOCOL_VERSION)
    try:
        assert [type(e) for e in events] == [Ready] and worker.ready.is_set()
        assert worker.mismatch is None
    finally:
        worker.close()
