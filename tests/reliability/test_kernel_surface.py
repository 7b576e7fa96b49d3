"""What a learner's file reaches through the kernel besides files and sockets (issue #23): other
kernel surfaces (io_uring), memory no limit counts (memfd, SysV shm, pipes, a tmpfs), the
metadata of files it may not write, the keyring of the user running the tutor, the disk. Every
case is a correct file plus an attack, run by a real worker in a real child: the attack must be
refused or contained, and the learner told why.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import subprocess
import tempfile

import pytest
from reliability_kit import (
    STEP_TIMEOUT,
    LiveWorker,
    first_message,
    problem_keys,
    summary,
    with_code,
)

from tutor.engine.confine.platform_probe import probe

# The module's worker (or graded class) is made once: its tests run in one xdist process.
pytestmark = pytest.mark.xdist_group("test_kernel_surface")

LM3 = "lm3-l3"
PROTECTIONS = probe()
needs_seccomp = pytest.mark.skipif(not PROTECTIONS.seccomp, reason="no seccomp here")
needs_landlock = pytest.mark.skipif(not PROTECTIONS.landlock, reason="this kernel has no Landlock")
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
SYSCALL = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"


@pytest.fixture
def workspace(tmp_path):
    lab = tmp_path / "attn-lab"
    (lab / ".attn-tutor").mkdir(parents=True)
    (lab / ".attn-tutor" / "state.json").write_text('{"version": 1}')
    (lab / "lm3-l3-answers.md").write_text("# answers\n")
    (lab / "other_student.py").write_text("SECRET = 'their work'\n")
    return lab


def run_in(worker, workspace, code: str, steps=("shapes",)):
    mine = workspace / "lm3_l3.py"
    source = with_code(code)
    mine.write_text(source)
    return worker.run(LM3, source, steps=list(steps), filename=str(mine))


def failed_with(run, key: str | None = None, detail: str = "") -> None:
    for r in run.results.values():
        assert r.status == "error", summary(run.results)
        if key:
            assert key in problem_keys(r), summary(run.results)
        if detail:
            assert detail in str(first_message(r).params), summary(run.results)


def output_of(run) -> str:
    return "".join(r.output for r in run.results.values())


# ------------------------------------------------------------------ class 3: kernel surface


@needs_seccomp
def test_io_uring_is_closed(live, workspace):
    """io_uring's IORING_OP_SOCKET made a UDP socket past the socket() rule: no ring at all."""
    code = (
        SYSCALL
        + "import os, platform\n"
        + "params = ctypes.create_string_buffer(120)\n"
        + "fd = libc.syscall(ctypes.c_long(425), ctypes.c_long(8), params)\n"
        + "if fd < 0:\n    raise OSError(ctypes.get_errno(), 'io_uring_setup')\n"
    )
    run = run_in(live, workspace, code)
    failed_with(run, "failure.call_refused", "io_uring_setup")


# ------------------------------------------------------------------ class 8: keyring


@needs_seccomp
def test_the_callers_keyring_can_be_neither_read_nor_planted(live, workspace):
    """The test plants a key in its session keyring, which the worker inherits; the child
    tries to find and read it, and to plant one of its own."""
    name, secret, planted = (f"attn-{secrets.token_hex(4)}" for _ in range(3))
    mine = _add_key(name, secret.encode())
    if mine <= 0:  # keyrings off here (a container's own filter): nothing to read or plant
        pytest.skip(f"no key could be added here (errno {ctypes.get_errno()})")
    try:
        code = SYSCALL + (
            f"found = libc.syscall(ctypes.c_long({_nr('keyctl')}), ctypes.c_long(10), "
            f"ctypes.c_long(-3), b'user', {name.encode()!r}, ctypes.c_long(0))\n"
            "buf = ctypes.create_string_buffer(64)\n"
            f"if found > 0 and libc.syscall(ctypes.c_long({_nr('keyctl')}), ctypes.c_long(11), "
            "ctypes.c_long(found), buf, ctypes.c_long(64)) > 0:\n"
            "    print('READ', buf.value.decode())\n"
            f"libc.syscall(ctypes.c_long({_nr('add_key')}), b'user', {planted.encode()!r}, "
            "b'x', ctypes.c_size_t(1), ctypes.c_long(-3))\n"
            "if found < 0:\n    raise OSError(ctypes.get_errno(), 'keyctl')\n"
        )
        run = run_in(live, workspace, code)
        failed_with(run, detail="[Errno 1] keyctl")  # EPERM
        assert secret not in output_of(run), summary(run.results)
        assert _find_key(planted) < 0, "the child planted a key that outlived it"
    finally:
        _unlink_key(mine)
        if (left := _find_key(planted)) > 0:
            _unlink_key(left)


def _nr(name: str) -> int:
    import platform

    from tutor.engine.confine.syscalls import ARCHES

    return ARCHES[platform.machine()].numbers[name]


