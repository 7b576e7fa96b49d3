"""The Linux numbers the runner's protections use, named, in one place: system calls per
architecture, prctl options, seccomp's BPF, Landlock's flags. Standard library only, no torch:
the UI's probe (platform_probe) reads this too.

Numbers come from the kernel's uapi headers (asm/unistd_64.h for x86_64, asm-generic/unistd.h
for aarch64, linux/prctl.h, linux/seccomp.h, linux/filter.h, linux/landlock.h).
"""

from __future__ import annotations

from dataclasses import dataclass

# What a confined child may call, by group, with why (docs/confinement.md says the same for
# people). Every call not named here is answered ENOSYS: a kernel feature added next year is
# closed by default, and a library meets it as on a kernel that lacks it (glibc falls back from
# clone3 to clone, liburing gives up on io_uring). Some of these have rules on their
# arguments in sandbox._seccomp_program (socket, clone, the signal calls, prlimit64, ioctl, fcntl).
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

# Numbers of every call named above, per ABI: x86_64 from asm/unistd_64.h, aarch64 from
# asm-generic/unistd.h (it lacks the old calls: open, stat, fork... glibc uses the *at ones).
# 451 and up are one table for every architecture.
_X86_64 = {
    "read": 0,
    "write": 1,
    "open": 2,
    "close": 3,
    "stat": 4,
    "fstat": 5,
    "lstat": 6,
    "poll": 7,
    "lseek": 8,
    "mmap": 9,
    "mprotect": 10,
    "munmap": 11,
    "brk": 12,
    "rt_sigaction": 13,
    "rt_sigprocmask": 14,
    "rt_sigreturn": 15,
    "ioctl": 16,
    "pread64": 17,
    "pwrite64": 18,
    "readv": 19,
    "writev": 20,
    "access": 21,
    "pipe": 22,
    "select": 23,
    "sched_yield": 24,
    "mremap": 25,
    "msync": 26,
    "mincore": 27,
    "madvise": 28,
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "dup": 32,
    "dup2": 33,
    "pause": 34,
    "nanosleep": 35,
    "getitimer": 36,
    "alarm": 37,
    "setitimer": 38,
    "getpid": 39,
    "sendfile": 40,
    "socket": 41,
    "connect": 42,
    "accept": 43,
    "sendto": 44,
    "recvfrom": 45,
    "sendmsg": 46,
    "recvmsg": 47,
    "shutdown": 48,
    "bind": 49,
    "listen": 50,
    "getsockname": 51,
    "getpeername": 52,
    "socketpair": 53,
    "setsockopt": 54,
    "getsockopt": 55,
    "clone": 56,
    "fork": 57,
    "vfork": 58,
    "execve": 59,
    "exit": 60,
    "wait4": 61,
    "kill": 62,
    "uname": 63,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "shmdt": 67,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "fcntl": 72,
    "flock": 73,
    "fsync": 74,
    "fdatasync": 75,
    "truncate": 76,
    "ftruncate": 77,
    "getdents": 78,
    "getcwd": 79,
    "chdir": 80,
    "fchdir": 81,
    "rename": 82,
    "mkdir": 83,
    "rmdir": 84,
    "creat": 85,
    "link": 86,
    "unlink": 87,
    "symlink": 88,
    "readlink": 89,
    "chmod": 90,
    "fchmod": 91,
    "chown": 92,
    "fchown": 93,
    "lchown": 94,
    "umask": 95,
    "gettimeofday": 96,
    "getrlimit": 97,
    "getrusage": 98,
    "sysinfo": 99,
    "times": 100,
    "ptrace": 101,
    "getuid": 102,
    "getgid": 104,
    "geteuid": 107,
    "getegid": 108,
    "setpgid": 109,
    "getppid": 110,
    "getpgrp": 111,
    "setsid": 112,
    "getgroups": 115,
    "getresuid": 118,
    "getresgid": 120,
    "getpgid": 121,
    "getsid": 124,
    "capget": 125,
    "capset": 126,
    "rt_sigpending": 127,
    "rt_sigtimedwait": 128,
    "rt_sigqueueinfo": 129,
    "rt_sigsuspend": 130,
    "sigaltstack": 131,
    "utime": 132,
    "mknod": 133,
    "statfs": 137,
    "fstatfs": 138,
    "getpriority": 140,
    "sched_getparam": 143,
    "sched_getscheduler": 145,
    "sched_get_priority_max": 146,
    "sched_get_priority_min": 147,
    "prctl": 157,
    "arch_prctl": 158,
    "setrlimit": 160,
    "gettid": 186,
    "setxattr": 188,
    "lsetxattr": 189,
    "fsetxattr": 190,
    "getxattr": 191,
    "lgetxattr": 192,
    "fgetxattr": 193,
    "listxattr": 194,
    "llistxattr": 195,
    "flistxattr": 196,
    "removexattr": 197,
    "lremovexattr": 198,
    "fremovexattr": 199,
    "tkill": 200,
    "time": 201,
    "futex": 202,
    "sched_getaffinity": 204,
    "epoll_create": 213,
    "getdents64": 217,
    "set_tid_address": 218,
    "restart_syscall": 219,
    "semtimedop": 220,
    "fadvise64": 221,
    "timer_create": 222,
    "timer_settime": 223,
    "timer_gettime": 224,
    "timer_getoverrun": 225,
    "timer_delete": 226,
    "clock_gettime": 228,
    "clock_getres": 229,
    "clock_nanosleep": 230,
    "exit_group": 231,
    "epoll_wait": 232,
    "epoll_ctl": 233,
    "tgkill": 234,
    "utimes": 235,
    "get_mempolicy": 239,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
    "waitid": 247,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "openat": 257,
    "mkdirat": 258,
    "mknodat": 259,
    "fchownat": 260,
    "futimesat": 261,
    "newfstatat": 262,
    "unlinkat": 263,
    "renameat": 264,
    "linkat": 265,
    "symlinkat": 266,
    "readlinkat": 267,
    "fchmodat": 268,
    "faccessat": 269,
    "pselect6": 270,
    "ppoll": 271,
    "set_robust_list": 273,
    "splice": 275,
    "tee": 276,
    "utimensat": 280,
    "epoll_pwait": 281,
    "signalfd": 282,
    "timerfd_create": 283,
    "eventfd": 284,
    "fallocate": 285,
    "timerfd_settime": 286,
    "timerfd_gettime": 287,
    "accept4": 288,
    "signalfd4": 289,
    "eventfd2": 290,
    "epoll_create1": 291,
    "dup3": 292,
    "pipe2": 293,
    "preadv": 295,
    "pwritev": 296,
    "rt_tgsigqueueinfo": 297,
    "recvmmsg": 299,
    "prlimit64": 302,
    "sendmmsg": 307,
    "getcpu": 309,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "renameat2": 316,
    "seccomp": 317,
    "getrandom": 318,
    "memfd_create": 319,
    "execveat": 322,
    "membarrier": 324,
    "copy_file_range": 326,
    "preadv2": 327,
    "pwritev2": 328,
    "statx": 332,
    "rseq": 334,
    "pidfd_send_signal": 424,
    "pidfd_open": 434,
    "close_range": 436,
    "openat2": 437,
    "pidfd_getfd": 438,
    "faccessat2": 439,
    "epoll_pwait2": 441,
    "landlock_create_ruleset": 444,
    "landlock_add_rule": 445,
    "landlock_restrict_self": 446,
    "memfd_secret": 447,
    "futex_waitv": 449,
    "fchmodat2": 452,
    "map_shadow_stack": 453,
    "mseal": 462,
    "setxattrat": 463,
    "removexattrat": 466,
}

