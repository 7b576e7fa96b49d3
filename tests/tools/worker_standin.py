"""Stands in for `python -m tutor.engine.supervisor` in the test suite (warm_workers.py).

It hands its stdin, stdout and stderr to the warm-worker server, which forks the worker with
them, then passes on the signals it gets and exits as the worker did. Without a server (none
started, or it is gone) it becomes the worker itself, started the usual way.
"""

import array
import json
import os
import signal
import socket
import struct
import sys

SOCKET_ENV = "ATTN_TUTOR_WARM_SOCKET"
FORWARDED = (
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


def _as_usual() -> None:
    os.execv(sys.executable, [sys.executable, "-m", "tutor.engine.supervisor"])


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """n bytes from sock (the server's and the stand-in's messages alike)."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the other end hung up")
        data += chunk
    return data


def main() -> None:
    path = os.environ.get(SOCKET_ENV)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if not path:
            raise OSError("no server")
        sock.connect(path)
    except OSError:
        sock.close()
        _as_usual()
    umask = os.umask(0)
    os.umask(umask)
    payload = json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "umask": umask}).encode()
    fds = array.array("i", [0, 1, 2])
    sock.sendmsg(
        [struct.pack("!I", len(payload)), payload],
        [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)],
    )
    (pid,) = struct.unpack("!q", recv_exact(sock, 8))
    if pid < 0:
        sys.exit(70)
    # Only the worker holds the client's pipes now: their ends close when it ends.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for sig in FORWARDED:
        signal.signal(sig, lambda signum, _frame: os.kill(pid, signum))
    try:
        (status,) = struct.unpack("!q", recv_exact(sock, 8))
    except OSError:
        os._exit(1)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
