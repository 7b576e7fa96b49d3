"""A fork whose child is our parent's child: clone(2) with CLONE_PARENT, for the zygote.

The zygote's spares must be the worker's children (it reaps them and reads their status).
Forking through an in-between process that exits costs a second copy of the page tables and
its teardown: ~20 ms of CPU per spare (tests/benchmarks/bench_spare_parts.py). CLONE_PARENT
makes the spare the worker's child at once.

Python has no os.clone: the syscall goes through ctypes, wrapped in the interpreter's own
fork hooks (PyOS_BeforeFork / PyOS_AfterFork_*, what os.fork calls). glibc's fork() also
writes the child's tid into its thread descriptor (struct pthread), which raw clone does
not: the kernel does it here (CLONE_CHILD_SETTID) at the address calibrate() finds. Where
that address is not found for sure, or off x86-64 and arm64, ready() is False and the
zygote forks through an in-between process instead. The caller must be single-threaded
(glibc's atfork handlers do not run).
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading

CLONE_PARENT = 0x00008000
CLONE_CHILD_SETTID = 0x01000000
SIGCHLD = 17
# clone's number, and the position of its child_tid argument (arm64 swaps it with tls)
_CLONE = {"x86_64": (56, 3), "aarch64": (220, 4)}
_SCAN = 1024  # bytes of the thread descriptor searched for its tid (glibc x86-64: at 720)

_tid_at: int | None = None  # where glibc keeps this thread's tid


def ready() -> bool:
    return _tid_at is not None


def calibrate() -> bool:
    """Find glibc's cached tid of this (main) thread: the one int near pthread_self() that
    holds our tid here and its own tid in a child of os.fork(). One fork, once."""
    global _tid_at
    if _tid_at is not None:
        return True
    if platform.machine() not in _CLONE or threading.active_count() != 1:
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.pthread_self.restype = ctypes.c_void_p
        base = libc.pthread_self()
        me = threading.get_native_id()
        raw = ctypes.string_at(base, _SCAN)
    except (OSError, AttributeError, ValueError):
        return False
    candidates = [
        off for off in range(0, _SCAN, 4) if int.from_bytes(raw[off : off + 4], "little") == me
    ]
    if not candidates:
        return False
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            mine = os.getpid()
            hits = [o for o in candidates if ctypes.c_int.from_address(base + o).value == mine]
            os.write(w, ",".join(map(str, hits)).encode())
        finally:
            os._exit(0)
    os.close(w)
    try:
        got = os.read(r, 4096).decode()
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    hits = [int(x) for x in got.split(",") if x]
    if len(hits) != 1:
        return False
    _tid_at = base + hits[0]
    return True


def fork() -> int:
    """As os.fork(), but the child is our parent's (0 in the child). OSError on failure."""
    if _tid_at is None:
        raise OSError("clone_parent: not calibrated")
    number, tid_arg = _CLONE[platform.machine()]
    libc = ctypes.PyDLL(None, use_errno=True)  # PyDLL: the GIL stays held, as in os.fork
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    syscall.argtypes = [ctypes.c_long, ctypes.c_ulong] + [ctypes.c_void_p] * 4
    # newsp, parent_tid, then child_tid and tls in arch order
    args: list[int | None] = [None, None, None, None]
    args[tid_arg - 1] = _tid_at
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = syscall(number, CLONE_PARENT | CLONE_CHILD_SETTID | SIGCHLD, *args)
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    err = ctypes.get_errno()
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(err, os.strerror(err))
    return pid
