"""A fork server of check workers for the test suite: torch imported once, not once a worker.

A worker spends ~1.5 s of CPU importing torch, and the suite starts ~190 of them (the CLI under
test, the app, fixtures): a third of its CPU. This server imports what a worker imports, as the
worker does before its first fork (one thread, no torch op run), and forks a worker for each
stand-in (worker_standin.py, which the client runs in place of `python -m
tutor.engine.supervisor` when ATTN_TUTOR_WORKER_SCRIPT names it). The forked worker gets the
stand-in's stdin, stdout and stderr, its environment, cwd and umask, a session of its own, and
then runs `tutor.engine.supervisor` as `-m` would: from there on it is the worker.

What differs from a worker of the CLI's own: its parent is this server, not the stand-in. The
stand-in passes its signals on and exits with the worker's status; when the stand-in dies (a
SIGKILL), the server kills the worker. Tests of process trees, parents and kills keep the real
start (tests/conftest.py lists them).

    python tests/tools/warm_workers.py SOCKET   # prints "ready" once it listens
"""

from __future__ import annotations

import array
import ctypes
import json
import os
import selectors
import signal
import socket
import struct
import sys
import traceback

from worker_standin import recv_exact  # beside this file: run as a script, on sys.path

PR_SET_PDEATHSIG = 1
FDS = 3  # stdin, stdout, stderr


def _request(conn: socket.socket) -> tuple[dict, list[int], int]:
    """The stand-in's fds (sent with the length prefix), its payload and its pid."""
    fds = array.array("i")
    head, ancdata, _flags, _addr = conn.recvmsg(4, socket.CMSG_SPACE(FDS * fds.itemsize))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    if len(head) < 4:
        head += recv_exact(conn, 4 - len(head))
    payload = json.loads(recv_exact(conn, struct.unpack("!I", head)[0]))
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return payload, list(fds), struct.unpack("3i", creds)[0]


def _become_worker(payload: dict, fds: list[int]) -> None:
    """In the forked child: the stand-in's process state, then the worker's main as `-m` runs it."""
    code = 1
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.setsid()  # as EngineClient's start_new_session
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(FDS, os.sysconf("SC_OPEN_MAX"))
        os.environ.clear()
        os.environ.update(payload["env"])
        os.chdir(payload["cwd"])
        os.umask(payload["umask"])
        sys.path[0] = payload["cwd"]  # `-m` puts the cwd first
        import runpy

        runpy.run_module("tutor.engine.supervisor", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def serve(path: str) -> None:
    # What the worker's main imports before its zygote forks (tutor/engine/supervisor.py).
    import torch  # noqa: F401
    import torch.nn.functional  # noqa: F401

    from tutor import kit  # noqa: F401
    from tutor.engine import child, zygote  # noqa: F401

    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    print("ready", flush=True)
    while True:
        for key, _ in selector.select():
            if key.data is None:
                conn, _ = listener.accept()
                _fork_for(conn, selector)
            else:
                _event(key, selector)


def _fork_for(conn: socket.socket, selector: selectors.BaseSelector) -> None:
    try:
        payload, fds, standin = _request(conn)
    except (OSError, ValueError):
        conn.close()
        return
    try:
        pid = os.fork() if len(fds) == FDS else -1
        if pid == 0:
            conn.close()
            _become_worker(payload, fds)
    finally:
        for fd in fds:
            os.close(fd)
    try:
        conn.sendall(struct.pack("!q", pid))
    except OSError:
        pass
    if pid < 0:
        conn.close()
        return
    watch = {"conn": conn, "pid": pid, "worker_fd": os.pidfd_open(pid), "standin_fd": None}
    try:
        watch["standin_fd"] = os.pidfd_open(standin)
    except ProcessLookupError:  # gone already: so is its worker
        os.kill(pid, signal.SIGKILL)
    selector.register(watch["worker_fd"], selectors.EVENT_READ, ("worker", watch))
    if watch["standin_fd"] is not None:
        selector.register(watch["standin_fd"], selectors.EVENT_READ, ("standin", watch))


def _event(key: selectors.SelectorKey, selector: selectors.BaseSelector) -> None:
    what, watch = key.data
    if what == "standin":  # killed without a word: its worker goes too, as a killed worker would
        selector.unregister(watch["standin_fd"])
        os.close(watch["standin_fd"])
        watch["standin_fd"] = None
        try:
            os.kill(watch["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
        return
    selector.unregister(watch["worker_fd"])
    os.close(watch["worker_fd"])
    _, status = os.waitpid(watch["pid"], 0)
    try:
        watch["conn"].sendall(struct.pack("!q", status))
    except OSError:
        pass
    watch["conn"].close()
    if watch["standin_fd"] is not None:
        selector.unregister(watch["standin_fd"])
        os.close(watch["standin_fd"])


if __name__ == "__main__":
    serve(sys.argv[1])
