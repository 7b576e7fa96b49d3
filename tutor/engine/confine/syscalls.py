"""The Linux numbers the runner's protections use, named, in one place: system calls per
architecture, prctl options, seccomp's BPF, Landlock's flags. Standard library only, no torch:
the UI's probe (platform_probe) reads this too.

Numbers come from the kernel's uapi headers (asm/unistd_64.h for x86_64, asm-generic/unistd.h
for aarch64, linux/prctl.h, linux/seccomp.h, linux/filter.h, linux/landlock.h).
"""

from __future__ import annotations

from dataclasses import dataclass

from tutor.engine.confine.syscall_numbers import AARCH64, X86_64

# What a confined child may call, by group, with why (docs/confinement.md says the same for
# people). Every call not named here is answered ENOSYS: a kernel feature added next year is
# closed by default, and a library meets it as on a kernel that lacks it (glibc falls back from
# clone3 to clone, liburing gives up on io_uring). Some of these have rules on their
# arguments in child_confinement.seccomp_program (socket, clone, the signal calls, prlimit64, ioctl, fcntl).
ALLOWED = {
    "memory": (
        "the allocator, mappings, shared libraries (glibc, torch, NumPy)",
        "brk mmap munmap mremap mprotect madvise msync mincore membarrier get_mempolicy mseal map_shadow_stack",
    ),
    "files": (
        "reading and writing files and folders: which paths is Landlock's rule, how much is RLIMIT_FSIZE's",
        "read write pread64 pwrite64 readv writev preadv pwritev preadv2 pwritev2 open openat openat2 creat close close_range "
        "lseek stat fstat lstat newfstatat statx statfs fstatfs access faccessat faccessat2 readlink readlinkat "
        "getdents getdents64 getcwd chdir fchdir mkdir mkdirat rmdir unlink unlinkat rename renameat renameat2 "
        "link linkat symlink symlinkat mknod mknodat truncate ftruncate fallocate fsync fdatasync fadvise64 flock "
        "dup dup2 dup3 pipe pipe2 sendfile copy_file_range splice tee umask getxattr lgetxattr fgetxattr "
        "listxattr llistxattr flistxattr",
    ),
    "fds": (
        "ioctl and fcntl (the calls that change a file's owner for signals or its flags are refused by argument), polling, events",
        "ioctl fcntl select pselect6 poll ppoll epoll_create epoll_create1 epoll_ctl epoll_wait epoll_pwait epoll_pwait2 "
        "eventfd eventfd2 timerfd_create timerfd_settime timerfd_gettime signalfd signalfd4",
    ),
    "processes": (
        "threads (torch's pools, faulthandler's watchdog, threading) and programs (subprocess: cat, the C++ compiler torch.compile runs); clone may not make namespaces; clone3 is answered ENOSYS so glibc falls back to clone, whose flags the filter can read",
        "clone fork vfork execve execveat exit exit_group wait4 waitid set_tid_address set_robust_list futex futex_waitv "
        "rseq sched_yield sched_getaffinity sched_getparam sched_getscheduler sched_get_priority_max sched_get_priority_min "
        "getpriority setpgid setsid getpid getppid gettid getuid geteuid getgid getegid getgroups getresuid getresgid "
        "getpgrp getpgid getsid capget capset prctl arch_prctl prlimit64 getrlimit setrlimit getrusage times uname sysinfo getcpu getrandom",
    ),
    "signals": (
        "handlers and masks of its own; sending is allowed but not to the tutor's processes (by argument)",
        "rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigtimedwait rt_sigsuspend sigaltstack pause alarm restart_syscall "
        "kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo",
    ),
    "time": (
        "clocks, sleeps and timers",
        "clock_gettime clock_getres clock_nanosleep nanosleep gettimeofday time getitimer setitimer "
        "timer_create timer_settime timer_gettime timer_getoverrun timer_delete",
    ),
    "sockets": (
        "UNIX sockets only: socket() and socketpair() of any other family are refused (EACCES), so these reach no network",
        "socket socketpair connect bind listen accept accept4 sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg shutdown "
        "getsockname getpeername getsockopt setsockopt",
    ),
    "confinement": (
        "the child confines itself further after the filter: Landlock's rules, another filter",
        "landlock_create_ruleset landlock_add_rule landlock_restrict_self seccomp",
    ),
}
REFUSED = {
    "metadata": (
        "Landlock does not govern a file's mode, owner, times or attributes: a child could make the workspace, another student's file or the output folder unreadable",
        "chmod fchmod fchmodat fchmodat2 chown fchown lchown fchownat utime utimes utimensat futimesat "
        "setxattr lsetxattr fsetxattr removexattr lremovexattr fremovexattr setxattrat removexattrat",
    ),
    "keyring": (
        "the keyring of the user who runs the tutor: readable and writable by a child, and a key planted there outlives the run",
        "keyctl add_key request_key",
    ),
    "memory outside the limit": (
        "memory that RLIMIT_DATA and RSS do not count, or that outlives the run",
        "memfd_create memfd_secret shmget shmat shmctl shmdt msgget msgsnd msgrcv msgctl semget semop semtimedop semctl "
        "mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr",
    ),
    "other processes": (
        "reading, writing or signalling another process",
        "ptrace process_vm_readv process_vm_writev pidfd_open pidfd_send_signal pidfd_getfd",
    ),
}


# The refused calls answer EPERM, not ENOSYS: the call exists, this child may not make it, and
# code that expects a refusal (filelock suppresses PermissionError from fchmod) goes on.


@dataclass(frozen=True)
class Arch:
    audit: int  # AUDIT_ARCH_*: seccomp_data.arch for this ABI
    numbers: dict  # call name -> its number on this ABI

    def __getattr__(self, name: str) -> int:
        try:
            return self.__dict__["numbers"][name]
        except KeyError:
            raise AttributeError(name) from None

    def calls(self, groups: dict) -> list[int]:
        """The numbers of the calls of these groups this ABI has."""
        names = {name for _, listed in groups.values() for name in listed.split()}
        return sorted(self.numbers[n] for n in names if n in self.numbers)

    @property
    def signal_calls(self) -> tuple[int, ...]:
        """Calls that send a signal, their first argument a pid (or -pgid, or -1)."""
        return self.kill, self.tkill, self.tgkill, self.rt_sigqueueinfo, self.rt_tgsigqueueinfo


# platform.machine() -> its table.
ARCHES = {
    "x86_64": Arch(audit=0xC000003E, numbers=X86_64),
    "aarch64": Arch(audit=0xC00000B7, numbers=AARCH64),
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
SECCOMP_RET_LOG = 0x7FFC0000
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

# More of BPF and seccomp for the allow-list.
BPF_JA = 0x05  # BPF_JMP | BPF_JA: pc += k (32 bits: far jumps)
DATA_ARG1 = 24  # offsetof(struct seccomp_data, args[1]), low word
# clone() may not make namespaces (sched.h): NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
CLONE_NEW_ANY = (
    0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
)
# ioctl commands refused: typing into a terminal (TIOCSTI, TIOCLINUX), a file's owner for SIGIO
# (FIOSETOWN, SIOCSPGRP: the signal would reach the tutor), inode flags (FS_IOC_SETFLAGS, its
# 32-bit form, FS_IOC_FSSETXATTR: metadata, as chmod).
IOCTL_REFUSED = (0x5412, 0x541C, 0x8901, 0x8902, 0x40086602, 0x40046602, 0x401C5820)
# fcntl commands refused: F_SETOWN, F_SETOWN_EX, F_SETSIG (SIGIO to another process).
FCNTL_REFUSED = (8, 15, 10)
