"""No process of the tutor is left, alive or a zombie, after any way of quitting, under a
parent that never calls wait() and takes in every orphan (nonreaping_parent.py: a container's
first process may be like that). Only the process the parent started itself may stay, as its
zombie: reaping that one is the parent's job. The learner's file leaves a daemon behind (a
fork in a new session), which the worker, a subreaper, must kill and reap too."""

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
PARENT = Path(__file__).with_name("nonreaping_parent.py")
# A correct file that leaves a daemon in a new session at each import.
DAEMON = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(1000)
    os._exit(0)
"""


def correct_file_with_a_daemon() -> str:
    return (ROOT / "reference" / "lm3_l3.py").read_text() + DAEMON


class Parent:
    def __init__(self, tmp_path: Path, command: list[str], pty: bool):
        env = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color", LANG="C.UTF-8")
        self.proc = subprocess.Popen(
            [sys.executable, str(PARENT), *(["--pty"] if pty else []), "--", *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
        )
        self.child = int(self.proc.stdout.readline())

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def wait_for(self, text: str) -> None:
        self.send(f"wait {text}")
        assert self.proc.stdout.readline().strip() == "ok", f"{text!r} never appeared"

    def left(self) -> list[tuple[int, str, str]]:
        """The parent's descendants but its own child's zombie: (pid, status, name)."""
        found = []
        for p in psutil.Process(self.proc.pid).children(recursive=True):
            try:
                status, name = p.status(), p.name()
            except psutil.NoSuchProcess:
                continue
            if not (p.pid == self.child and status == psutil.STATUS_ZOMBIE):
                found.append((p.pid, status, name))
        return found

    def descendants(self) -> int:
        return len(psutil.Process(self.proc.pid).children(recursive=True))

    def assert_nothing_left(self, within: float = 10) -> None:
        deadline = time.monotonic() + within
        while self.left() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert self.left() == [], f"left behind: {self.left()}"

    def close(self) -> None:
        for p in psutil.Process(self.proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        self.proc.kill()
        self.proc.wait()


def wait_until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.mark.parametrize("how", ["q", "ctrl+c", "SIGTERM", "SIGHUP", "terminal-closed"])
def test_the_app_leaves_no_process(tmp_path, how):
    (tmp_path / "attn-lab").mkdir()
    (tmp_path / "attn-lab" / "lm3_l3.py").write_text(correct_file_with_a_daemon())
    parent = Parent(tmp_path, [sys.executable, "-m", "tutor", "--lang", "en"], pty=True)
    try:
        parent.wait_for("checks ready")
        # The worker, the judge, spares: the tree the quit must take down.
        assert wait_until(lambda: parent.descendants() >= 4, 20), parent.left()
        if how == "q":
            parent.send("write q")
        elif how == "ctrl+c":
            parent.send("write \\x03")
        elif how == "terminal-closed":
            parent.send("close")
        else:
            parent.send(f"signal {how[3:]}")
        parent.assert_nothing_left()
    finally:
        parent.close()


def test_check_leaves_no_process(tmp_path):
    path = tmp_path / "lm3_l3.py"
    path.write_text(correct_file_with_a_daemon())
    parent = Parent(
        tmp_path,
        [sys.executable, "-m", "tutor", "check", "--lesson", "lm3-l3", str(path)],
        pty=False,
    )
    try:
        assert wait_until(
            lambda: psutil.Process(parent.child).status() == psutil.STATUS_ZOMBIE, 60
        ), "check never ended"
        parent.assert_nothing_left()
    finally:
        parent.close()


@pytest.mark.parametrize("sig", ["TERM", "HUP"])
def test_the_worker_killed_by_a_signal_leaves_no_process(tmp_path, sig):
    parent = Parent(tmp_path, [sys.executable, "-m", "tutor.engine.supervisor"], pty=False)
    try:
        # Torch imported, the judge and the spares forked.
        assert wait_until(lambda: parent.descendants() >= 4, 60), parent.left()
        parent.send(f"signal {sig}")
        parent.assert_nothing_left()
    finally:
        parent.close()