_AARCH64 = {
    "setxattr": 5,
    "lsetxattr": 6,
    "fsetxattr": 7,
    "getxattr": 8,
    "lgetxattr": 9,
    "fgetxattr": 10,
    "listxattr": 11,
    "llistxattr": 12,
    "flistxattr": 13,
    "removexattr": 14,
    "lremovexattr": 15,
    "fremovexattr": 16,
    "getcwd": 17,
    "eventfd2": 19,
    "epoll_create1": 20,
    "epoll_ctl": 21,
    "epoll_pwait": 22,
    "dup": 23,
    "dup3": 24,
    "fcntl": 25,
    "ioctl": 29,
    "flock": 32,
    "mknodat": 33,
    "mkdirat": 34,
    "unlinkat": 35,
    "symlinkat": 36,
    "linkat": 37,
    "renameat": 38,
    "statfs": 43,
    "fstatfs": 44,
    "truncate": 45,
    "ftruncate": 46,
    "fallocate": 47,
    "faccessat": 48,
    "chdir": 49,
    "fchdir": 50,
    "fchmod": 52,
    "fchmodat": 53,
    "fchownat": 54,
    "fchown": 55,
    "openat": 56,
    "close": 57,
    "pipe2": 59,
    "getdents64": 61,
    "lseek": 62,
    "read": 63,
    "write": 64,
    "readv": 65,
    "writev": 66,
    "pread64": 67,
    "pwrite64": 68,
    "preadv": 69,
    "pwritev": 70,
    "sendfile": 71,
    "pselect6": 72,
    "ppoll": 73,
    "signalfd4": 74,
    "splice": 76,
    "tee": 77,
    "readlinkat": 78,
    "newfstatat": 79,
    "fstat": 80,
    "fsync": 82,
    "fdatasync": 83,
    "timerfd_create": 85,
    "timerfd_settime": 86,
    "timerfd_gettime": 87,
    "utimensat": 88,
    "capget": 90,
    "capset": 91,
    "exit": 93,
    "exit_group": 94,
    "waitid": 95,
    "set_tid_address": 96,
    "futex": 98,
    "set_robust_list": 99,
    "nanosleep": 101,
    "getitimer": 102,
    "setitimer": 103,
    "timer_create": 107,
    "timer_gettime": 108,
    "timer_getoverrun": 109,
    "timer_settime": 110,
    "timer_delete": 111,
    "clock_gettime": 113,
    "clock_getres": 114,
    "clock_nanosleep": 115,
    "ptrace": 117,
    "sched_getscheduler": 120,
    "sched_getparam": 121,
    "sched_getaffinity": 123,
    "sched_yield": 124,
    "sched_get_priority_max": 125,
    "sched_get_priority_min": 126,
    "restart_syscall": 128,
    "kill": 129,
    "tkill": 130,
    "tgkill": 131,
    "sigaltstack": 132,
    "rt_sigsuspend": 133,
    "rt_sigaction": 134,
    "rt_sigprocmask": 135,
    "rt_sigpending": 136,
    "rt_sigtimedwait": 137,
    "rt_sigqueueinfo": 138,
    "rt_sigreturn": 139,
    "getpriority": 141,
    "getresuid": 148,
    "getresgid": 150,
    "times": 153,
    "setpgid": 154,
    "getpgid": 155,
    "getsid": 156,
    "setsid": 157,
    "getgroups": 158,
    "uname": 160,
    "getrlimit": 163,
    "setrlimit": 164,
    "getrusage": 165,
    "umask": 166,
    "prctl": 167,
    "getcpu": 168,
    "gettimeofday": 169,
    "getpid": 172,
    "getppid": 173,
    "getuid": 174,
    "geteuid": 175,
    "getgid": 176,
    "getegid": 177,
    "gettid": 178,
    "sysinfo": 179,
    "mq_open": 180,
    "mq_unlink": 181,
    "mq_timedsend": 182,
    "mq_timedreceive": 183,
    "mq_notify": 184,
    "mq_getsetattr": 185,
    "msgget": 186,
    "msgctl": 187,
    "msgrcv": 188,
    "msgsnd": 189,
    "semget": 190,
    "semctl": 191,
    "semtimedop": 192,
    "semop": 193,
    "shmget": 194,
    "shmctl": 195,
    "shmat": 196,
    "shmdt": 197,
    "socket": 198,
    "socketpair": 199,
    "bind": 200,
    "listen": 201,
    "accept": 202,
    "connect": 203,
    "getsockname": 204,
    "getpeername": 205,
    "sendto": 206,
    "recvfrom": 207,
    "setsockopt": 208,
    "getsockopt": 209,
    "shutdown": 210,
    "sendmsg": 211,
    "recvmsg": 212,
    "brk": 214,
    "munmap": 215,
    "mremap": 216,
    "add_key": 217,
    "request_key": 218,
    "keyctl": 219,
    "clone": 220,
    "execve": 221,
    "mmap": 222,
    "fadvise64": 223,
    "mprotect": 226,
    "msync": 227,
    "mincore": 232,
    "madvise": 233,
    "get_mempolicy": 236,
    "rt_tgsigqueueinfo": 240,
    "accept4": 242,
    "recvmmsg": 243,
    "wait4": 260,
    "prlimit64": 261,
    "sendmmsg": 269,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "renameat2": 276,
    "seccomp": 277,
    "getrandom": 278,
    "memfd_create": 279,
    "execveat": 281,
    "membarrier": 283,
    "copy_file_range": 285,
    "preadv2": 286,
    "pwritev2": 287,
    "statx": 291,
    "rseq": 293,
    "pidfd_send_signal": 424,
    "pidfd_open": 434,
    "close_range": 436,
    "openat2": 437,
    "pidfd_getfd": 438,
    "faccessat2": 439,
    "epoll_pwait2": 441,
    "landlock_create_ruleset": 444,
    "landlock_add_rule": 445,
    "landlock_restrict_self": 446,
    "memfd_secret": 447,
    "futex_waitv": 449,
    "fchmodat2": 452,
    "map_shadow_stack": 453,
    "mseal": 462,
    "setxattrat": 463,
    "removexattrat": 466,
}


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
    "x86_64": Arch(audit=0xC000003E, numbers=_X86_64),
    "aarch64": Arch(audit=0xC00000B7, numbers=_AARCH64),
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
