"""The app does not outlive its terminal (tutor/app/terminal_guard.py). In a real pty, the
terminal goes away in several states: with the app's writer blocked (a terminal that stopped
reading, the writer's queue full), during a quit, mid-run; with no SIGHUP reaching the app (its
session leader ignores it: only its writes fail); and SIGTERM while the writer is blocked. Each
time the app is gone within a few seconds and leaves no process (worker, judge, spares)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import signal
import struct
import sys
import termios
import time
from pathlib import Path

import psutil
import pytest
from pty_kit import read_for

ROOT = Path(__file__).resolve().parents[2]
WITHIN = (
    8.0  # seconds from the terminal going away to no process left (2 s grace + a loaded machine)
)
SLOW = (ROOT / "reference" / "lm3_l3.py").read_text() + "\nimport time\ntime.sleep(60)\n"

# A session leader that ignores SIGHUP and keeps the terminal: the app, its foreground job,
# gets no SIGHUP when the terminal closes; only its reads and writes fail.
WRAPPER = """
import os, signal, sys
signal.signal(signal.SIGHUP, signal.SIG_IGN)
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.tcsetpgrp(0, os.getpgrp())
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGTTOU, signal.SIG_DFL)
    os.execv(sys.executable, [sys.executable, "-m", "tutor", "--lang", "en"])
os.waitpid(pid, 0)
"""


_started: list[psutil.Process] = []


@pytest.fixture(autouse=True)
def nothing_left_by_a_failure():
    """A test that fails before its app is gone kills what it started."""
    yield
    for p in _started:
        with_kill(p)
    _started.clear()


def start(tmp_path: Path, wrapped: bool = False) -> tuple[int, int]:
    pid, fd = pty.fork()
    if pid == 0:
        # As a shell starts it: pytest's process blocks signals (SIGWINCH among them) that an
        # exec would pass on.
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.chdir(tmp_path)
        os.environ.update(PYTHONPATH=str(ROOT), TERM="xterm-256color", LANG="C.UTF-8")
        if wrapped:
            os.execv(sys.executable, [sys.executable, "-c", WRAPPER])
        os.execv(sys.executable, [sys.executable, "-m", "tutor", "--lang", "en"])
    return pid, fd


def ready(pid: int, fd: int) -> list[psutil.Process]:
    """Wait for the checker; return every process of the tutor under pid."""
    screen, deadline = b"", time.monotonic() + 60
    procs = []
    while time.monotonic() < deadline:
        screen += read_for(fd, 0.2)
        procs = psutil.Process(pid).children(recursive=True)
        if b"checks ready" in screen and len(procs) >= 3:
            _started.extend([psutil.Process(pid), *procs])
            return procs
    pytest.fail("the app never reported the checker ready")


def app_of(pid: int, wrapped: bool) -> int:
    return psutil.Process(pid).children()[0].pid if wrapped else pid


def writer_blocked(app: int) -> bool:
    """The app's main thread waits on a lock (its writer's queue is full) and a thread of it
    sleeps in a tty write (/proc's wchan)."""

    def wchan(tid: int) -> str:
        try:
            return Path(f"/proc/{app}/task/{tid}/wchan").read_text()
        except OSError:
            return ""

    tids = [int(t) for t in os.listdir(f"/proc/{app}/task")]
    return "futex" in wchan(app) and any(
        "wait_woken" in wchan(t) or "tty_write" in wchan(t) for t in tids if t != app
    )


def block_the_writer(fd: int, app: int) -> None:
    """Resize the terminal and switch language and step over and over without reading it: each
    repaints the screen, the pty's buffer fills, the app's writer blocks and its queue fills
    behind it."""
    for i in range(1500):
        rows, cols = (24, 80) if i % 2 else (50, 200)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.write(fd, b"lnp"[i % 3 : i % 3 + 1])
        time.sleep(0.02)
        if i % 20 == 19 and writer_blocked(app):
            time.sleep(0.5)
            if writer_blocked(app):
                return
    states = {
        t: Path(f"/proc/{app}/task/{t}/wchan").read_text() for t in os.listdir(f"/proc/{app}/task")
    }
    pytest.fail(
        f"the app's writer never blocked: the test did not make the state it tests {states}"
    )


def gone_within(pid: int, procs: list[psutil.Process], seconds: float) -> float:
    """Seconds until pid has exited (reaped here) and no process of procs is alive."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        for p in procs:
            with_kill(p)
        pytest.fail(f"the app was still running {seconds} s after its terminal went away")
    while time.monotonic() - start < seconds:
        alive = [p for p in procs if running(p)]
        if not alive:
            return time.monotonic() - start
        time.sleep(0.05)
    left = [(p.pid, p.name()) for p in procs if running(p)]
    for p in procs:
        with_kill(p)
    pytest.fail(f"left behind: {left}")


def running(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def with_kill(p: psutil.Process) -> None:
    with contextlib.suppress(psutil.NoSuchProcess):
        p.kill()


def test_terminal_closed_while_the_writer_is_blocked(tmp_path):
    pid, fd = start(tmp_path, wrapped=True)
    procs = ready(pid, fd)
    block_the_writer(fd, app_of(pid, True))
    os.close(fd)
    gone_within(pid, procs, WITHIN)


def test_q_then_the_terminal_closed_with_the_writer_blocked(tmp_path):
    """The issue's case: q, then the pty gone on a loaded machine (the writer's queue full),
    and here no SIGHUP to help."""
    pid, fd = start(tmp_path, wrapped=True)
    procs = ready(pid, fd)
    block_the_writer(fd, app_of(pid, True))
    os.write(fd, b"q")
    time.sleep(0.2)
    os.close(fd)
    gone_within(pid, procs, WITHIN)


def test_sigterm_ends_the_app_while_its_writer_is_blocked(tmp_path):
    pid, fd = start(tmp_path)
    procs = ready(pid, fd)
    block_the_writer(fd, pid)
    os.kill(pid, signal.SIGTERM)
    try:
        gone_within(pid, procs, WITHIN)
    finally:
        os.close(fd)


def test_terminal_closed_mid_run_with_no_sighup_for_the_app(tmp_path):
    pid, fd = start(tmp_path, wrapped=True)
    procs = ready(pid, fd)
    (tmp_path / "attn-lab" / "lm3_l3.py").write_text(SLOW)  # a run in flight: sleeps 60 s
    read_for(fd, 1.5)
    os.close(fd)
    gone_within(pid, procs, WITHIN)
