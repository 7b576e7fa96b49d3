"""The worker's own protections, and its children's tie to it."""

from __future__ import annotations

import ctypes
import os
import signal

from tutor.engine.confine.syscalls import PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, PR_SET_PDEATHSIG


def harden_self(protections) -> None:
    """Subreaper: orphans of learner processes come to us to be killed. Not dumpable: a child
    cannot open our fds through /proc/<pid>/fd (the UI's pipe!) nor read our memory."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if protections.subreaper:
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        if protections.nondumpable:
            libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def die_with_parent(protections, parent: int) -> None:
    """In a child of ours (spare, judge): SIGKILL when the worker dies, even by SIGKILL."""
    if not protections.subreaper:
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the call
        os._exit(0)
