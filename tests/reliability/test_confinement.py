"""The kernel confines the learner's code (issue #17): Landlock keeps its files to what Python
needs to read and its scratch folder to write, seccomp keeps it off the network, and each
child's Landlock domain keeps its signals to itself. Every attack here runs from learner code
in a real child; the learner is told which of these refused it.

The fence (test_foreign_code.py) refuses the reference at Python's level; these go around it:
another program, raw syscalls through ctypes.
"""

from __future__ import annotations

import os
import textwrap

import psutil
import pytest
from reliability_kit import CHECKED, first_message, problem_keys, summary, with_code

from tutor.engine.confine.platform_probe import probe

LM3 = "lm3-l3"
PROTECTIONS = probe()
needs_landlock = pytest.mark.skipif(not PROTECTIONS.landlock, reason="this kernel has no Landlock")
needs_seccomp = pytest.mark.skipif(not PROTECTIONS.seccomp, reason="no seccomp here")
REF = "from tutor.paths import reference_dir\nREF = str(reference_dir() / 'lm3_l3.py')\n"


@pytest.fixture
def workspace(tmp_path):
    """A learner's workspace as the app leaves it: the solution, its state, its answers, and
    (as in grading) another student's submission beside it."""
    lab = tmp_path / "attn-lab"
    (lab / ".attn-tutor").mkdir(parents=True)
    (lab / ".attn-tutor" / "progress.json").write_text('{"version": 1}')
    (lab / "lm3-l3-answers.md").write_text("# answers\n")
    (lab / "other_student.py").write_text("SECRET = 'their work'\n")
    return lab


def run_in(live, workspace, code: str, steps=("shapes",)):
    mine = workspace / "lm3_l3.py"
    source = with_code(code)
    mine.write_text(source)
    return live.run(LM3, source, steps=list(steps), filename=str(mine))


def loads_with(run, key: str) -> None:
    """The file failed to load with this message (the same for every step)."""
    for r in run.results.values():
        assert r.status == "error" and key in problem_keys(r), summary(run.results)


# ------------------------------------------------------------------ files


@needs_landlock
@pytest.mark.parametrize(
    "target",
    [
        ".attn-tutor/progress.json",  # the progress store
        "lm3-l3-answers.md",  # the reflection answers
        "lm3_l3.py",  # the solution file itself
        "new_file.txt",  # anything new in the learner's folder
    ],
)
def test_writing_the_workspace_is_refused(live, workspace, target):
    path = workspace / target
    before = path.read_bytes() if path.exists() else None
    run = run_in(live, workspace, f"open({str(path)!r}, 'w').write('overwritten')")
    loads_with(run, "failure.confined_write")
    assert (
        (path.read_bytes() if path.exists() else None) == before
        or target == "lm3_l3.py"
        and path.read_text() != "overwritten"
    )


@needs_landlock
def test_writing_the_lessons_and_reference_is_refused(live, workspace):
    from tutor.paths import lessons_dir

    target = lessons_dir() / "lm3-l3" / "lesson.toml"
    before = target.read_bytes()
    run = run_in(
        live,
        workspace,
        f"import ctypes\nassert ctypes.CDLL(None).open({str(target).encode()!r}, 1) == -1\n"
        f"open({str(target)!r}, 'a').write('x')",
    )
    loads_with(run, "failure.refused")  # the fence sees open() first: its own message
    assert target.read_bytes() == before


@needs_landlock
@pytest.mark.parametrize(
    "target", [".attn-tutor/progress.json", "lm3-l3-answers.md", "other_student.py"]
)
def test_reading_the_workspace_state_and_other_submissions_is_refused(live, workspace, target):
    run = run_in(live, workspace, f"DATA = open({str(workspace / target)!r}).read()")
    loads_with(run, "failure.confined_read")
    message = first_message(run.results["shapes"])
    assert target.split("/")[-1] in message.params["detail"], message


