"""The child's seccomp filter is an allow-list (issue #23, class 3): a call it does not name gets
ENOSYS, the calls it refuses by name get EPERM, and some allowed calls are refused for some
arguments. Each route runs in a real process under the very filter a child gets
(child_confinement.confine), made as the test's own child: the worker's tests (test_kernel_surface.py)
show the same through learner files.

Every call is made with arguments that succeed (or fail otherwise) without the filter, so the
errno asserted is the filter's.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import struct
import time

import pytest

from tutor.engine.confine import child_confinement, syscalls
from tutor.engine.confine.platform_probe import probe

PROTECTIONS = probe()
ARCH = syscalls.ARCHES.get(platform.machine())
pytestmark = pytest.mark.skipif(not PROTECTIONS.seccomp or ARCH is None, reason="no seccomp here")

# Calls the allow-list does not name: their numbers, per ABI (uapi headers), for this test only.
UNLISTED = {
    "x86_64": {
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "perf_event_open": 298,
        "bpf": 321,
        "userfaultfd": 323,
        "mount": 165,
        "umount2": 166,
        "unshare": 272,
        "setns": 308,
        "kexec_load": 246,
        "kexec_file_load": 320,
        "init_module": 175,
        "open_by_handle_at": 304,
        "fanotify_init": 300,
        "process_madvise": 440,
        "clone3": 435,
        "fsopen": 430,
        "open_tree": 428,
        "personality": 135,
        "file_setattr": 469,
        "mlock": 149,
        "setpriority": 141,
        "sched_setaffinity": 203,
    },
    "aarch64": {
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "perf_event_open": 241,
        "bpf": 280,
        "userfaultfd": 282,
        "mount": 40,
        "umount2": 39,
        "unshare": 97,
        "setns": 268,
        "kexec_load": 104,
        "kexec_file_load": 294,
        "init_module": 105,
        "open_by_handle_at": 265,
        "fanotify_init": 262,
        "process_madvise": 440,
        "clone3": 435,
        "fsopen": 430,
        "open_tree": 428,
        "personality": 92,
        "file_setattr": 469,
        "mlock": 228,
        "setpriority": 140,
        "sched_setaffinity": 122,
    },
}[platform.machine()]

CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
KEY_SPEC_SESSION_KEYRING = -3
KEYCTL_GET_KEYRING_ID = 0
F_SETOWN = 8


def _confined(routes: dict) -> dict:
    """Run each route (name -> a function returning the call's result) in a child under the
    child's filter; name -> [result, errno name]."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            child_confinement.confine([os.getppid()], PROTECTIONS)
            out = {}
            for name, route in routes.items():
                ctypes.set_errno(0)
                try:
                    res = route()
                    err = ctypes.get_errno() if isinstance(res, int) and res < 0 else 0
                except OSError as exc:
                    res, err = -1, exc.errno
                out[name] = [
                    res if isinstance(res, int) else str(res),
                    errno.errorcode.get(err, ""),
                ]
            os.write(write, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long


def call(nr: int, *args):
    return lambda: LIBC.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])


def io_uring_params():
    return ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed: a valid request


def test_calls_the_list_does_not_name_get_enosys():
    """io_uring made a UDP socket past the socket() rule; these reach the kernel's other
    surfaces (perf, bpf, namespaces, mounts, modules, handles). Arguments valid or harmless."""
    params = io_uring_params()
    routes = {
        "io_uring_setup": lambda: LIBC.syscall(
            ctypes.c_long(UNLISTED["io_uring_setup"]), ctypes.c_long(4), params
        ),
        "unshare(NEWUSER)": call(UNLISTED["unshare"], CLONE_NEWUSER),
        "unshare(NEWNET)": call(UNLISTED["unshare"], CLONE_NEWNET),
        "clone3": lambda: LIBC.syscall(ctypes.c_long(UNLISTED["clone3"]), None, ctypes.c_long(0)),
    }
    for name in UNLISTED:
        if name not in ("io_uring_setup", "unshare", "clone3"):
            routes[name] = call(UNLISTED[name], 0, 0, 0, 0, 0)
    got = _confined(routes)
    assert {k: v[1] for k, v in got.items()} == dict.fromkeys(routes, "ENOSYS"), got


