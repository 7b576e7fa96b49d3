"""A judge that dies is restarted and the steps it held are judged again (issue 23, class 1):
its death is never a verdict. The judge is stopped while a run's steps queue up for it, then
killed: every step still gets its real verdict from the new judge."""

from __future__ import annotations

import os
import signal
import time

from reliability_kit import REFERENCE, LiveWorker, children_of


def _judge_of(worker_pid: int) -> int:
    """The worker's child that holds a socket (the judge's socketpair; spares hold pipes)."""
    for pid in children_of(worker_pid):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:") for fd in fds):
                return pid
        except OSError:
            continue
    raise AssertionError("no judge found")


def test_steps_held_by_a_judge_that_died_are_judged_again():
    lw = LiveWorker(10.0)
    lw.start()
    try:
        judge = _judge_of(lw.pid)
        os.kill(judge, signal.SIGSTOP)
        run = lw.submit("lm3-l3", REFERENCE["lm3-l3"])
        # The children are done and every step waits on the stopped judge (the worker may be
        # blocked sending it a payload: the socket is full).
        time.sleep(3)
        assert not run.results
        os.kill(judge, signal.SIGKILL)
        assert run.done.wait(60), "no verdicts after the judge died"
        assert not lw.gone
        assert sorted(run.results) == sorted(["single-head", "leakage", "multi-head", "shapes"])
        for step, result in run.results.items():
            assert result.status == "pass", (step, result.checks)
        new = _judge_of(lw.pid)
        assert new != judge
        # And the new judge goes on judging.
        again = lw.run("lm3-l3", REFERENCE["lm3-l3"])
        assert all(r.status == "pass" for r in again.results.values())
    finally:
        lw.close()
