"""A parent that never calls wait(), as a container's first process may be: it is a child
subreaper (orphans of its descendants come to it) and never reaps anything, so every process
of the tutor that ends without being reaped by the tutor stays visible as a zombie under it.

    python nonreaping_parent.py [--pty] -- COMMAND...

Without --pty the command's stdin is a pipe held open and never written.
Prints the command's pid, then obeys lines on stdin:
    wait TEXT     until TEXT was written to the terminal (--pty), then prints "ok" (or "timeout")
    write TEXT    TEXT (Python escapes allowed, e.g. \\x03) to the terminal
    close         closes the terminal's master side: the terminal is gone
    signal NAME   sends signal NAME (TERM, HUP, ...) to the command
"""

import ctypes
import os
import pty
import select
import signal
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36


def main() -> None:
    args = sys.argv[1:]
    use_pty = args[:1] == ["--pty"]
    command = args[args.index("--") + 1 :]
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    fd = -1
    if use_pty:
        pid, fd = pty.fork()
    else:  # stdin: a pipe held open here and never written (the worker quits at its EOF)
        stdin_r, stdin_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.dup2(stdin_r, 0)
    if pid == 0:
        os.execvp(command[0], command)
    print(pid, flush=True)
    screen = bytearray()
    lock = threading.Lock()

    closing = threading.Event()

    def drain() -> None:
        # A read blocked in another thread would keep the terminal open past os.close(fd).
        while not closing.is_set():
            if not select.select([fd], [], [], 0.05)[0]:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with lock:
                screen.extend(chunk)

    drainer = threading.Thread(target=drain, daemon=True)
    if use_pty:
        drainer.start()
    for line in sys.stdin:
        action, _, arg = line.rstrip("\n").partition(" ")
        if action == "wait":
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with lock:
                    if arg.encode() in screen:
                        break
                time.sleep(0.05)
            with lock:
                print("ok" if arg.encode() in screen else "timeout", flush=True)
        elif action == "write":
            os.write(fd, arg.encode().decode("unicode_escape").encode("latin-1"))
        elif action == "close":
            closing.set()
            drainer.join()
            os.close(fd)
        elif action == "signal":
            os.kill(pid, getattr(signal, "SIG" + arg))
    time.sleep(3600)  # never waits: the test kills this process when it is done


if __name__ == "__main__":
    main()
