"""The spares' fork server: a process whose memory never held a reference solution, a model
answer or the judge's data, from which every child that runs learner code is forked.

The worker forks it right after torch's import, before it reads any lesson (worker.main). It
then gets, as data, only what the children need: each lesson's checks file (the probes run in
the child), the lessons' settings without their answers (kit.declared_settings reads them),
the protected folders and the warm-up's public sources. Whatever the learner's code finds in
its own process (frames, gc.get_objects(), /proc/self/mem, freed blocks included) is then this
process's, not the worker's: the worker keeps the lessons, the references and the judge.

    worker ──setup (pickle)──► zygote: loads the checks, makes the inputs, warms up
    worker ──spare (pickle + the child's 3 pipe ends, SCM_RIGHTS)──► zygote
                                 └─ clone(CLONE_PARENT) ► spare, the worker's child
                                    (or, where that cannot be: fork ► intermediate ─ fork ►
                                     spare; the intermediate exits)
    worker ◄──spare's pid─────── zygote

The spare must be the worker's child (it reaps it, reads its wait status, kills its group):
clone_parent makes it so at once; else the intermediate exits at once, and the worker, a child
subreaper, adopts the spare. So it works only where the worker is a subreaper (Linux);
elsewhere the worker forks its spares itself.
"""

from __future__ import annotations

import errno
import gc
import os
import pickle
import select
import signal
import socket
import struct
import sys
import time

from tutor.engine import clone_parent
from tutor.engine.checks_loader import runs_for

MESSAGE = 1 << 20  # bytes at most in one message (a setup is a few KB)
# The app's zygote warms up on a lesson once no spare was asked for this long: after the
# first verdicts, never in their way.
IDLE = 0.3


class SpareRefused(OSError):
    """The zygote is alive, but could not fork this spare (as os.fork's OSError)."""


class Zygote:
    """The worker's handle on its fork server."""

    def __init__(self, pid: int, sock: socket.socket):
        self.pid, self.sock = pid, sock
        self.alive = True  # False once the worker has reaped it: its pid is no longer ours

    def setup(self, config: dict) -> None:
        self.sock.sendall(pickle.dumps(config))

    def fork_spare(self, fds: tuple[int, int, int], request: dict) -> int:
        """A spare forked with these pipe ends (job read, result write, output write); its pid,
        once it is the worker's child. OSError if the zygote is gone."""
        socket.send_fds(self.sock, [pickle.dumps(request)], list(fds))
        reply = self.sock.recv(64)
        if len(reply) != 8:
            raise OSError("the zygote is gone")
        pid = struct.unpack("!q", reply)[0]
        if pid <= 0:  # never a pid: kill(-1) would signal every process we may
            raise SpareRefused(-pid or errno.EAGAIN, "the zygote could not fork a spare")
        return pid

    def close(self) -> None:
        self.sock.close()


def start(protections) -> Zygote | None:
    """Fork the zygote (None where spares cannot be adopted). The worker must be single-threaded
    and have run no torch op: the zygote forks every spare from this state."""
    if not protections.subreaper:
        return None
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    worker = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            keep = theirs.fileno()
            _close_other_fds(keep)
            serve(theirs, worker, protections)
        finally:
            os._exit(0)
    theirs.close()
    return Zygote(pid, ours)


def respawn(protections) -> Zygote:
    """A zygote started afresh, by exec: the worker's memory is not inherited (it now holds the
    lessons). Slower than start() (it imports torch again): only when the forked one died."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            keep = theirs.fileno()
            os.set_inheritable(keep, True)
            _close_other_fds(keep)
            os.execv(sys.executable, [sys.executable, "-m", __name__, str(keep)])
        finally:
            os._exit(70)
    theirs.close()
    return Zygote(pid, ours)


def _close_other_fds(keep: int) -> None:
    """The UI's pipes are the worker's alone: 0 from /dev/null, 1 to stderr, the rest closed."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 16)


def serve(sock: socket.socket, worker: int, protections) -> None:
    """The zygote's loop: one setup, then a spare per request, until the worker goes away."""
    from tutor.engine.hardening import die_with_parent

    die_with_parent(protections, worker)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    # While the worker reads the lessons: every spare inherits the traps, not set ~40 ms each.
    from tutor.kit import probe_tools

    probe_tools.install_traps()
    data = sock.recv(MESSAGE)
    if not data:
        return
    state = _prepare(pickle.loads(data), protections)
    while True:
        if state["queue"] and not select.select([sock], [], [], IDLE)[0]:
            _warm_one(state)
            continue
        try:
            message, fds, _, _ = socket.recv_fds(sock, MESSAGE, 3)
        except OSError:
            return
        if not message:
            return
        request = pickle.loads(message)
        try:
            pid = _fork_spare(state, request, fds, worker, sock)
        except OSError as exc:
            pid = -(exc.errno or errno.EAGAIN)
        finally:
            for fd in fds:
                os.close(fd)
        sock.sendall(struct.pack("!q", pid))


