"""The child side: runs the learner's file and the probes of a run's steps, under limits.

Runs in a process forked from the worker for this one job: one or more steps, in
order. It may be killed at any moment; all it leaves behind is one frame per step
on its result pipe (codec.pack_frame), each signed with that step's token, and maybe
a faulthandler report before one.

What confines the learner's code here, and why (the worker adds its own watch):
- RLIMIT_DATA over the current VmData: counts malloc, brk and private mmap (Linux ≥ 4.7),
  so torch's allocator and Python's fail with MemoryError instead of eating the machine;
  RLIMIT_AS would count torch's huge reservations. The hard limit is set too, a little
  above the soft one, so the harness can still report after the learner hit the limit.
- A larger RLIMIT_STACK for the main thread: deep recursion through C (nn.Module calls,
  __getattr__, __repr__) then ends in RecursionError even if the learner raised the
  recursion limit, not in a segfault.
- A seccomp filter that allows only the calls syscalls.ALLOWED names (docs/confinement.md):
  no network, no signal to the worker, the judge, the UI or every process (kill -1), no
  ptrace, no metadata changes, no keyring, no memfd or IPC, no io_uring. Capabilities dropped
  when run as root, so the hard limits hold and the worker's fds cannot be opened through /proc.
- RLIMIT_FSIZE per file (the worker bounds the scratch folder's total), RLIMIT_NOFILE 1024.
- fds: stdin is /dev/null (input() gets EOF), stdout/stderr the output pipe, the result
  pipe also kept at a high number (survives os.closerange(0, 100)); nothing else inherited.

What stays possible: code in this process can read the token from memory and forge a
frame. It gains nothing it could not get by computing the right answer: the judge builds
every expected value from its own inputs. See tests/reliability/README.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import faulthandler
import fcntl
import functools
import gc
import json
import linecache
import os
import platform
import re
import resource
import select
import signal
import struct
import sys
import tempfile
import time
import traceback
import types

import torch

from tutor.engine import codec, origin, own_folder, protocol
from tutor.engine.confine import disk_quota, fence, landlock, pids_cgroup, syscalls
from tutor.engine.confine import syscalls as sc
from tutor.engine.confine.platform_probe import Protections, probe
from tutor.kit import probe_tools

DEFAULT_MEMORY_MB = 2048  # extra data segment over what the child holds when the job arrives
HEADROOM = 64 << 20  # between soft and hard RLIMIT_DATA: for the harness's report
STACK_LIMIT = 256 << 20
# Set (to anything): calls the allow-list does not name are allowed and logged by the kernel
# (dmesg: "audit: type=1326 ... syscall=N"), not refused. For porting, never for learners.
SECCOMP_LOG_ENV = "ATTN_TUTOR_SECCOMP_LOG"
RECURSION_LIMIT = 2000
FD_LIMIT = 1024  # open files in a child (soft and hard): HIGH_FD and the output's copy fit under it
HIGH_FD = 900  # the result pipe's copy: above what os.closerange(0, 100) reaches, under 1024
EXIT_NO_CHANNEL = 121  # the learner's code closed the result pipe: nothing could be reported
DUMP_MARGIN = 0.2  # s before the deadline: faulthandler shows where the code was stuck

# What the harness needs after the learner's code ran, as it was before: a file that sets
# os._exit = print must not turn this child into a second worker, nor json.dumps = None
# leave the result unwritten, nor a patched exec or clock break the steps that follow.
_exit, _write, _dumps, _exec, _monotonic = os._exit, os.write, json.dumps, exec, time.monotonic
_dump_later, _cancel_dump = (
    faulthandler.dump_traceback_later,
    faulthandler.cancel_dump_traceback_later,
)
_setrlimit, _getrlimit, _collect = resource.setrlimit, resource.getrlimit, gc.collect


def memory_limit_bytes() -> int:
    """ATTN_TUTOR_MEMORY_MB (MiB over the baseline), default 2048; 0 or less: no limit."""
    try:
        mb = int(os.environ.get("ATTN_TUTOR_MEMORY_MB", DEFAULT_MEMORY_MB))
    except ValueError:
        mb = DEFAULT_MEMORY_MB
    return max(mb, 0) << 20


class LearnerImportError(Exception):
    def __init__(self, failure: dict):
        super().__init__(failure.get("detail", ""))
        self.failure = failure


def _text(obj, limit: int = 1000) -> str:
    try:  # a learner's exception may have a __str__ that raises or loops (the deadline covers loops)
        return str.__str__(str(obj))[:limit]
    except BaseException:
        return f"<{codec.type_name(obj)}>"


def describe_exception(exc: BaseException, filename: str, source: str) -> dict:
    lines = source.splitlines()
    frames = []
    for fs in traceback.extract_tb(exc.__traceback__):
        if fs.filename == filename and fs.lineno:
            code = lines[fs.lineno - 1] if 0 < fs.lineno <= len(lines) else ""
            frames.append({"line": fs.lineno, "function": fs.name, "code": code.rstrip()})
    caret = ""
    if isinstance(exc, SyntaxError) and isinstance(exc.lineno, int):
        text = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else _text(exc.text or "")
        col = max((exc.offset or 1) - 1, 0) if isinstance(exc.offset, int) else 0
        caret = f"{exc.lineno:>4} | {text.rstrip()}\n     | {' ' * col}^"
        frames = [{"line": exc.lineno, "function": "<module>", "code": text.rstrip()}]
    try:  # the class's own name, as Python prints it (a metaclass could lie through a property)
        kind = str.__str__(type.__getattribute__(type(exc), "__name__"))
    except Exception:
        kind = "Exception"
    detail = _text(exc.msg) if isinstance(exc, SyntaxError) else _text(exc)
    if probe_tools.is_out_of_memory(exc):
        kind = "MemoryError"
    described = {"kind": kind, "detail": detail, "frames": frames[-8:], "caret": caret}
    described.update(_import_problem(exc))
    if "refused" not in described:
        described.update(_confinement_problem(exc))
    return described


def _confinement_problem(exc: BaseException) -> dict:
    """{"confined": "network"} for an OSError after the code tried the network (seccomp refuses
    its sockets), "write" or "read" for a file Landlock refused, else {}."""
    seen = 0
    while isinstance(exc, BaseException) and seen < 8:
        seen += 1
        if _confined["forks"] and (
            isinstance(exc, BlockingIOError)
            or (type(exc) is RuntimeError and "can't start new thread" in _text(exc))
        ):
            return {"confined": "processes"}  # EAGAIN from fork or clone: the pids cgroup's bound
        if isinstance(exc, OSError):
            if _confined["network"] and _network_tried:
                return {"confined": "network"}
            try:  # the slots' own values: a learner's subclass may lie through properties
                code, path = OSError.errno.__get__(exc), OSError.filename.__get__(exc)
            except Exception:
                code, path = None, None
            if _confined["syscalls"] and code == errno.EPERM and _metadata_tried:
                return {"confined": "metadata"}  # seccomp refuses chmod, utime, chown, setxattr
            if _confined["syscalls"] and code == errno.ENOSYS:
                return {"confined": "syscall"}  # a call the allow-list does not name
            if _confined["file_size"] and code == errno.EFBIG:
                return {"confined": "file_size"}
            if (
                _confined["files"]
                and code in (errno.EACCES, errno.EPERM)
                and isinstance(path, (str, bytes))
                and path
            ):
                return {"confined": "read" if _refuses_reading(path) else "write"}
        try:
            exc = BaseException.__getattribute__(
                exc, "__cause__"
            ) or BaseException.__getattribute__(exc, "__context__")
        except Exception:
            break
    return {}


def _refuses_reading(path) -> bool:
    """Was the refused call a read? Told by the last path event the audit hook saw for this path
    (open's flags; every other call there is a change); for a call it did not see (ctypes),
    by whether this child may read the path at all."""
    writes = _last_path.get(path) if isinstance(path, str) else None
    if writes is not None:
        return not writes
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (PermissionError, fence.RefusedOpen):
        return True
    except (OSError, ValueError):
        return False  # not there: the code was making it
    os.close(fd)
    return False


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# Calls that change the file system, their path first (audit events); listing a folder reads it.
_CHANGE_EVENTS = frozenset(
    {
        "os.mkdir",
        "os.rename",
        "os.remove",
        "os.rmdir",
        "os.link",
        "os.symlink",
        "os.truncate",
        "os.chmod",
        "os.chown",
        "os.utime",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.rmtree",
        "shutil.move",
    }
)
_READ_EVENTS = frozenset({"os.listdir", "os.scandir"})
# path -> did the last call on it write? (by the path as given: what OSError.filename holds).
# Not just the last call: describing the error reads source files (linecache) before this is asked.
_last_path: dict = {}
_PATHS_KEPT = 256


_NETWORK_EVENTS = frozenset({"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr"})
_network_tried: list = []  # non-empty once the step's code tried the network
# Calls that change a file's metadata (fchmod's path is its fd): refused by seccomp.
_METADATA_EVENTS = frozenset({"os.chmod", "os.chown", "os.utime", "os.setxattr", "os.removexattr"})
_metadata_tried: list = []  # non-empty once the step's code made one


def _remember(path, writes: bool) -> None:
    if type(path) is str:
        if len(_last_path) >= _PATHS_KEPT:
            _last_path.clear()
        _last_path[path] = writes


def _watch(event: str, args) -> None:
    """Audit hook: what the kernel may refuse next, for the message: the last path call (was it
    a write?), and whether the code reached for the network."""
    if event == "open":
        if args:
            flags = args[2] if len(args) > 2 and type(args[2]) is int else 0
            mode = args[1] if len(args) > 1 and type(args[1]) is str else ""
            _remember(args[0], bool(flags & _WRITE_FLAGS) or any(c in mode for c in "wax+"))
    elif event in _CHANGE_EVENTS or event in _READ_EVENTS:
        if args:
            _remember(args[0], event in _CHANGE_EVENTS)
        if event in _METADATA_EVENTS and not _metadata_tried:
            _metadata_tried.append(event)
    elif event in _METADATA_EVENTS and not _metadata_tried:
        _metadata_tried.append(event)
    elif event == "socket.__new__":
        if len(args) > 1 and args[1] != sc.AF_UNIX and not _network_tried:
            _network_tried.append(event)
    elif event in _NETWORK_EVENTS and not _network_tried:
        _network_tried.append(event)


def _import_problem(exc: BaseException) -> dict:
    """{"refused": True} when the fence refused something on the way (runpy and importlib wrap
    its error in their own), {"module": name} for a package Python could not find, else {}."""
    seen, module = 0, {}
    imports = True  # a ValueError raised while handling an ImportError is not about a package
    while isinstance(exc, BaseException) and seen < 8:
        seen += 1
        if isinstance(exc, (fence.RefusedOpen, fence.RefusedImport)):
            return {"refused": True}  # the tutor's reference or checks: a message of its own
        imports = imports and isinstance(exc, ImportError)
        if imports and not module and isinstance(exc, ModuleNotFoundError):
            try:  # ImportError.name: the module Python could not find
                name = BaseException.__getattribute__(exc, "name")
            except Exception:
                name = None
            if isinstance(name, str) and name:
                name = str.__str__(name)
                # Not found where it is not shipped (a checkout: reference/ lies beside tutor/),
                # but the same refusal as where it is.
                if name in fence.BLOCKED_PACKAGES or name.startswith(fence._BLOCKED_PREFIXES):
                    return {"refused": True}
                module = {"module": name[:200]}
        try:
            exc = BaseException.__getattribute__(
                exc, "__cause__"
            ) or BaseException.__getattribute__(exc, "__context__")
        except Exception:
            break
    return module


def compile_learner(source: str, filename: str):
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except BaseException as exc:  # SyntaxError, or a MemoryError on a huge file
        raise LearnerImportError(describe_exception(exc, filename, source)) from None


def load_learner(source: str, filename: str, code=None) -> types.ModuleType:
    """A fresh module from the file: every step starts from the state the file's import makes."""
    if code is None:
        code = compile_learner(source, filename)
    module = types.ModuleType("learner")
    module.__file__ = filename
    # The source the file had when it was saved, for torch.jit.script (it reads a function's
    # source through linecache) even where the file is not on disk or has changed since.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules["learner"] = module
    try:
        _exec(code, module.__dict__)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: the file is at fault
        # Free what the file built (a memory bomb's list) before describing it needs memory.
        sys.modules.pop("learner", None)
        module.__dict__.clear()
        traceback.clear_frames(exc.__traceback__)
        raise LearnerImportError(describe_exception(exc, filename, source)) from None
    return module


# ------------------------------------------------------------------ limits and confinement


def _limit_resources(memory: int, protections: Protections) -> tuple[int, int] | None:
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
    _confined["file_size"] = _lower(resource.RLIMIT_FSIZE, disk_quota.file_bytes())
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


def _release_headroom() -> None:
    try:
        _, hard = _getrlimit(resource.RLIMIT_DATA)
        _setrlimit(resource.RLIMIT_DATA, (hard, hard))
    except (ValueError, OSError):
        pass


def _restore_headroom(data: tuple[int, int] | None) -> None:
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


def _seccomp_program(
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


def _confine(protected: list[int], protections: Protections) -> None:
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
    program = _seccomp_program(protected, None, unlisted) if protections.seccomp else None
    if program is None:
        return
    filt = ctypes.create_string_buffer(program)
    fprog = ctypes.create_string_buffer(
        struct.pack("HxxxxxxP", len(program) // 8, ctypes.addressof(filt))
    )
    if libc.prctl(sc.PR_SET_SECCOMP, sc.SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) == 0:
        _confined["network"] = _confined["syscalls"] = not unlisted


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


def _prepare_files(protections: Protections, rules, scratch: str | None):
    """The scratch folder as working folder and TMPDIR; Landlock's ruleset, made now (~2 ms),
    applied when the job comes (restrict_files). None where Landlock is off."""
    if scratch:
        os.chdir(scratch)
        os.environ["TMPDIR"] = scratch
        tempfile.tempdir = scratch
    if not protections.landlock or rules is None or not scratch:
        return None
    arch = syscalls.ARCHES.get(platform.machine())
    try:
        return landlock.prepare(protections.landlock, arch, rules, scratch)
    except OSError:
        return None  # the kernel refused the ruleset: the run goes on without it


def _restrict_files(ruleset, filename: str, cwd: str, folder: str | None = None) -> None:
    if ruleset is None:
        return
    path = os.path.join(cwd, filename) if isinstance(filename, str) and filename else None
    try:
        landlock.restrict(ruleset, path if path and os.path.isfile(path) else None, folder)
        _confined["files"] = True
    except OSError:
        pass


# What this child's kernel-side confinement refuses, for describe_exception's message.
_confined = {
    "files": False,
    "network": False,
    "forks": False,
    "syscalls": False,
    "file_size": False,
}


def _arrange_fds(job_fd: int, result_fd: int, output_fd: int) -> tuple[int, int, int]:
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


# ------------------------------------------------------------------ the job


def serve_one(
    job_fd: int,
    result_fd: int,
    output_fd: int,
    checks_modules: dict,
    protected=(),
    warm=None,
    fenced=None,
    protections: Protections | None = None,
    files=None,
    cgroup: str | None = None,
    inputs: dict | None = None,
) -> None:
    """A spare child: get ready, wait for one job on job_fd, run its steps, exit. Never returns.

    Everything that does not depend on the learner's file happens before the job
    arrives, so a save only pays for running the learner's code. warm: a list, see _warm_up;
    emptied after it, so that the reference's source and code are gone before the learner's
    code runs. fenced: fence.inventory(), what the learner's code may not open or import.
    protections: platform_probe.probe(), what to set up. files: (landlock.plan(), the run's
    scratch folder), the folders the learner's code may read and the one it may write.
    cgroup: the pids cgroup folder this child joins (pids_cgroup), or None. inputs: per
    lesson, its make_inputs(), made once by the worker (else here).
    """
    protections = protections or probe()
    # The fork bound: before anything else, so that no learner process escapes it.
    _confined["forks"] = bool(cgroup) and pids_cgroup.enter(cgroup)
    rules, scratch = files or (None, None)
    try:
        os.setpgid(0, 0)
        job_fd, result_fd, marks_fd = _arrange_fds(job_fd, result_fd, output_fd)
        sys.stdin = open(os.devnull)  # noqa: SIM115 (the child's stdin for good)
        sys.stdout = os.fdopen(1, "w", buffering=1, errors="replace", closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, errors="replace", closefd=False)
        # A crash or a hang leaves a traceback before the frame: the worker shows the learner's line.
        faulthandler.enable(file=result_fd, all_threads=False)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.set_wakeup_fd(
            -1
        )  # the worker's (closed above): a learner's handler must not write there
        sys.setrecursionlimit(RECURSION_LIMIT)
        torch.set_num_threads(1)
        # Inputs are made before any learner code runs, so nothing it patches can reach them.
        if inputs is None:
            inputs = {lesson: module.make_inputs() for lesson, module in checks_modules.items()}
        probe_tools.install_traps()
        _warm_up(warm or (), checks_modules, inputs, job_fd)
        _forget_warm_up(warm)
        data_limit = _limit_resources(memory_limit_bytes(), protections)
        cwd = os.getcwd()
        ruleset = _prepare_files(protections, rules, scratch)
        _confine(list(protected), protections)
        if _confined["network"] or ruleset is not None:
            sys.addaudithook(_watch)
        if fenced is not None:
            fence.install(fenced, _compile_watch(result_fd))
        job = _read_job(job_fd)
        if job is None:
            _exit(0)  # the worker is shutting down or replacing us
        job["folder"] = own_folder.enter(job, cwd)
        _restrict_files(ruleset, job["filename"], cwd, job["folder"])
        tokens = [bytes.fromhex(token) for token in job.pop("tokens")]
    except BaseException as exc:  # the harness itself failed before any step: report, do not hang
        _send(result_fd, b"", _harness_failure(exc))
        _exit(0)
    _run_steps(
        job,
        tokens,
        marks_fd,
        result_fd,
        checks_modules[job["lesson"]],
        inputs[job["lesson"]],
        data_limit,
    )
    _exit(0)


def _warm_up(warm, checks_modules: dict, inputs: dict, job_fd: int | None = None) -> None:
    """Run each lesson's checked steps once on its warm-up file (warmup.py, or the starter),
    before any learner code: never on its reference, which would stay in the child's heap.
    Code runs about twice as slowly the first time in a fresh fork (single-head: 4.8 ms, then
    2.2): paid here, while the child waits, that is not in the learner's run. A job that comes
    meanwhile waits for one step at most.
    warm: (lesson id, file name, source, compiled code, step ids) per lesson."""
    streams = sys.stdout, sys.stderr
    rng = torch.get_rng_state()  # the reference's modules draw their initial weights from it
    quiet = None
    try:
        quiet = sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (closed below)
        for lesson, filename, source, code, steps in warm:
            for step in steps:
                if job_fd is not None and select.select([job_fd], [], [], 0)[0]:
                    return
                _run(
                    {"source": source, "filename": filename},
                    step,
                    code,
                    checks_modules[lesson],
                    inputs[lesson],
                )
    except BaseException:
        pass  # only the learner's run is slower
    finally:
        sys.stdout, sys.stderr = streams
        if quiet is not None:
            quiet.close()
        torch.set_rng_state(rng)
        sys.modules.pop("learner", None)
        # load_learner put each warm-up file's lines in linecache (for torch.jit.script): none
        # is the learner's own, and the learner's code must find only its own file there.
        for _, filename, *_ in warm:
            linecache.cache.pop(filename, None)
        _collect()


def warm_up(warm, checks_modules: dict, inputs: dict) -> None:
    """_warm_up in the worker itself (`grade`): its children are then forked warm."""
    _warm_up(warm, checks_modules, inputs)
    _forget_warm_up(None)


def _forget_warm_up(warm) -> None:
    """Nothing of the reference may stay reachable from the learner's code (gc.get_objects(),
    the frames above it): its source and code objects are freed here, not merely unused."""
    if warm is not None:
        warm.clear()  # the runs' tuples hold the only references: freed here (no cycle)
    _codes[:] = [None, frozenset()]


def _run_steps(
    job: dict, tokens: list[bytes], marks_fd: int, result_fd: int, checks_module, inputs, data_limit
) -> None:
    """One frame per step, in order. Each step gets a fresh module and the whole time limit,
    counted from when it starts here; the worker counts from the previous frame, a little later.
    Between two steps' output goes a marker (MAGIC and the step's token): the worker splits
    the output there, so each step shows only what it printed."""
    streams = sys.stdout, sys.stderr
    state = _torch_state()
    code = None
    deadline = float(job.get("deadline", _monotonic() + 3.0))  # the first step's: set by the worker
    for i, step in enumerate(job["steps"]):
        if i:
            # The last step's module holds what the file built (its functions' globals make a
            # cycle): free it, or a file that builds a big tensor on import has it twice.
            sys.modules.pop("learner", None)
            own_folder.forget_modules(job.get("folder"))
            _collect()
            deadline = _monotonic() + float(job.get("timeout", 3.0))
            _restore(state, streams)
            _restore_headroom(data_limit)
            _network_tried.clear()
            _metadata_tried.clear()
        try:
            _dump_later(max(deadline - _monotonic() - DUMP_MARGIN, 0.01), file=result_fd)
            if code is None:
                code = compile_learner(job["source"], job["filename"])
            message, blob = _run(job, step, code, checks_module, inputs)
        except LearnerImportError as exc:  # the file does not compile: the same for every step
            message, blob = (
                protocol.ImportFailed(protocol.LearnerFailure.from_dict(exc.failure)),
                b"",
            )
        except BaseException as exc:  # the harness itself failed: report, do not hang
            message, blob = _harness_failure(exc), b""
        _flush(streams)  # the step's prints reach the pipe before its marker
        if i < len(tokens) - 1:
            _mark(marks_fd, tokens[i])
        _send(result_fd, tokens[i], message, blob)


def _torch_state() -> tuple:
    return torch.get_default_dtype(), torch.is_grad_enabled(), sys.getrecursionlimit()


def _restore(state: tuple, streams: tuple) -> None:
    """What a previous step's learner code may have changed and the next step's code relies on."""
    dtype, grad, recursion = state
    try:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        sys.setrecursionlimit(recursion)
        sys.stdout, sys.stderr = streams
    except BaseException:
        pass  # the learner replaced these too: the step runs in what is left


def _flush(streams: tuple) -> None:
    for stream in streams:
        with contextlib.suppress(BaseException):
            stream.flush()


# What the harness's own thread or process start raises once the learner's code holds every
# thread or process it may have (faulthandler's watchdog, a pool): the learner's, not ours.
_NO_THREADS = ("can't start new thread", "unable to start watchdog thread")


def _out_of_threads(exc: BaseException) -> bool:
    if isinstance(exc, BlockingIOError):
        return True  # EAGAIN from clone: the pids bound, or RLIMIT_NPROC
    try:
        return type(exc) is RuntimeError and any(m in _text(exc) for m in _NO_THREADS)
    except Exception:
        return False


def _harness_failure(exc: BaseException) -> protocol.Report:
    if probe_tools.is_out_of_memory(exc):
        return protocol.Raised(protocol.LearnerFailure(protocol.Failure("MemoryError", "")))
    if _out_of_threads(exc):
        failure = protocol.Failure(type(exc).__name__, _text(exc, 300))
        return protocol.Raised(protocol.LearnerFailure(failure, confined="processes"))
    return protocol.HarnessError(f"{type(exc).__name__}: {_text(exc, 300)}")


def _send(result_fd: int, token: bytes, message: protocol.Report, blob: bytes = b"") -> None:
    """Write one step's frame. Threads the learner started end with the child."""
    try:
        _cancel_dump()  # a late dump must not cut into the frame
        _release_headroom()
        try:
            payload = codec.pack_payload(message.to_json(), blob, _dumps)
        except BaseException as exc:
            payload = codec.pack_payload(_harness_failure(exc).to_json(), b"", _dumps)
        _write_all(result_fd, codec.pack_frame(token, payload))
    except OSError:
        _exit(EXIT_NO_CHANNEL)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[_write(fd, view) :]


# ------------------------------------------------------------------ read by the worker

# The dump comes from the child, so anything may be in it: a line number is read only when it
# has at most 9 digits (int() of a long digit string raises), and a line is read at most so far.
_DUMP_FRAME = re.compile(r'^\s+File "(.*)", line (\d{1,9}) in (.+)$')
_DUMP_LINE = 4096  # chars of a dump line looked at: faulthandler's own are far shorter


def dumped_frames(text: str, filename: str, source: str) -> tuple[list[dict], bool]:
    """The learner's frames, innermost last, from the faulthandler report a child left before
    its frame (crash or timeout); and whether that stack was a runaway recursion."""
    blocks, block = [], None
    if not isinstance(text, str):
        return [], False
    for line in text.splitlines():
        line = line[:_DUMP_LINE]
        if line.startswith(("Thread 0x", "Current thread 0x", "Stack (")):
            block = []
            blocks.append(block)
        elif block is not None and line.startswith(" "):
            block.append(line)
    # The main thread is the one running the harness (sandbox.serve_one).
    main = next(
        (b for b in blocks if any("sandbox.py" in line for line in b)), blocks[0] if blocks else []
    )
    lines = source.splitlines()
    frames = []
    for line in reversed(main):  # faulthandler lists the innermost call first
        m = _DUMP_FRAME.match(line)
        if m and m.group(1) == filename:
            n = int(m.group(2))
            code = lines[n - 1].rstrip()[:_DUMP_LINE] if 0 < n <= len(lines) else ""
            frames.append({"line": n, "function": m.group(3)[:200], "code": code})
    runaway = len(frames) >= 50 and any(line.strip() == "..." for line in main)
    return frames[-8:], runaway


# Where torch.compile spends its first call: tracing (dynamo, which stays in the stack under
# everything it calls) and compiling (inductor). Not _functorch: torch.func.vmap lives there too.
_COMPILER_FRAMES = ("/torch/_dynamo/", "/torch/_inductor/")
# Written on the result pipe, before the step's frame, when the step imports torch's compiler
# (the worker never does): the dump may not show it, cut at 100 frames deep in its imports.
COMPILE_MARK = "attn-tutor: torch.compile is compiling"


def _compile_watch(result_fd: int):
    said = []

    def on_import(name) -> None:
        if not said and name in ("torch._dynamo", "torch._inductor"):
            said.append(name)
            with contextlib.suppress(OSError):
                _write(result_fd, f"\n{COMPILE_MARK}\n".encode())

    return on_import


def compiling(dump: str, source: str) -> str | None:
    """Was the code that ran out of time compiling with torch.compile? "stack" when it imported
    torch's compiler in this step (COMPILE_MARK) or its frames are in the stack faulthandler
    dumped, "source" when the file calls torch.compile, else None."""
    if COMPILE_MARK in dump:
        return "stack"
    for line in dump.splitlines():
        if line.lstrip().startswith('File "') and any(
            fragment in line for fragment in _COMPILER_FRAMES
        ):
            return "stack"
    return "source" if _uses_torch_compile(source) else None


@functools.lru_cache(maxsize=8)
def _uses_torch_compile(source: str) -> bool:
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "compile"
            and isinstance(node.value, ast.Name)
            and node.value.id == "torch"
        ):
            return True  # torch.compile(...), @torch.compile
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "torch"
            and any(a.name == "compile" for a in node.names)
        ):
            return True
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "optimize"
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "_dynamo"
        ):
            return True  # torch._dynamo.optimize(...)
    return False


