"""What a killed worker leaves behind: its children's scratch folders and its pids cgroups.

A worker removes both as it goes and when it quits, but a SIGKILL (the OOM killer, a closed
SSH session's hang-up turned kill, `kill -9`) leaves them. Each folder's name carries its
worker's pid and pid namespace, so the next worker removes those whose worker is gone, and
nothing of a worker still running: not one in another container sharing /tmp (its pids are not
ours to test), not another user's. Standard library only.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile

SCRATCH = "attn-run-"
CGROUP = "attn-tutor-"


@functools.cache
def _namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:  # no /proc (macOS): pids are the machine's
        return 0


def tag(pid: int | None = None) -> str:
    """`<pid namespace>-<pid>`: this worker's mark in its folders' names."""
    return f"{_namespace()}-{os.getpid() if pid is None else pid}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone's, alive
        return True
    return True


def _gone(name: str, prefix: str) -> bool:
    """Is name one of ours (prefix, then this namespace's tag) whose worker has exited?"""
    ns, _, rest = name.removeprefix(prefix).partition("-")
    pid = rest.split("-", 1)[0]
    if not name.startswith(prefix) or ns != str(_namespace()) or not pid.isdigit():
        return False
    return int(pid) != os.getpid() and not _alive(int(pid))


def sweep_scratch(folder: str | None = None) -> list[str]:
    """Remove the scratch folders of exited workers in folder (the temp folder); returns them."""
    folder = folder or tempfile.gettempdir()
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        try:
            ours = (
                entry.is_dir(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_uid == os.getuid()
            )
        except OSError:
            continue
        if ours and _gone(entry.name, SCRATCH):
            shutil.rmtree(entry.path, ignore_errors=True)  # never follows a link out of the folder
            removed.append(entry.path)
    return removed


def sweep_cgroups(base: str | None) -> list[str]:
    """Remove the pids cgroups of exited workers under base; one still holding a task stays."""
    removed = []
    if base is None:
        return removed
    try:
        entries = [
            e for e in os.scandir(base) if e.is_dir(follow_symlinks=False) and _gone(e.name, CGROUP)
        ]
    except OSError:
        return removed
    for entry in entries:
        try:
            for child in os.scandir(entry.path):
                if child.is_dir(follow_symlinks=False):
                    os.rmdir(child.path)  # a cgroup's files go with its folder
            os.rmdir(entry.path)
            removed.append(entry.path)
        except OSError:
            continue  # busy: a task of the dead worker's still runs in it
    return removed
