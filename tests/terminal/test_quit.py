"""Quitting in a real pseudo-terminal: q, Ctrl+C, SIGTERM and SIGHUP (an SSH link dropping)
all restore the terminal and leave no worker process behind."""

import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pty_kit import read_for

ROOT = Path(__file__).resolve().parents[2]


def children_of(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                kids.append(int(entry.name))
    return kids


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for kid in children_of(todo.pop()):
            found.append(kid)
            todo.append(kid)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("how", ["q", "ctrl+c", "SIGTERM", "SIGHUP"])
def test_quit_restores_terminal_and_stops_the_worker(tmp_path, how):
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real app in a real terminal
        os.chdir(tmp_path)
        os.environ.update(PYTHONPATH=str(ROOT), TERM="xterm-256color", LANG="C.UTF-8")
        os.execv(sys.executable, [sys.executable, "-m", "tutor", "--lang", "en"])
    try:
        screen = b""
        deadline = time.monotonic() + 30
        workers = []
        while time.monotonic() < deadline:
            screen += read_for(fd, 0.2)
            workers = descendants(pid)
            if b"checks ready" in screen and len(workers) >= 3:  # worker, judge, spare children
                break
        assert b"checks ready" in screen, "the app never reported the checker ready"
        if how == "q":
            os.write(fd, b"q")
        elif how == "ctrl+c":
            os.write(fd, b"\x03")
        else:
            os.kill(pid, getattr(signal, how))
        tail = read_for(fd, 5)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    assert b"\x1b[?1049l" in tail, "the alternate screen was not left: terminal not restored"
    time.sleep(0.5)
    assert [w for w in workers if alive(w)] == []


def test_terminal_gone_while_quitting_leaves_no_process(tmp_path):
    # q at once, while the worker still imports torch, then the terminal closes (a tmux pane
    # killed, an SSH link dropped) before the app is done: Textual's input thread then spun on
    # the dead tty and the process never ended.
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(tmp_path)
        os.environ.update(PYTHONPATH=str(ROOT), TERM="xterm-256color", LANG="C.UTF-8")
        os.execv(sys.executable, [sys.executable, "-m", "tutor", "--lang", "en"])
    try:
        screen, deadline = b"", time.monotonic() + 30
        while b"attn-tutor" not in screen and time.monotonic() < deadline:
            screen += read_for(fd, 0.1)
        assert b"attn-tutor" in screen, "the app never drew its first screen"
        workers = descendants(pid)
        os.write(fd, b"q")
        read_for(fd, 1.0)  # the app is closing: it waits for the worker
    finally:
        os.close(fd)  # the terminal goes away
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the app was still running 10 s after its terminal closed")
    time.sleep(0.5)
    assert [w for w in workers if alive(w)] == []


def test_a_language_nobody_chose_is_not_remembered(tmp_path):
    """The README's run command, then its test command: `attn-tutor` started and quit with q in
    an English locale, then `--help` under LANG=zh_CN.UTF-8 in the same folder is in Chinese.
    (The app used to store "lang": "en" with its progress, and that overrode LANG.)"""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color", LANG="C.UTF-8")
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(tmp_path)
        os.execve(sys.executable, [sys.executable, "-m", "tutor"], env)
    try:
        screen, deadline = b"", time.monotonic() + 30
        while b"checks ready" not in screen and time.monotonic() < deadline:
            screen += read_for(fd, 0.2)
        assert b"checks ready" in screen, "the app never reported the checker ready"
        os.write(fd, b"n")  # a step change: progress is saved
        read_for(fd, 0.5)
        os.write(fd, b"q")
        read_for(fd, 5)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    state = json.loads((tmp_path / "attn-lab" / ".attn-tutor" / "state.json").read_text())
    assert state["lessons"]["lm3-l3"]["step"] == "leakage" and state["lang"] is None
    out = subprocess.run(
        [sys.executable, "-m", "tutor", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(env, LANG="zh_CN.UTF-8"),
        timeout=60,
    )
    assert "检查" in out.stdout
