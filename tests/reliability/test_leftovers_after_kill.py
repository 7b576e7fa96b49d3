"""A worker killed outright (SIGKILL: nothing of its own runs) leaves its children's scratch
folders and its pids cgroups; the next worker removes them as it starts."""

from __future__ import annotations

import glob
import os
import signal
import tempfile

import psutil
from reliability_kit import STEP_TIMEOUT, LiveWorker, wait_until

from tutor.engine.confine.leftovers import tag
from tutor.engine.confine.pids_cgroup import base


def test_the_next_worker_removes_what_a_killed_one_left():
    first = LiveWorker(STEP_TIMEOUT)
    first.start()
    try:
        pid = first.pid
        pattern = os.path.join(tempfile.gettempdir(), f"attn-run-{tag(pid)}-*")
        assert wait_until(lambda: glob.glob(pattern), 5), "the worker's spares have scratch folders"
        scratch = glob.glob(pattern)
        children = psutil.Process(pid).children(recursive=True)
        cgroup = os.path.join(base(), f"attn-tutor-{tag(pid)}") if base() else None
        os.kill(pid, signal.SIGKILL)
        assert wait_until(
            lambda: (
                not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)
            ),
            10,
        )
    finally:
        first.close()
    assert all(os.path.isdir(s) for s in scratch), "left behind, as a killed worker leaves them"
    # Its pids cgroup is left too, but any worker that starts meanwhile (another test's, under
    # xdist) sweeps it at once, as the next one must: gone already is that sweep, not a miss.

    second = LiveWorker(STEP_TIMEOUT)
    second.start()
    try:
        assert not any(os.path.exists(s) for s in scratch), scratch
        assert cgroup is None or not os.path.exists(cgroup)
        mine = os.path.join(tempfile.gettempdir(), f"attn-run-{tag(second.pid)}-*")
        assert wait_until(lambda: glob.glob(mine), 5), "the new worker's own spares have theirs"
    finally:
        second.close()