def _add_key(name: str, payload: bytes) -> int:
    return LIBC.syscall(
        ctypes.c_long(_nr("add_key")),
        b"user",
        name.encode(),
        payload,
        ctypes.c_size_t(len(payload)),
        ctypes.c_long(-3),
    )


def _find_key(name: str) -> int:
    return LIBC.syscall(
        ctypes.c_long(_nr("keyctl")),
        ctypes.c_long(10),
        ctypes.c_long(-3),
        b"user",
        name.encode(),
        ctypes.c_long(0),
    )


def _unlink_key(key: int) -> None:
    LIBC.syscall(
        ctypes.c_long(_nr("keyctl")), ctypes.c_long(9), ctypes.c_long(key), ctypes.c_long(-3)
    )


# ------------------------------------------------------------------ class 5: metadata


METADATA = {
    "chmod": "os.chmod({p!r}, 0)",
    "utime-nofollow": "os.utime({p!r}, ns=(0, 0), follow_symlinks=False)",
    "lchown": "os.lchown({p!r}, os.getuid(), os.getgid())",
    "removexattr": "os.removexattr({p!r}, 'user.attn')",
    "utime": "os.utime({p!r}, (0, 0))",
    "chown": "os.chown({p!r}, os.getuid(), os.getgid())",
    "setxattr": "os.setxattr({p!r}, 'user.attn', b'x')",
    "ctypes-chmod": "import ctypes\n"
    "if ctypes.CDLL(None, use_errno=True).chmod({p!r}.encode(), 0) != 0:\n"
    "    raise OSError(ctypes.get_errno(), 'chmod', {p!r})",
}


def _state(path) -> tuple:
    st = os.stat(path)
    try:
        attrs = os.listxattr(path)
    except OSError:
        attrs = []
    return st.st_mode, st.st_mtime_ns, st.st_uid, sorted(attrs)


@needs_seccomp
@pytest.mark.parametrize("op", sorted(METADATA))
@pytest.mark.parametrize(
    "target",
    [
        ".attn-tutor/state.json",
        ".attn-tutor",
        "lm3-l3-answers.md",
        "other_student.py",
        "../outside",
    ],
)
def test_metadata_of_files_is_left_alone(live, workspace, op, target):
    path = os.path.normpath(workspace / target)
    if target == "../outside":
        os.mkdir(path)  # a folder of its own, as grade's output folder is
    # For removexattr to remove; a file system without user attributes: the others still say it.
    with contextlib.suppress(OSError):
        os.setxattr(path, "user.attn", b"keep")
    before = _state(path)
    run = run_in(live, workspace, "import os\n" + METADATA[op].format(p=path))
    assert _state(path) == before, f"{op} changed {target}"
    if op != "ctypes-chmod":  # the audit hook does not see ctypes: a plain PermissionError
        failed_with(run, "failure.confined_metadata")
    else:
        failed_with(run, detail="[Errno 1] chmod")  # EPERM


@needs_seccomp
def test_fchmod_through_a_file_it_may_read_is_refused(live, workspace):
    """Its own file is readable: an fd opened for reading must not change its mode."""
    mine = workspace / "lm3_l3.py"
    run = run_in(live, workspace, "import os\nos.fchmod(os.open(__file__, os.O_RDONLY), 0)")
    assert mine.stat().st_mode & 0o777 != 0
    failed_with(run, "failure.confined_metadata")


# ------------------------------------------------------------------ class 4: memory


@needs_seccomp
def test_memfd_cannot_hold_memory(live, workspace):
    code = "import os\nfd = os.memfd_create('hoard')\nfor _ in range(64):\n    os.write(fd, b'x' * (1 << 20))"
    failed_with(run_in(live, workspace, code), detail="Operation not permitted")


@needs_seccomp
def test_sysv_shared_memory_cannot_hold_memory(live, workspace):
    """A SysV segment outlives the process that made it: refused."""
    code = SYSCALL + (
        f"shm = libc.syscall(ctypes.c_long({_nr('shmget')}), ctypes.c_long(0), "
        "ctypes.c_long(64 << 20), ctypes.c_long(0o1600))\n"
        "if shm < 0:\n    raise OSError(ctypes.get_errno(), 'shmget')\n"
        f"libc.syscall(ctypes.c_long({_nr('shmctl')}), ctypes.c_long(shm), ctypes.c_long(0), None)\n"
    )
    failed_with(run_in(live, workspace, code), detail="[Errno 1] shmget")  # EPERM


@needs_landlock
def test_dev_shm_is_not_writable(live, workspace):
    code = "with open('/dev/shm/attn-hoard', 'wb') as f:\n    f.write(b'x' * (1 << 20))"
    failed_with(run_in(live, workspace, code), "failure.confined_write")
    assert not os.path.exists("/dev/shm/attn-hoard")