@needs_landlock
def test_the_learner_may_read_its_own_file_and_write_its_scratch(live, workspace):
    run = run_in(
        live,
        workspace,
        """
        import os, tempfile
        MINE = open(__file__).read()
        assert "def causal_attention" in MINE
        with open("note.txt", "w") as f:  # the working folder is the scratch folder
            f.write("mine")
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("mine too")
        os.makedirs("sub/dir", exist_ok=True)
        os.rename("note.txt", "sub/dir/note.txt")
        print("scratch", os.getcwd(), tempfile.gettempdir(), sorted(os.listdir(".")))
        """,
    )
    r = run.results["shapes"]
    assert r.status == "pass", summary(run.results)
    _, cwd, tmp, *_ = r.output.split()
    assert cwd == tmp and os.path.basename(cwd).startswith("attn-run-"), r.output
    # Removed with its child, whatever it holds.
    from reliability_kit import wait_until

    assert wait_until(lambda: not os.path.exists(cwd), 2), f"{cwd} is still there"


@needs_landlock
@pytest.mark.parametrize(
    "route", ["subprocess-cat", "python-c", "ctypes-open", "ctypes-syscall-openat"]
)
def test_the_reference_is_out_of_reach_around_the_fence(live, workspace, route):
    """Routes the audit hook cannot see: another program, raw syscalls. Each gets EACCES from
    the kernel; the file then prints what it got and defines the reference's functions itself
    only if it read them."""
    attempts = {
        "subprocess-cat": "import subprocess\nGOT = subprocess.run(['cat', REF], capture_output=True).stdout",
        "python-c": "import subprocess, sys\nGOT = subprocess.run([sys.executable, '-c', "
        "f'import sys; sys.stdout.write(open({REF!r}).read())'], capture_output=True).stdout",
        "ctypes-open": textwrap.dedent("""
            import ctypes, os
            fd = ctypes.CDLL(None, use_errno=True).open(REF.encode(), os.O_RDONLY)
            GOT = os.read(fd, 1 << 20) if fd >= 0 else b""
            """),
        "ctypes-syscall-openat": textwrap.dedent("""
            import ctypes, os
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            fd = libc.syscall(257, -100, REF.encode(), os.O_RDONLY, 0)  # openat(AT_FDCWD, ...) on x86_64
            GOT = os.read(fd, 1 << 20) if fd >= 0 else b""
            """),
    }
    if route == "ctypes-syscall-openat" and os.uname().machine != "x86_64":
        pytest.skip("the syscall number is x86_64's")
    code = REF + attempts[route] + "\nprint('got', len(GOT))\nif GOT:\n    exec(GOT.decode())\n"
    # The functions the file defines are UNMASKED-free stubs: only the reference would pass.
    source = (
        code
        + "\ndef causal_attention(x, Wq, Wk, Wv):\n    if not GOT:\n        raise NotImplementedError\n"
    )
    mine = workspace / "lm3_l3.py"
    mine.write_text(source)
    run = live.run(LM3, source, steps=["single-head"], filename=str(mine))
    r = run.results["single-head"]
    assert "got 0" in r.output, summary(run.results)
    assert r.status != "pass", summary(run.results)


# ------------------------------------------------------------------ network


@needs_seccomp
@pytest.mark.parametrize(
    "attempt",
    [
        "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)",
        "import socket\nsocket.socket(socket.AF_INET6, socket.SOCK_DGRAM)",
        "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)",
        "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9/', timeout=1)",
    ],
)
def test_the_network_is_off(live, workspace, attempt):
    run = run_in(live, workspace, attempt)
    loads_with(run, "failure.network_off")


@needs_seccomp
def test_unix_sockets_between_its_own_processes_still_work(live, workspace):
    run = run_in(
        live,
        workspace,
        """
        import socket
        _a, _b = socket.socketpair()
        _a.sendall(b"ping")
        assert _b.recv(4) == b"ping"
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
        """,
    )
    assert run.results["shapes"].status == "pass", summary(run.results)


# ------------------------------------------------------------------ signals between the run's children