def test_calls_refused_by_name_get_eperm():
    """Keyring, memory no limit counts, other processes: refused outright. Each of these
    succeeds without the filter."""
    ppid = os.getpid()  # the child's parent: a process outside its run, as the worker is
    routes = {
        "keyctl(session keyring)": call(
            ARCH.keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1
        ),
        "add_key": lambda: LIBC.syscall(
            ctypes.c_long(ARCH.add_key),
            b"user",
            b"attn-test-planted",
            b"x",
            ctypes.c_size_t(1),
            ctypes.c_long(KEY_SPEC_SESSION_KEYRING),
        ),
        "request_key": lambda: LIBC.syscall(
            ctypes.c_long(ARCH.request_key), b"user", b"attn-test-none", None, ctypes.c_long(0)
        ),
        "memfd_create": lambda: os.memfd_create("hoard"),
        "memfd_secret": call(ARCH.memfd_secret, 0),
        "shmget": call(ARCH.shmget, 0, 1 << 20, 0o1600),  # IPC_PRIVATE, IPC_CREAT | 0600
        "semget": call(ARCH.semget, 0, 1, 0o1600),
        "msgget": call(ARCH.msgget, 0, 0o1600),
        "pidfd_open(parent)": call(ARCH.pidfd_open, ppid, 0),
        "process_vm_readv": call(ARCH.process_vm_readv, ppid, 0, 0, 0, 0, 0),
        "ptrace(ATTACH)": call(ARCH.ptrace, 16, ppid, 0, 0),
    }
    got = _confined(routes)
    assert {k: v[1] for k, v in got.items()} == dict.fromkeys(routes, "EPERM"), got


def test_allowed_calls_with_arguments_that_reach_outside_are_refused(tmp_path):
    """Refused for these arguments; the same calls for the child itself, and what a child
    needs (pipes, a UNIX socket, a thread, a program: cat), still work in the same child."""
    import subprocess
    import threading

    ppid = os.getpid()
    probe_file = tmp_path / "f"
    probe_file.write_text("hello\n")
    fd = os.open(probe_file, os.O_RDONLY)

    def thread():
        t = threading.Thread(target=time.sleep, args=(0,))
        t.start()
        t.join()
        return 0

    works = {
        "prlimit64(self)": lambda: _prlimit(0),
        "socketpair(AF_UNIX)": lambda: len(__import__("socket").socketpair()),
        "pipe": lambda: len(os.pipe()),
        "thread": thread,
        "cat": lambda: subprocess.run(
            ["cat", str(probe_file)], capture_output=True
        ).stdout.decode(),
        "fcntl(F_GETFL)": lambda: LIBC.fcntl(fd, 3),
    }
    refused = {
        # clone making a user namespace: its child would exit at once, were it made.
        "clone(NEWUSER)": lambda: _clone(CLONE_NEWUSER),
        "prlimit64(parent)": lambda: _prlimit(ppid),
        "fcntl(F_SETOWN, parent)": lambda: LIBC.fcntl(fd, F_SETOWN, ppid),
        "ioctl(FIOSETOWN, parent)": lambda: LIBC.ioctl(
            fd, ctypes.c_ulong(0x8901), ctypes.byref(ctypes.c_int(ppid))
        ),
        "ioctl(FS_IOC_SETFLAGS)": lambda: LIBC.ioctl(
            fd, ctypes.c_ulong(0x40086602), ctypes.byref(ctypes.c_long(0))
        ),
    }
    try:
        got = _confined({**refused, **works})
    finally:
        os.close(fd)
    assert {k: got[k][1] for k in refused} == dict.fromkeys(refused, "EPERM"), got
    assert {k: got[k][1] for k in works} == dict.fromkeys(works, ""), got
    assert got["cat"][0] == "hello\n"


def _clone(flags: int) -> int:
    sigchld = 17
    r = LIBC.syscall(ctypes.c_long(ARCH.clone), ctypes.c_long(flags | sigchld), *[None] * 4)
    if r == 0:
        os._exit(0)  # made after all (no filter): the copy leaves at once
    if r > 0:
        os.waitpid(r, 0)
    return r


def _prlimit(pid: int) -> int:
    old = ctypes.create_string_buffer(16)
    return LIBC.syscall(
        ctypes.c_long(ARCH.prlimit64), ctypes.c_long(pid), ctypes.c_long(7), None, old
    )


def test_another_abi_and_x32_get_nothing():
    """The program refuses a call made through another ABI before looking at its number."""
    program = child_confinement.seccomp_program([], ARCH)
    first = [struct.unpack("HBBI", program[i : i + 8]) for i in range(0, 48, 8)]
    assert first[0] == (syscalls.BPF_LD_W_ABS, 0, 0, syscalls.DATA_ARCH)
    assert first[1][3] == ARCH.audit and first[2][3] == syscalls.SECCOMP_RET_ERRNO | errno.ENOSYS
    assert first[4][3] == syscalls.X32_BIT


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_every_named_call_has_a_number_and_none_is_both_allowed_and_refused(machine):
    arch = syscalls.ARCHES[machine]
    allowed = {n for _, names in syscalls.ALLOWED.values() for n in names.split()}
    refused = {n for _, names in syscalls.REFUSED.values() for n in names.split()}
    assert not allowed & refused
    # aarch64 has only the *at forms of the old calls; everything else is in both tables.
    legacy = set(syscalls.ARCHES["x86_64"].numbers) - set(syscalls.ARCHES["aarch64"].numbers)
    assert (allowed | refused) - legacy <= set(arch.numbers)
    assert len(set(arch.numbers.values())) == len(arch.numbers)  # no number named twice
    assert child_confinement.seccomp_program([1, 2], arch) is not None
