"""A bound on the processes and threads one child may have: a pids cgroup per child.

RLIMIT_NPROC cannot do it: it counts every process of the user, and root (uid 0 of the first
user namespace) is exempt from it whatever its capabilities. A pids cgroup counts exactly the
child's tasks and whatever they start, root's too: a fork bomb then gets EAGAIN at LIMIT instead
of filling the machine until the step's deadline (measured here, a torch-loaded child forks
every ~20 ms on a busy 2-core machine: 64 forks take ~1.5 s of a 3 s step).

Where: the pids controller's folder of this process (cgroup v1), or its cgroup v2 folder when
pids is enabled for the folders below it, if we may make folders there (root, or a delegated
subtree). Elsewhere (most desktops' cgroup v2 as a user, macOS) there is no bound; the probe
says so. Standard library only: the UI's probe asks available() too.
"""

from __future__ import annotations

import contextlib
import os

from tutor.engine.confine import leftovers

LIMIT = 64  # tasks (threads count) per child: torch's few threads, a learner's pool, a Popen or two
# Empty folders kept for the next children: a cgroup's mkdir and rmdir took ~2.5 ms of the
# worker's loop per child (`grade`: 1 s of 200 files). Emptied, a folder bounds anew.
POOL = 4
_V1 = "/sys/fs/cgroup/pids"
_V2 = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")


def base() -> str | None:
    """The folder under which per-child cgroups can be made, or None."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if "pids" in controllers.split(","):  # v1: its own hierarchy
            folder = _V1 + path.rstrip("/")
            if os.path.isfile(folder + "/cgroup.procs") and os.access(folder, os.W_OK):
                return folder
        elif controllers == "":  # v2: pids.max appears below only if the folder enables pids
            for mount in _V2:
                folder = mount + path.rstrip("/")
                try:
                    with open(folder + "/cgroup.subtree_control") as f:
                        enabled = f.read().split()
                except OSError:
                    continue
                if "pids" in enabled and os.access(folder, os.W_OK):
                    return folder
    return None


def available() -> bool:
    return base() is not None


def enter(folder: str) -> bool:
    """Child side, first thing after the fork, before any learner code: this process joins its
    folder. Here, not in the worker: moving a process costs ~14 ms on cgroup v1 (measured),
    which the spare pays while it waits for its job."""
    try:
        with open(folder + "/cgroup.procs", "w") as f:
            f.write("0")  # this process
        return True
    except OSError:
        return False


class Bound:
    """The worker's: a folder of its own under base(), and one per child in it."""

    def __init__(self, folder: str):
        self.root = os.path.join(
            folder, leftovers.CGROUP + leftovers.tag()
        )  # swept if we are killed
        os.makedirs(self.root, exist_ok=True)
        self.left: set[str] = set()  # folders not yet removed (a task was still in them)
        self.free: list[str] = []  # empty folders, for the next children
        self.made = 0
        self.by_pid: dict[int, str] = {}

    def make(self, name: str) -> str | None:
        """A folder bounded at LIMIT, for the child about to be forked: an empty one of the pool,
        else a new one named `name`."""
        while self.free:
            folder = self.free.pop()
            if self._bound(folder):  # written again: without Landlock, a run could have raised it
                return folder
            self.left.add(folder)
        folder = os.path.join(self.root, name)
        try:
            os.mkdir(folder)
        except OSError:
            self.left.add(folder)
            return None
        if self._bound(folder):
            return folder
        self.left.add(folder)
        return None

    @staticmethod
    def _bound(folder: str) -> bool:
        try:
            with open(folder + "/pids.max", "w") as f:
                f.write(str(LIMIT))
            return True
        except OSError:
            return False

    @staticmethod
    def _empty(folder: str) -> bool:
        try:
            with open(folder + "/cgroup.procs") as f:
                return not f.read().strip()
        except OSError:
            return False

    def adopt(self, folder: str, pid: int) -> None:
        """The child's folder, known by its pid once forked (not renamed: the child may not have
        entered it yet): removed by remove(pid)."""
        self.by_pid[pid] = folder

    def remove(self, pid: int) -> None:
        """Once the child is reaped: its folder back to the pool, or removed; one still holding
        an orphan is tried again by tidy()."""
        folder = self.by_pid.pop(pid, None)
        if folder is None:
            return
        if len(self.free) < POOL and self._empty(folder):
            self.free.append(folder)
            return
        self.left.add(folder)
        self.tidy()

    def tidy(self) -> None:
        for folder in list(self.left):
            try:
                os.rmdir(folder)
            except FileNotFoundError:
                pass
            except OSError:
                continue  # still busy
            self.left.discard(folder)

    def close(self) -> None:
        """Every child reaped: their folders, then ours."""
        with contextlib.suppress(OSError):
            self.left.update(
                os.path.join(self.root, entry.name)
                for entry in os.scandir(self.root)
                if entry.is_dir()
            )
        self.tidy()
        with contextlib.suppress(OSError):
            os.rmdir(self.root)
