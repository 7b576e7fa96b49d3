"""What this platform offers to confine the learner's code: one probe, asked by the worker (to
decide what to set up) and by the UI (to say once which protections are off).

Every Linux-only protection is named here, and each can be turned off for a test or a
troubleshooting session with ATTN_TUTOR_DISABLE=name,name (e.g. landlock,seccomp); the test
suite runs the worker with each one off, which is the path macOS and other systems take.
Standard library only, no torch: the UI process imports it.
"""

from __future__ import annotations

import functools
import os
import platform
import sys
from dataclasses import dataclass, fields
from typing import Any

from tutor.engine.confine import pids_cgroup, syscalls

DISABLE_ENV = "ATTN_TUTOR_DISABLE"


@dataclass(frozen=True)
class Protections:
    """True: set up in each child (or in the worker). Landlock holds its ABI version (0: off)."""

    landlock: int  # files: read only what Python needs, write only the run's scratch folder; no signal out of the run's child
    seccomp: bool  # an allow-list of system calls: no network, no signal to the tutor, no metadata changes, no keyring (syscalls.ALLOWED)
    capabilities: bool  # root loses every capability in the child, so the hard limits hold
    rlimit_data: bool  # memory: malloc and mmap counted (Linux >= 4.7)
    forks: bool  # a pids cgroup per child bounds its processes and threads (pids_cgroup)
    subreaper: bool  # orphans of learner processes come back to the worker, to be killed
    nondumpable: bool  # children cannot open the worker's fds or memory through /proc

    def off(self) -> list[str]:
        """The protections this platform lacks or that were turned off, by name, in order."""
        return [f.name for f in fields(self) if not getattr(self, f.name)]


def describe_off(names, lang: str) -> str:
    """The one line that says which protections are off (app and `check`), or "" when none."""
    from tutor.text.i18n import t

    known = [n for n in names if n in NAMES]
    if not known:
        return ""
    listed = t("protections.separator", lang).join(t(f"protections.{n}", lang) for n in known)
    return t("protections.off", lang, names=listed)


NAMES = tuple(f.name for f in fields(Protections))


def disabled(environ=None) -> frozenset[str]:
    raw = (environ if environ is not None else os.environ).get(DISABLE_ENV, "")
    return frozenset(part.strip() for part in raw.split(",") if part.strip())


@functools.lru_cache(maxsize=4)
def _probe(machine: str, linux: bool, off: frozenset[str]) -> Protections:
    arch = syscalls.ARCHES.get(machine)
    libc = _libc() if linux else None
    seccomp = bool(libc is not None and arch is not None and _seccomp_available(libc))
    landlock = _landlock_abi(libc, arch) if libc is not None and arch is not None else 0
    found: dict[str, Any] = {
        "landlock": landlock,
        "seccomp": seccomp,
        "capabilities": libc is not None,
        # macOS has RLIMIT_DATA, but it counts neither mmap nor torch's allocations.
        "rlimit_data": linux,
        "forks": linux and pids_cgroup.available(),
        "subreaper": libc is not None,
        "nondumpable": libc is not None,
    }
    # Turned off: False, or 0 for Landlock's version.
    return Protections(
        **{name: type(value)() if name in off else value for name, value in found.items()}
    )


def probe(environ=None) -> Protections:
    """What this process's platform offers, less what ATTN_TUTOR_DISABLE turns off."""
    return _probe(platform.machine(), sys.platform.startswith("linux"), disabled(environ))


def _libc():
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl.argtypes = [
            ctypes.c_int,
            ctypes.c_ulong,
            ctypes.c_ulong,
            ctypes.c_ulong,
            ctypes.c_ulong,
        ]
        libc.syscall.restype = ctypes.c_long
        return libc
    except (OSError, AttributeError):
        return None


def _seccomp_available(libc) -> bool:
    # PR_GET_SECCOMP answers 0 (not in a filter yet) or 2 where seccomp is built in; EINVAL otherwise.
    return libc.prctl(syscalls.PR_GET_SECCOMP, 0, 0, 0, 0) >= 0


def _landlock_abi(libc, arch) -> int:
    import ctypes

    abi = libc.syscall(
        ctypes.c_long(arch.landlock_create_ruleset),
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(syscalls.LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(int(abi), 0)  # -1: ENOSYS (no Landlock) or EOPNOTSUPP (built in, not enabled)
