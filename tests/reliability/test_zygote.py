"""The spares' fork server (tutor/engine/zygote.py) failing: killed mid-run, or a fork refused.

A zygote that dies is started afresh (exec) and the runs after it get their right verdicts,
in the app's worker and in `grade`'s. A spare that could not be forked is an error of that
request, never a pid: a -1 taken for a pid makes kill(-1) signal every process we may.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from reliability_kit import REFERENCE, LiveWorker, children_of, wait_until

from tutor.model.lesson import all_lessons

LESSON = "lm3-l3"
STARTER = next(item for item in all_lessons() if item.id == LESSON).starter_path.read_text()


def _start_time(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def _zygote_of(worker_pid: int) -> int:
    """The zygote: the worker's first child (forked before the judge and every spare)."""
    kids = [pid for pid in children_of(worker_pid) if Path(f"/proc/{pid}").exists()]
    assert kids, "the worker has no child"
    return min(kids, key=_start_time)


def _verdicts(run) -> dict[str, str]:
    return {step: result.status for step, result in run.results.items()}


def _cmdline(pid: int) -> bytes:
    """A process's command line; b"" once it has ended (reaped between the listing and the read)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


@pytest.mark.parametrize("batch", [False, True], ids=["app", "grade"])
def test_a_killed_zygote_is_started_afresh_and_verdicts_stay_right(batch):
    lw = LiveWorker(10.0, batch=batch)
    lw.start()
    try:
        before = lw.run(LESSON, REFERENCE[LESSON], wait=120)
        assert set(_verdicts(before).values()) == {"pass"}, _verdicts(before)
        zygote = _zygote_of(lw.pid)
        os.kill(zygote, signal.SIGKILL)
        assert wait_until(lambda: not _cmdline(zygote), 10)
        # Several runs, so that spares made before the kill are used up and new ones forked.
        for _ in range(3):
            good = lw.run(LESSON, REFERENCE[LESSON], wait=120)
            assert set(_verdicts(good).values()) == {"pass"}, _verdicts(good)
            starter = lw.run(LESSON, STARTER, wait=120)
            assert "pass" not in set(_verdicts(starter).values()), _verdicts(starter)
        # The one started afresh (by exec); its spares have its command line, in groups of their own.
        fresh = [
            pid
            for pid in children_of(lw.pid)
            if b"tutor.engine.zygote" in _cmdline(pid) and os.getpgid(pid) != pid
        ]
        assert len(fresh) == 1, fresh
    finally:
        lw.close()


REFUSED = r"""
import os, socket, sys
from tutor.model.lesson import all_lessons, without_answers
from tutor.engine.confine import fence
from tutor.engine import zygote
from tutor.engine.confine.platform_probe import probe

protections = probe()
z = zygote.respawn(protections)  # by exec: a clean zygote, our child
lessons = [without_answers(lesson) for lesson in all_lessons()]
z.setup({"lessons": lessons, "seed": 0, "protected": fence.protected_folders(), "warm": [],
         "batch": True})
pipes = [os.pipe() for _ in range(3)]
fds = (pipes[0][0], pipes[1][1], pipes[2][1])
request = {"protected": [], "scratch": None, "cgroup": None, "lesson": None}
try:
    got = z.fork_spare(fds[:2], request)  # the zygote cannot fork a spare from this request
    print("REFUSED-AS-PID", got)
except OSError as exc:
    print("REFUSED-AS-ERROR", type(exc).__name__)
pid = z.fork_spare(fds, request)  # and the zygote is still there for the next one
os.close(pipes[0][1])  # no job: the spare exits
print("THEN", pid > 0 and os.waitpid(pid, 0)[0] == pid)
z.close()
"""


def test_a_spare_the_zygote_could_not_fork_is_an_error_not_a_pid():
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(REFUSED)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert "REFUSED-AS-ERROR" in out.stdout, (out.stdout, out.stderr[-2000:])
    assert "THEN True" in out.stdout, (out.stdout, out.stderr[-2000:])
