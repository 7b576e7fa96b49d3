"""Landlock (Linux >= 5.13): the kernel confines a child's files, whatever its code calls
(open(), a subprocess, raw syscalls through ctypes), and the confinement passes to every
process it starts.

- read (and run programs): what Python, torch and NumPy need: the interpreter's prefixes,
  sys.path but the working folder, /usr, /lib, /bin, a few files of /etc and /dev, /proc;
  and the learner's file (in `grade`, the student's own folder: their other files);
- write: only the run's scratch folder (its working folder and TMPDIR), and /dev/null;
- never: the tutor's reference/ and lessons/ (fence.protected_folders), the workspace's state
  and answers, other files of the learner's folder (they are not under any rule).

Landlock grants by folder: a folder to be read that holds a protected one (the checkout's
root, site-packages holding tutor/reference) is granted entry by entry instead, all but the
protected ones (plan, in the worker, once).
With ABI 6, signals and abstract UNIX sockets are scoped too: a child cannot signal any
process outside its own domain (the worker, the UI, the other children of the run, the
spares), and each child makes a domain of its own.

Two halves: prepare() in the spare, ahead of the job (a ruleset with every rule but the
learner's file); restrict() when the job comes (that file's rule, then restrict_self).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
import struct
import sys
import sysconfig
from pathlib import Path

from tutor.engine.confine import syscalls as sc

READ = sc.FS_EXECUTE | sc.FS_READ_FILE | sc.FS_READ_DIR
# Files read outside the granted folders: the dynamic loader's cache, time zones, user names.
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/mime.types",
)
SYSTEM_DIRS = (
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/sys/devices/system/cpu",
    "/usr/share/zoneinfo",
)
# All of /proc, read only: what another process's entries would give away (its fds, memory,
# environment, root and cwd links) is behind ptrace's access check, and Landlock refuses that
# towards any process outside the child's domain. A fork of the learner's has its own pid there.
PROC = ("/proc",)
DEV_READ = ("/dev/urandom", "/dev/random", "/dev/zero")
DEV_WRITE = ("/dev/null",)
SKIP_IN_SPLIT = (".git", ".hg", ".svn")  # a checkout's history holds the reference too


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def read_roots() -> list[str]:
    """Folders to read: the interpreter's and the packages', the system's. Not the working
    folder (sys.path's '' or cwd: where attn-tutor was started, the workspace beside it)."""
    cwd = os.getcwd()
    roots = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
    ]
    for scheme_key in ("stdlib", "platstdlib", "purelib", "platlib"):
        with contextlib.suppress(KeyError):
            roots.append(sysconfig.get_paths()[scheme_key])
    roots += [
        p
        for p in sys.path
        if p and os.path.isabs(p) and os.path.realpath(p) != os.path.realpath(cwd)
    ]
    roots += [str(Path(__file__).resolve().parents[2])]  # the tutor package
    return roots + list(SYSTEM_DIRS)


def plan(denied: list[str]) -> list[tuple[str, int]]:
    """(path, rights) for every read rule, worker side: each read root, split where it holds
    a denied folder. Paths are real paths (Landlock judges the real hierarchy)."""
    denied_real = sorted({os.path.realpath(d) for d in denied})
    rules: dict[str, int] = {}
    seen: set[str] = set()

    def add(path: str, is_dir: bool) -> None:
        rules[path] = rules.get(path, 0) | (READ if is_dir else READ & sc.FS_FILE_RIGHTS)

    def grant(path: str) -> None:
        real = os.path.realpath(path)
        if real in seen:
            return
        seen.add(real)
        try:
            st = os.stat(real)
        except OSError:
            return
        if any(_under(real, d) for d in denied_real):
            return
        if not any(_under(d, real) for d in denied_real):
            add(real, stat.S_ISDIR(st.st_mode))
            return
        try:
            names = os.listdir(real)
        except OSError:
            return
        for name in names:
            if name not in SKIP_IN_SPLIT:
                grant(os.path.join(real, name))

    for root in read_roots():
        grant(root)
    for path in ETC_FILES + PROC + DEV_READ:
        grant(path)
    return sorted(rules.items())


class Unavailable(OSError):
    pass


class Ruleset:
    """A prepared ruleset: every rule but the learner's file. Child side."""

    def __init__(self, abi: int, arch: sc.Arch):
        self.abi, self.arch = abi, arch
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.syscall.restype = ctypes.c_long
        fs = 0
        for version, rights in sc.FS_BY_ABI.items():
            if abi >= version:
                fs |= rights
        self.handled = fs
        net = sc.NET_BIND_TCP | sc.NET_CONNECT_TCP if abi >= 4 else 0
        scoped = sc.SCOPE_ABSTRACT_UNIX_SOCKET | sc.SCOPE_SIGNAL if abi >= 6 else 0
        attr = struct.pack("QQQ", fs, net, scoped)[: 24 if abi >= 6 else 16 if abi >= 4 else 8]
        buf = ctypes.create_string_buffer(attr, len(attr))
        self.fd = self._call(
            arch.landlock_create_ruleset, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)
        )

    def _call(self, nr: int, *args) -> int:
        result = self.libc.syscall(ctypes.c_long(nr), *args)
        if result < 0:
            err = ctypes.get_errno()
            raise Unavailable(err, os.strerror(err))
        return int(result)

    def allow(self, path: str, rights: int) -> bool:
        """Add a rule; False when the path cannot be opened (gone since the plan)."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                rights &= sc.FS_FILE_RIGHTS
            rights &= self.handled
            attr = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)  # packed struct
            self._call(
                self.arch.landlock_add_rule,
                ctypes.c_int(self.fd),
                ctypes.c_int(sc.LANDLOCK_RULE_PATH_BENEATH),
                attr,
                ctypes.c_uint32(0),
            )
            return True
        finally:
            os.close(fd)

    def restrict(self) -> None:
        """For this process and all it starts, for good. Needs no_new_privs (set with seccomp)."""
        try:
            self._call(self.arch.landlock_restrict_self, ctypes.c_int(self.fd), ctypes.c_uint32(0))
        finally:
            os.close(self.fd)
            self.fd = -1


def prepare(abi: int, arch: sc.Arch, rules: list[tuple[str, int]], scratch: str) -> Ruleset:
    """In the spare, before its job: the read rules, the scratch folder, /dev/null."""
    ruleset = Ruleset(abi, arch)
    for path, rights in rules:
        ruleset.allow(path, rights)
    for path in DEV_WRITE:
        ruleset.allow(path, sc.FS_READ_FILE | sc.FS_WRITE_FILE | sc.FS_TRUNCATE)
    ruleset.allow(scratch, ruleset.handled)
    return ruleset


def restrict(ruleset: Ruleset, learner_file: str | None, folder: str | None = None) -> None:
    """At the job: the learner's own file may be read, and their own folder where the job
    names one (a graded student's: their other files, never another student's); then the
    rules hold."""
    if learner_file:
        ruleset.allow(learner_file, sc.FS_READ_FILE)
    if folder:
        ruleset.allow(folder, sc.FS_READ_FILE | sc.FS_READ_DIR)
    ruleset.restrict()
