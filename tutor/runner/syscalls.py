"""The Linux numbers the runner's protections use, named, in one place: system calls per
architecture, prctl options, seccomp's BPF, Landlock's flags. Standard library only, no torch:
the UI's probe (platform_probe) reads this too.

Numbers come from the kernel's uapi headers (asm/unistd_64.h for x86_64, asm-generic/unistd.h
for aarch64, linux/prctl.h, linux/seccomp.h, linux/filter.h, linux/landlock.h).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arch:
    audit: int  # AUDIT_ARCH_*: seccomp_data.arch for this ABI
    kill: int
    tkill: int
    tgkill: int
    rt_sigqueueinfo: int
    rt_tgsigqueueinfo: int
    ptrace: int
    process_vm_writev: int
    pidfd_send_signal: int
    pidfd_getfd: int
    socket: int
    landlock_create_ruleset: int
    landlock_add_rule: int
    landlock_restrict_self: int

    @property
    def signal_calls(self) -> tuple[int, ...]:
        """Calls that send a signal, their first argument a pid (or -pgid, or -1)."""
        return self.kill, self.tkill, self.tgkill, self.rt_sigqueueinfo, self.rt_tgsigqueueinfo

    @property
    def refused_calls(self) -> tuple[int, ...]:
        """Calls refused outright in a child: reading or writing another process, stealing its fds."""
        return self.ptrace, self.process_vm_writev, self.pidfd_send_signal, self.pidfd_getfd


# platform.machine() -> its table. The newer calls (pidfd_*, landlock_*) have the generic
# numbers on every architecture.
ARCHES = {
    "x86_64": Arch(
        audit=0xC000003E,
        kill=62,
        tkill=200,
        tgkill=234,
        rt_sigqueueinfo=129,
        rt_tgsigqueueinfo=297,
        ptrace=101,
        process_vm_writev=311,
        pidfd_send_signal=424,
        pidfd_getfd=438,
        socket=41,
        landlock_create_ruleset=444,
        landlock_add_rule=445,
        landlock_restrict_self=446,
    ),
    "aarch64": Arch(
        audit=0xC00000B7,
        kill=129,
        tkill=130,
        tgkill=131,
        rt_sigqueueinfo=138,
        rt_tgsigqueueinfo=240,
        ptrace=117,
        process_vm_writev=271,
        pidfd_send_signal=424,
        pidfd_getfd=438,
        socket=198,
        landlock_create_ruleset=444,
        landlock_add_rule=445,
        landlock_restrict_self=446,
    ),
}
ARCHES["arm64"] = ARCHES["aarch64"]
X32_BIT = 0x40000000  # __X32_SYSCALL_BIT: the x32 ABI's calls on x86_64

# prctl(2) options
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_GET_SECCOMP = 21
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522

# Classic BPF, as seccomp runs it (linux/filter.h): opcodes and seccomp_data offsets.
BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS: A = seccomp_data[k]
BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
BPF_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
BPF_RET_K = 0x06  # BPF_RET | BPF_K
DATA_NR, DATA_ARCH, DATA_ARG0 = (
    0,
    4,
    16,
)  # offsetof(struct seccomp_data, nr / arch / args[0]), low word
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000  # | errno
AF_UNIX = 1

# Landlock (linux/landlock.h)
LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1
# What each ABI version adds to the file-system rights (index: ABI).
FS_BY_ABI = {1: (1 << 13) - 1, 2: FS_REFER, 3: FS_TRUNCATE, 5: FS_IOCTL_DEV}
# The rights a rule on a file (not a folder) may grant.
FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
