"""What a killed worker leaves behind: its children's scratch folders and its pids cgroups.

A worker removes both as it goes and when it quits, but a SIGKILL (the OOM killer, a closed
SSH session's hang-up turned kill, `kill -9`) leaves them. Each folder's name carries its
worker's pid and pid namespace, so the next worker removes those whose worker is gone, and
nothing of a worker still running: not one in another container sharing /tmp (its pids are not
ours to test), not another user's. Standard library only.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import tempfile

from tutor.engine.confine.remove_tree import remove_tree

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
    """Remove the scratch folders of exited workers in folder (the temp folder); returns them.
    Never raises: a folder it cannot remove is said on stderr and left, and the tutor starts."""
    removed: list[str] = []
    try:
        folder = folder or tempfile.gettempdir()
        entries = list(os.scandir(folder))
    except Exception:
        return removed
    for entry in entries:
        try:
            ours = (
                entry.is_dir(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_uid == os.getuid()
            )
            if not (ours and _gone(entry.name, SCRATCH)):
                continue
            if remove(entry.path):  # never follows a link out of the folder
                removed.append(entry.path)
        except Exception as exc:  # a tutor bug here must not stop every later run
            _say(f"sweeping {entry.path!r}: {type(exc).__name__}: {exc}")
    return removed


def remove(path: str) -> bool:
    """Remove a scratch folder now (its child is reaped); never raises."""
    if remove_tree(path):
        return True
    _say(f"could not remove {path!r}; the next worker's sweep tries again")
    return False


def _say(text: str) -> None:
    with contextlib.suppress(Exception):
        print(f"attn-tutor: {text}", file=sys.stderr)


def sweep_cgroups(base: str | None) -> list[str]:
    """Remove the pids cgroups of exited workers under base; one still holding a task stays."""
    removed: list[str] = []
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
