"""`attn-tutor check` whose worker dies mid-run (a tutor bug, killed here from outside): the run
goes again in a new worker, and `--json` prints every step with the right total. Killed
twice, the steps without a verdict say the tutor could not judge them (issue 23: after a
worker death it printed only some steps, "total": 1)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from reliability_kit import ROOT, children_of, with_code

# Correct, and slow enough to be killed while it runs: each step's first call sleeps (the
# leakage step calls it once per token and size, so a sleep on every call would time out).
SLOW = with_code("""
_right = causal_attention
_slept = []

def causal_attention(x, Wq, Wk, Wv):
    import time
    if not _slept:
        _slept.append(time.sleep(0.4))
    return _right(x, Wq, Wk, Wv)
""")
STEPS = ["single-head", "leakage", "multi-head", "shapes"]


def _worker_of(pid: int) -> int | None:
    for child in children_of(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"tutor.engine.supervisor" in f.read():
                    return child
        except OSError:
            pass
    return None


def _kill_when_busy(cli: int, deadline: float) -> int | None:
    """SIGKILL the CLI's worker once it has a run's child besides its judge."""
    while time.monotonic() < deadline:
        worker = _worker_of(cli)
        if worker is not None and len(children_of(worker)) >= 2:
            time.sleep(0.3)  # the child is inside the learner's sleep
            os.kill(worker, signal.SIGKILL)
            return worker
        time.sleep(0.02)
    return None


@pytest.mark.parametrize("kills", [1, 2])
def test_check_json_has_every_step_after_its_worker_died(tmp_path, kills):
    path = tmp_path / "lm3_l3.py"
    path.write_text(SLOW, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tutor", "check", "--json", "--timeout", "10", str(path)],
        env=dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    killed = []
    for _ in range(kills):
        worker = _kill_when_busy(proc.pid, time.monotonic() + 60)
        assert worker is not None and worker not in killed
        killed.append(worker)
        while _worker_of(proc.pid) == worker:  # reaped and replaced
            time.sleep(0.02)
    out, err = proc.communicate(timeout=120)
    data = json.loads(out)
    assert [s["id"] for s in data["steps"]] == STEPS, err
    assert data["total"] == len(STEPS)
    if kills == 1:  # judged again in full by the new worker
        assert proc.returncode == 0 and data["passed"] == len(STEPS), data
    else:
        assert proc.returncode == 1
        said = [s for s in data["steps"] if s["status"] != "pass"]
        assert said and all("could not judge" in s["checks"][0]["message"] for s in said), said