PIPES = """
import fcntl, os, resource
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held, keep, chunk = 0, [], b"x" * 65536
try:
    while held < (1 << 30):
        r, w = os.pipe()
        keep.append((r, w))
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        except OSError:
            pass
        os.set_blocking(w, False)
        try:
            while True:
                held += os.write(w, chunk)
        except BlockingIOError:
            pass
except OSError:
    pass
print("HELD", held)
"""


def test_pipes_stuffed_and_never_read_hold_a_bounded_amount(memory_live, workspace):
    """Pipe buffers are memory no RSS shows: bounded by the fds a child may open (1024) and the
    kernel's per-user pipe pool (64 MiB), past which a pipe holds 8 KiB."""
    run = run_in(memory_live, workspace, PIPES)
    out = output_of(run)
    held = max(int(line.split()[1]) for line in out.splitlines() if line.startswith("HELD"))
    assert held <= 72 << 20, f"{held >> 20} MiB held in pipes"


# ------------------------------------------------------------------ class 6: the disk


FILE_MB, SCRATCH_MB, ENTRIES = 16, 48, 300


@pytest.fixture(scope="module")
def bounded():
    """A worker with small bounds on what a child writes, so the cases cost little disk."""
    lw = LiveWorker(
        STEP_TIMEOUT * 3,
        env={
            "ATTN_TUTOR_FILE_MB": str(FILE_MB),
            "ATTN_TUTOR_SCRATCH_MB": str(SCRATCH_MB),
            "ATTN_TUTOR_SCRATCH_FILES": str(ENTRIES),
        },
    )
    lw.start()
    try:
        yield lw
    finally:
        lw.close()


BIG_FILE = (
    "with open('big.bin', 'wb') as f:\n    for _ in range({n}):\n        f.write(b'x' * (1 << 20))"
)


def test_one_file_past_the_bound_fails_with_a_message(bounded, workspace):
    run = run_in(bounded, workspace, BIG_FILE.format(n=FILE_MB * 2))
    failed_with(run, "failure.file_too_large")
    assert first_message(run.results["shapes"]).params["limit"] == FILE_MB


def test_a_write_far_past_the_end_fails_too(bounded, workspace):
    """os.pwrite at an offset past the bound: a sparse file is still refused."""
    code = "import os\nfd = os.open('sparse.bin', os.O_WRONLY | os.O_CREAT)\nos.pwrite(fd, b'x', 3 << 30)"
    failed_with(run_in(bounded, workspace, code), "failure.file_too_large")


MANY_FILES = (
    "for i in range({n}):\n    with open(f'part{{i}}.bin', 'wb') as f:\n"
    "        for _ in range({mb}):\n            f.write(b'x' * (1 << 20))\n"
    "import time\ntime.sleep(1)  # the worker measures the folder while the child runs"
)


def test_many_files_under_the_bound_fill_the_scratch_folder_and_stop(bounded, workspace):
    run = run_in(bounded, workspace, MANY_FILES.format(n=8, mb=FILE_MB - 4))
    failed_with(run, "failure.scratch_full")
    assert first_message(run.results["shapes"]).params["limit"] == SCRATCH_MB


def test_many_empty_files_fill_it_too(bounded, workspace):
    """Inodes are disk too, and a walk over millions of entries would stall the worker. Made by
    another program (sh), which no audit hook sees."""
    code = (
        "import subprocess, time\n"
        "subprocess.run(['sh', '-c', 'mkdir d && cd d && i=0; while [ $i -lt 1000 ]; "
        "do : > $i; i=$((i+1)); done'])\n"
        "time.sleep(1)  # the worker measures the folder while the child runs"
    )
    failed_with(run_in(bounded, workspace, code), "failure.scratch_full")


@pytest.fixture(scope="module")
def on_tmpfs():
    """A worker whose scratch folders are on a tmpfs (as /tmp is on many systems): there,
    files are memory that no RSS shows. Needs root to mount one."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    where = tempfile.mkdtemp(prefix="attn-tmpfs-")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g", "tmpfs", where]).returncode:
        os.rmdir(where)
        pytest.skip("no tmpfs could be mounted")
    lw = LiveWorker(
        STEP_TIMEOUT * 3, env={"TMPDIR": where, "ATTN_TUTOR_SCRATCH_MB": str(SCRATCH_MB)}
    )
    try:
        lw.start()
        yield lw, where
    finally:
        lw.close()
        subprocess.run(["umount", "-l", where])
        os.rmdir(where)


def test_files_on_a_tmpfs_count_against_a_bound(on_tmpfs, workspace):
    lw, where = on_tmpfs
    run = run_in(lw, workspace, MANY_FILES.format(n=6, mb=16))
    failed_with(run, "failure.scratch_full")
    used = shutil.disk_usage(where).used
    assert used < 16 << 20, f"{used >> 20} MiB left on the tmpfs"
