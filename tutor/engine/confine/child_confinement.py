"""A child's confinement, set up by the child itself before it runs the learner's code:
rlimits (data, stack, file size, open files), the seccomp filter (syscalls.ALLOWED), dropped
capabilities, Landlock's file rules and the fds it keeps. See child.py's docstring and
docs/confinement.md for what each stops and why."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import platform
import resource
import struct
import tempfile

from tutor.engine.confine import disk_quota, landlock, syscalls
from tutor.engine.confine import syscalls as sc
from tutor.engine.confine.platform_probe import Protections

HEADROOM = 64 << 20  # between soft and hard RLIMIT_DATA: for the harness's report
STACK_LIMIT = 256 << 20
# Set (to anything): calls the allow-list does not name are allowed and logged by the kernel
# (dmesg: "audit: type=1326 ... syscall=N"), not refused. For porting, never for learners.
SECCOMP_LOG_ENV = "ATTN_TUTOR_SECCOMP_LOG"
FD_LIMIT = 1024  # open files in a child (soft and hard): HIGH_FD and the output's copy fit under it
HIGH_FD = 900  # the result pipe's copy: above what os.closerange(0, 100) reaches, under 1024

# As they were before the learner's code ran (see child.py).
_setrlimit, _getrlimit = resource.setrlimit, resource.getrlimit

# What this child's kernel-side confinement refuses, for describe_exception's message.
confined = {
    "files": False,
    "network": False,
    "forks": False,
    "syscalls": False,
    "file_size": False,
}


def limit_resources(memory: int, protections: Protections) -> tuple[int, int] | None:
    """Returns the RLIMIT_DATA (soft, hard) set, to set again before each step."""
    data = None
    if memory > 0 and protections.rlimit_data:
        limit = _data_bytes() + memory
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard == resource.RLIM_INFINITY or limit + HEADROOM <= hard:
            data = (limit, limit + HEADROOM)
            resource.setrlimit(resource.RLIMIT_DATA, data)
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if soft != resource.RLIM_INFINITY and soft < STACK_LIMIT:
        want = STACK_LIMIT if hard == resource.RLIM_INFINITY else min(STACK_LIMIT, hard)
        resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
    # Core dumps would only fill the disk.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # One file may not fill the disk (the worker bounds the scratch folder's total): a write past
    # it fails with EFBIG (Python ignores SIGXFSZ), told as failure.file_too_large.
    confined["file_size"] = _lower(resource.RLIMIT_FSIZE, disk_quota.file_bytes())
    # Every fd may be a pipe holding up to 1 MiB no RSS shows: a bounded count of them.
    _lower(resource.RLIMIT_NOFILE, FD_LIMIT)
    return data


def _lower(which: int, value: int) -> bool:
    """Soft and hard limits at value or under; False where the kernel refused."""
    soft, hard = resource.getrlimit(which)
    if hard == resource.RLIM_INFINITY or hard > value:
        hard = value
    soft = hard if soft == resource.RLIM_INFINITY else min(soft, hard)
    try:
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError):
        return False
    return True


def release_headroom() -> None:
    try:
        _, hard = _getrlimit(resource.RLIMIT_DATA)
        _setrlimit(resource.RLIMIT_DATA, (hard, hard))
    except (ValueError, OSError):
        pass


def restore_headroom(data: tuple[int, int] | None) -> None:
    if data is not None:
        with contextlib.suppress(ValueError, OSError):
            _setrlimit(resource.RLIMIT_DATA, data)


def _data_bytes() -> int:
    # VmData from /proc (Linux only, as RLIMIT_DATA is here): the limit is measured against this
    # very number, which psutil does not give (its "data" adds the stack).
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def seccomp_program(
    protected: list[int], arch: syscalls.Arch | None = None, unlisted: int | None = None
) -> bytes | None:
    """A classic-BPF seccomp filter that allows the calls syscalls.ALLOWED names and no other:
    ENOSYS for every call it does not name (a call added to the kernel later is closed), EPERM
    for those syscalls.REFUSED names and for some arguments (a signal to a protected pid, clone
    making a namespace, prlimit64 on another process, ioctl and fcntl commands that reach
    outside), EACCES for socket() of any family but AF_UNIX (no network). None on an
    architecture without a table.

    A straight list, two instructions a call: the kernel (5.11+) caches the verdict of every call
    whose verdict does not depend on its arguments, so an allowed call costs the same wherever
    it stands in the list. unlisted: the verdict for calls not named (SECCOMP_RET_LOG to find
    what a new platform needs: see docs/confinement.md)."""
    arch = arch or syscalls.ARCHES.get(platform.machine())
    if arch is None:
        return None
    values = sorted({p & 0xFFFFFFFF for p in protected})  # pid_t: only the low 32 bits count
    enosys = sc.SECCOMP_RET_ERRNO | errno.ENOSYS
    eperm = sc.SECCOMP_RET_ERRNO | errno.EPERM
    allow = sc.SECCOMP_RET_ALLOW
    prog: list[tuple] = []  # (code, jt, jf, k, label a BPF_JA goes to or None)

    def op(code, k, jt=0, jf=0, to=None):
        prog.append((code, jt, jf, k, to))

    def when(k, ret=None, to=None):
        """A == k: return ret, or jump to the label `to`; else go on."""
        op(sc.BPF_JEQ_K, k, 0, 1)
        op(sc.BPF_RET_K, ret) if to is None else op(sc.BPF_JA, 0, to=to)

    op(sc.BPF_LD_W_ABS, sc.DATA_ARCH)
    op(sc.BPF_JEQ_K, arch.audit, 1, 0)
    op(sc.BPF_RET_K, enosys)  # another ABI (int 0x80 on x86_64): nothing
    op(sc.BPF_LD_W_ABS, sc.DATA_NR)
    op(sc.BPF_JSET_K, sc.X32_BIT, 0, 1)
    op(sc.BPF_RET_K, enosys)  # the x32 ABI on x86_64
    ruled = {arch.socket: "family", arch.socketpair: "family", arch.clone: "clone"}
    ruled.update({arch.prlimit64: "prlimit", arch.ioctl: "ioctl", arch.fcntl: "fcntl"})
    ruled.update({nr: "signal" for nr in arch.signal_calls})
    for nr in arch.calls(sc.REFUSED):
        when(nr, eperm)
    for nr, label in sorted(ruled.items()):
        when(nr, to=label)
    for nr in arch.calls(sc.ALLOWED):
        if nr not in ruled:
            when(nr, allow)
    op(sc.BPF_RET_K, enosys if unlisted is None else unlisted)
    labels = {}

    def block(label, arg, *rest):
        labels[label] = len(prog)
        op(sc.BPF_LD_W_ABS, arg)
        for code in rest:
            op(*code) if isinstance(code, tuple) else code()

    block(
        "signal", sc.DATA_ARG0, *[lambda v=v: when(v, eperm) for v in values], (sc.BPF_RET_K, allow)
    )
    block("family", sc.DATA_ARG0, lambda: when(sc.AF_UNIX, allow))
    op(sc.BPF_RET_K, sc.SECCOMP_RET_ERRNO | errno.EACCES)
    block("clone", sc.DATA_ARG0, (sc.BPF_JSET_K, sc.CLONE_NEW_ANY, 0, 1), (sc.BPF_RET_K, eperm))
    op(sc.BPF_RET_K, allow)
    block("prlimit", sc.DATA_ARG0, lambda: when(0, allow))  # pid 0: itself
    op(sc.BPF_RET_K, eperm)
    block("ioctl", sc.DATA_ARG1, *[lambda c=c: when(c, eperm) for c in sc.IOCTL_REFUSED])
    op(sc.BPF_RET_K, allow)
    block("fcntl", sc.DATA_ARG1, *[lambda c=c: when(c, eperm) for c in sc.FCNTL_REFUSED])
    op(sc.BPF_RET_K, allow)
    return b"".join(
        struct.pack("HBBI", code, jt, jf, k if to is None else labels[to] - at - 1)
        for at, (code, jt, jf, k, to) in enumerate(prog)
    )


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [
        ctypes.c_int,
        ctypes.c_ulong,
        ctypes.c_ulong,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    return libc


def confine(protected: list[int], protections: Protections) -> None:
    """Capabilities and seccomp, as the platform offers them (platform_probe); best effort: on a
    kernel that refuses one, the run goes on without it."""
    libc = _libc()
    if protections.capabilities:
        _drop_capabilities(libc)
    if (
        protections.seccomp or protections.landlock
    ):  # both need it; it also holds for what the child execs
        libc.prctl(sc.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    unlisted = sc.SECCOMP_RET_LOG if os.environ.get(SECCOMP_LOG_ENV) else None
    program = seccomp_program(protected, None, unlisted) if protections.seccomp else None
    if program is None:
        return
    filt = ctypes.create_string_buffer(program)
    fprog = ctypes.create_string_buffer(
        struct.pack("HxxxxxxP", len(program) // 8, ctypes.addressof(filt))
    )
    if libc.prctl(sc.PR_SET_SECCOMP, sc.SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) == 0:
        confined["network"] = confined["syscalls"] = not unlisted


def _drop_capabilities(libc) -> None:
    """Root keeps uid 0 but loses every capability, also across exec (bounding set)."""
    try:
        with open("/proc/self/status") as f:
            eff = next((int(line.split()[1], 16) for line in f if line.startswith("CapEff:")), 0)
    except OSError:
        return
    if not eff:
        return
    for cap in range(64):
        if libc.prctl(sc.PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break  # past the last capability this kernel knows
    libc.prctl(sc.PR_CAP_AMBIENT, sc.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("Ii", sc.LINUX_CAPABILITY_VERSION_3, 0)  # this process
    libc.capset(ctypes.create_string_buffer(header), ctypes.create_string_buffer(bytes(24)))


def prepare_files(protections: Protections, rules, scratch: str | None):
    """The scratch folder as working folder and TMPDIR; Landlock's ruleset, made now (~2 ms),
    applied when the job comes (restrict_files). None where Landlock is off."""
    if scratch:
        os.chdir(scratch)
        os.environ["TMPDIR"] = scratch
        tempfile.tempdir = scratch
    if not protections.landlock or rules is None or not scratch:
        return None
    arch = syscalls.ARCHES.get(platform.machine())
    assert arch is not None  # platform_probe finds no Landlock on an ABI without a table
    try:
        return landlock.prepare(protections.landlock, arch, rules, scratch)
    except OSError:
        return None  # the kernel refused the ruleset: the run goes on without it


def restrict_files(ruleset, filename: str, cwd: str, folder: str | None = None) -> None:
    if ruleset is None:
        return
    path = os.path.join(cwd, filename) if isinstance(filename, str) and filename else None
    try:
        landlock.restrict(ruleset, path if path and os.path.isfile(path) else None, folder)
        confined["files"] = True
    except OSError:
        pass


def arrange_fds(job_fd: int, result_fd: int, output_fd: int) -> tuple[int, int, int]:
    """0 ← /dev/null, 1 and 2 ← output, 3 ← job, result at HIGH_FD and output just above
    (for the step markers, whatever the learner does to 1 and 2); everything else closed."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    high = fcntl.fcntl(result_fd, fcntl.F_DUPFD_CLOEXEC, max(min(HIGH_FD, soft - 8), 101))
    marks = fcntl.fcntl(output_fd, fcntl.F_DUPFD_CLOEXEC, high + 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    if job_fd != 3:
        os.dup2(job_fd, 3, inheritable=False)
    os.closerange(4, high)  # the worker's epoll, other jobs' pipes: none of the learner's business
    os.closerange(marks + 1, max(soft, marks + 2))
    return 3, high, marks