def _read_job(fd: int) -> dict | None:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks)) if chunks else None


def _mark(marks_fd: int, token: bytes) -> None:
    try:
        _write_all(marks_fd, codec.MAGIC + token)
    except OSError:
        pass  # the learner's code closed it: the worker gives all output to the step it has


def _learner_at_fault(exc: BaseException, filename: str) -> bool:
    if isinstance(
        exc, (SystemExit, KeyboardInterrupt, RecursionError)
    ) or probe_tools.is_out_of_memory(exc):
        return True
    return any(fs.filename == filename for fs in traceback.extract_tb(exc.__traceback__))


_codes: list = [None, frozenset()]  # (code object, its code_ids): once per file, not per step


def _code_ids(code) -> frozenset[int]:
    if _codes[0] is not code:
        _codes[:] = [code, origin.code_ids(code)]  # holding code keeps the ids valid
    return _codes[1]


def _run(job: dict, step: str, code, checks_module, inputs) -> tuple[protocol.Report, bytes]:
    """The step's message, and the blob its tensors are in."""
    spec = checks_module.STEPS[step]
    try:
        module = load_learner(job["source"], job["filename"], code)
    except LearnerImportError as exc:
        return protocol.ImportFailed(protocol.LearnerFailure.from_dict(exc.failure)), b""
    ctx = probe_tools.ProbeContext(module, job["filename"], job["source"], _code_ids(code))
    ctx.params = (job.get("params") or {}).get(
        step
    ) or {}  # an experiment's settings, chosen in the app
    ctx.views = job.get("views", True)
    try:
        for name in spec.functions:  # each of the step's names, whether or not its probe gets it
            try:
                ctx.get(name)
            except probe_tools.Missing:
                pass  # the probe says so, if it needs the name
        outputs = spec.probe(ctx, inputs)
        encoded, blob = codec.encode(outputs)
    except probe_tools.Missing as exc:
        return protocol.Missing(exc.name), b""
    except probe_tools.Foreign as exc:
        return protocol.Foreign(exc.name, _text(exc.origin, 300)), b""
    except probe_tools.LearnerFailure as exc:
        return protocol.Raised(protocol.LearnerFailure.from_dict(exc.failure), bool(exc.todo)), b""
    except BaseException as exc:
        # The probe touched learner code outside ctx.call (an attribute, a method): the
        # learner's fault when their file is in the traceback, the tutor's otherwise.
        if not _learner_at_fault(exc, job["filename"]):
            raise
        traceback.clear_frames(exc.__traceback__)
        return protocol.Raised(
            protocol.LearnerFailure.from_dict(
                describe_exception(exc, job["filename"], job["source"])
            )
        ), b""
    return protocol.Outputs(encoded, sorted(ctx.kernels)), blob