def _prepare(config: dict, protections) -> dict:
    """What every spare shares, made once here: the checks, their inputs, the fence, the warm-up."""
    import torch

    from tutor.engine import child
    from tutor.engine.checks_loader import compiled_runs, load_checks, seed_inputs
    from tutor.engine.confine import fence, landlock
    from tutor.kit import probe_tools
    from tutor.model import lesson as lesson_model

    torch.set_num_threads(1)
    lesson_model.preload(config["lessons"])  # the checks' declared_settings: no lesson.toml read
    modules = load_checks(config["lessons"])
    seed_inputs(modules, config["seed"])
    inputs = {lesson: module.make_inputs() for lesson, module in modules.items()}
    protected = config["protected"]
    state = {
        "modules": modules,
        "inputs": inputs,
        "fenced": fence.inventory(protected),
        "rules": landlock.plan(protected) if protections.landlock else None,
        "protections": protections,
        "warm": compiled_runs(config["warm"]),
        "batch": config["batch"],
        "queue": [],  # the app's: (warm-up run, step) still to do here (_warm_one)
        "warmed": set(),  # lessons whose spares are forked warm, with no warm-up of their own
    }
    if config["batch"]:
        # `grade`: every spare is forked warm from here (see spares.SparePool.warm_for_batch).
        probe_tools.install_traps()
        child.warm_up(list(state["warm"]), modules, inputs)
    clone_parent.calibrate()  # one fork: spares are then cloned as the worker's children
    gc.freeze()
    gc.enable()
    return state


def _queue_warm_up(state: dict, lesson: str | None) -> None:
    """In the app, the lesson a spare is asked for is warmed up here too, a step at a time
    while no spare is asked for: later spares are then forked warm and skip their own warm-up,
    which cost each of them ~55 ms of CPU, a save's largest share."""
    if state["batch"] or lesson is None or lesson in state["warmed"]:
        return
    if any(queued[0][0] == lesson for queued in state["queue"]):
        return
    for run in state["warm"]:
        if run[0] == lesson:
            state["queue"] += [(run, step) for step in run[4]]


def _warm_one(state: dict) -> None:
    """One step of the queued warm-up; after a lesson's last, its spares are forked warm."""
    from tutor.engine import child
    from tutor.kit import probe_tools

    (lesson, name, source, code, _), step = state["queue"].pop(0)
    probe_tools.install_traps()
    child.warm_up([(lesson, name, source, code, [step])], state["modules"], state["inputs"])
    if not any(queued[0][0] == lesson for queued in state["queue"]):
        state["warmed"].add(lesson)
        gc.freeze()  # what the warm-up left: out of the children's collections, as the rest


def spare_warm_up(state: dict, lesson: str | None) -> list:
    """What a spare warms up on by itself: nothing where it is forked warm (`grade`, or a
    lesson warmed up here); else its lesson's runs, or every lesson's before the first run."""
    if state["batch"] or lesson in state["warmed"]:
        return []
    return runs_for(state["warm"], lesson)


def _fork_spare(state: dict, request: dict, fds: list[int], worker: int, sock) -> int:
    if len(fds) != 3:
        raise OSError("a spare needs 3 fds")
    _queue_warm_up(state, request["lesson"])
    if clone_parent.ready():  # the worker's child at once: no in-between process
        pid = clone_parent.fork()
        if pid == 0:
            try:
                _spare(state, request, fds, worker, None, sock)
            finally:
                os._exit(70)
        return pid
    pid_r, pid_w = os.pipe()
    try:
        middle = os.fork()
        if middle == 0:
            try:
                os.close(pid_r)
                spare = os.fork()
                if spare == 0:
                    os.close(pid_w)
                    _spare(state, request, fds, worker, os.getppid(), sock)
                os.write(pid_w, struct.pack("!q", spare))
            finally:
                os._exit(0)
        os.close(pid_w)
        pid_w = -1
        os.waitpid(middle, 0)  # the spare is the worker's child from here on
        got = os.read(pid_r, 8)
    finally:
        os.close(pid_r)
        if pid_w >= 0:
            os.close(pid_w)
    if len(got) != 8:
        raise OSError("no spare")
    return struct.unpack("!q", got)[0]


def _spare(
    state: dict, request: dict, fds: list[int], worker: int, middle: int | None, sock
) -> None:
    from tutor.engine.child import serve_one
    from tutor.engine.hardening import die_with_parent

    sock.close()
    # Adopted by the worker once the intermediate exits; only then may it die with its parent.
    deadline = time.monotonic() + 5
    while middle is not None and os.getppid() == middle and time.monotonic() < deadline:
        time.sleep(0.0002)
    if os.getppid() != worker:
        os._exit(0)
    die_with_parent(state["protections"], worker)
    warm = spare_warm_up(state, request["lesson"])
    # The warm-up's code held by this list alone (serve_one empties it): the frames above the
    # learner's lead to `state`, and what the warm-up ran must be gone, starter or not. The
    # zygote's own queue of warm-up steps holds that code too.
    state["warm"] = []
    state["queue"] = []
    job_r, result_w, output_w = fds
    serve_one(
        job_r,
        result_w,
        output_w,
        state["modules"],
        request["protected"],
        warm,
        state["fenced"],
        state["protections"],
        (state["rules"], request["scratch"]),
        request["cgroup"],
        state["inputs"],
    )
    os._exit(70)  # serve_one never returns


if __name__ == "__main__":
    # A zygote started afresh (exec), when the forked one died: the worker's memory is not
    # inherited, since it now holds the lessons. argv: the socket's fd.
    from tutor.engine.confine.platform_probe import probe

    serve(socket.socket(fileno=int(sys.argv[1])), os.getppid(), probe())
    os._exit(0)