@needs_landlock
def test_children_cannot_signal_the_other_children_of_the_worker(live, workspace):
    """The worker's spares and the other children of the run are outside this child's Landlock
    domain (ABI 6 scopes signals): each SIGSTOP is refused, and the next run is judged in time."""
    if PROTECTIONS.landlock < 6:
        pytest.skip("signal scoping needs Landlock ABI 6")
    others = [p.pid for p in psutil.Process(live.pid).children()]
    assert others, "the worker has no spare children"
    run = run_in(
        live,
        workspace,
        f"""
        import os, signal
        _refused = _sent = 0
        for _pid in {others!r}:
            if _pid != os.getpid():
                try:
                    os.kill(_pid, signal.SIGSTOP)
                    _sent += 1
                except PermissionError:
                    _refused += 1
                except ProcessLookupError:
                    pass  # a child that ended since the test looked
        print("refused", _refused, "sent", _sent)
        """,
    )
    r = run.results["shapes"]
    assert r.status == "pass", summary(run.results)
    refused, sent = int(r.output.split()[1]), int(r.output.split()[3])
    assert refused and not sent, r.output
    again = live.run(LM3, with_code(""), steps=CHECKED[LM3])
    assert all(x.status == "pass" for x in again.results.values()), summary(again.results)


@needs_landlock
def test_other_processes_proc_entries_are_refused_but_its_own_are_not(live, workspace):
    """/proc is readable, but what is behind ptrace's check (environment, fds, memory, root) of a
    process outside the child's domain is not: here the UI, this test process."""
    ui = os.getpid()
    run = run_in(
        live,
        workspace,
        f"""
        import os
        assert open("/proc/self/status").read() and os.listdir("/proc/self/fd")
        _got = []
        for _what in ("environ", "mem", "root/etc/hostname"):
            try:
                open(f"/proc/{ui}/{{_what}}", "rb").read(1)
                _got.append(_what)
            except OSError:
                pass
        print("got", _got)
        """,
    )
    r = run.results["shapes"]
    assert r.status == "pass" and "got []" in r.output, summary(run.results)


# ------------------------------------------------------------------ processes

needs_forks = pytest.mark.skipif(not PROTECTIONS.forks, reason="no pids cgroup to make here")


@needs_forks
@pytest.mark.parametrize(
    "bomb",
    [
        "import os, time\nwhile True:\n    if os.fork() == 0:\n        time.sleep(1000)",
        "import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()",
    ],
)
def test_a_fork_or_thread_bomb_is_bounded_and_told(memory_live, workspace, bomb):
    """The run's pids cgroup refuses task pids_cgroup.LIMIT + 1: the file fails to load with the
    message that says so, before its deadline (the long one: forking a torch-loaded process
    takes ~20 ms here), and nothing of it is left after the run."""
    from reliability_kit import MEMORY_TIMEOUT, wait_until

    from tutor.engine.confine.pids_cgroup import LIMIT

    live = memory_live
    run = run_in(live, workspace, bomb)
    loads_with(run, "failure.too_many_processes")
    assert first_message(run.results["shapes"]).params["limit"] == LIMIT
    assert run.arrived["shapes"] < MEMORY_TIMEOUT, run.arrived
    worker = psutil.Process(live.pid)
    # The run's leftovers killed and reaped; its cgroup folder removed, or kept empty for reuse.
    assert wait_until(lambda: len(worker.children(recursive=True)) <= 6, 3), worker.children(
        recursive=True
    )
    from tutor.engine.confine.leftovers import tag
    from tutor.engine.confine.pids_cgroup import POOL, base

    folder = os.path.join(base(), f"attn-tutor-{tag(live.pid)}")
    spares = {p.pid for p in worker.children()}

    def tasks(sub: str) -> set[int]:
        with open(os.path.join(folder, sub, "cgroup.procs")) as f:
            return {int(p) for p in f.read().split()}

    def tidy() -> bool:
        subs = [d.name for d in os.scandir(folder) if d.is_dir()]
        return len(subs) <= 4 + POOL and all(tasks(sub) <= spares for sub in subs)

    assert wait_until(tidy, 3), {
        sub: tasks(sub) for sub in os.listdir(folder) if os.path.isdir(os.path.join(folder, sub))
    }
