"""The real app in tmux, as a learner runs it: a server of the test's own (`tmux -L`), a pane
of a fixed size, keys sent and the screen read back as text."""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Pane:
    def __init__(self, server: str):
        self.server = server

    def tmux(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.server, *args], capture_output=True, text=True, timeout=10
        )
        return out.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "main")

    def keys(self, *keys: str, pause: float = 0.4) -> None:
        for key in keys:
            self.tmux("send-keys", "-t", "main", key)
            time.sleep(pause)

    def wait_for(self, done: Callable[[str], bool], seconds: float = 60.0) -> str:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            screen = self.screen()
            if done(screen):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"not on screen within {seconds} s:\n{self.screen()}")


@contextlib.contextmanager
def app_in_tmux(cwd: Path, *args: str, size: tuple[int, int] = (80, 24)) -> Iterator[Pane]:
    server = f"attn-test-{os.getpid()}-{time.monotonic_ns()}"
    command = " ".join(
        shlex.quote(part)
        for part in [
            "env",
            f"PYTHONPATH={ROOT}",
            "TERM=xterm-256color",
            "LANG=C.UTF-8",
            sys.executable,
            "-m",
            "tutor",
            *args,
        ]
    )
    subprocess.run(
        [
            "tmux",
            "-L",
            server,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            str(size[0]),
            "-y",
            str(size[1]),
            "-c",
            str(cwd),
            command,
        ],
        check=True,
        timeout=10,
    )
    pane = Pane(server)
    try:
        yield pane
    finally:
        pane.keys("q", pause=0)
        end = time.monotonic() + 10
        while time.monotonic() < end and pane.tmux("list-sessions"):
            time.sleep(0.1)
        subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True, timeout=10)
