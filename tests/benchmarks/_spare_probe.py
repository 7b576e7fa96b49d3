"""Probes for bench_spare_parts.py, installed by the sitecustomize it writes: where a `grade`
worker's spare spends its time, from the fork to its exit. Nothing in tutor/ is edited.

Each event is a JSON line appended to ATTN_BENCH_SPARES. A spare's events before its job are
kept in memory (serve_one closes the fds it did not make) and written once it waits for the
job, through a file it opens then and keeps (Landlock refuses a new open after the job).
"""

from __future__ import annotations

import functools
import json
import os
import resource
import time

PATH = os.environ.get("ATTN_BENCH_SPARES", "")
_state = {"fd": None, "pid": None, "child": False, "forked_at": None, "buffer": []}


def emit(ev: str, **fields) -> None:
    line = json.dumps({"ev": ev, "pid": os.getpid(), "t": time.perf_counter_ns(), **fields})
    if _state["child"] and _state["pid"] == os.getpid():
        if _state["fd"] is None:
            _state["buffer"].append(line)
            return
        os.write(_state["fd"], (line + "\n").encode())
        return
    fd = os.open(PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _open_for_child() -> None:
    _state["fd"] = os.open(PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(_state["fd"], ("\n".join(_state["buffer"]) + "\n").encode())
    _state["buffer"] = []


def timed(owner, name: str, ev: str) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        t, c = time.perf_counter_ns(), time.process_time_ns()
        try:
            return original(*args, **kwargs)
        finally:
            emit(ev, dur=(time.perf_counter_ns() - t) / 1e6, cpu=(time.process_time_ns() - c) / 1e6)

    setattr(owner, name, wrapped)


def install(w) -> None:
    """w: tutor.engine.supervisor, imported, not yet run."""
    from tutor.engine import child as sandbox
    from tutor.engine.confine import fence, pids_cgroup

    me = os.getpid()
    real_fork = os.fork

    def fork():
        pid = real_fork()
        if pid == 0:
            _state["forked_at"] = time.perf_counter_ns()
        return pid

    os.fork = fork

    def wait4_as_waitpid(pid, options):
        got, status, usage = os.wait4(pid, options)
        if got and os.getpid() == me:
            emit(
                "reaped",
                child=got,
                cpu=(usage.ru_utime + usage.ru_stime) * 1000,
                faults=usage.ru_minflt,  # mostly copy-on-write of the parent's pages
            )
        return got, status

    w.os = type(os)("os_probe")
    w.os.__dict__.update(os.__dict__)
    w.os.waitpid = wait4_as_waitpid

    timed(w.Supervisor, "fork_spare", "w_fork_spare")
    timed(w, "load_checks", "w_load_checks")  # once
    timed(w.Supervisor, "warm_for_batch", "w_warm_for_batch")  # once: the old tree's warm-up
    try:
        from tutor.engine import zygote

        timed(zygote.Zygote, "fork_spare", "w_zygote_round_trip")
        timed(zygote, "_fork_spare", "z_fork_spare")
        timed(zygote, "_prepare", "z_prepare")  # once: checks, inputs, fence, warm-up

        def wait_middle(pid, options):  # the in-between process's CPU (its fork, its exit)
            got, status, usage = os.wait4(pid, options)
            emit("z_middle_reaped", cpu=(usage.ru_utime + usage.ru_stime) * 1000)
            return got, status

        zygote.os = type(os)("os_probe")
        zygote.os.__dict__.update(os.__dict__)
        zygote.os.waitpid = wait_middle
    except ImportError:
        pass

    original_serve = sandbox.serve_one

    @functools.wraps(original_serve)
    def serve_one(*args, **kwargs):
        _state["child"], _state["pid"] = True, os.getpid()
        now = time.perf_counter_ns()
        emit(
            "c_serve",
            cpu=time.process_time_ns() / 1e6,  # a fork's counters start at zero
            since_fork=(now - (_state["forked_at"] or now)) / 1e6,
        )
        return original_serve(*args, **kwargs)

    sandbox.serve_one = serve_one
    timed(pids_cgroup, "enter", "c_cgroup_enter")
    timed(sandbox, "_arrange_fds", "c_arrange_fds")
    timed(sandbox, "_warm_up", "c_warm_up")
    timed(sandbox, "_limit_resources", "c_limits")
    timed(sandbox, "_prepare_files", "c_landlock_prepare")
    timed(sandbox, "_confine", "c_seccomp")
    timed(fence, "install", "c_fence")
    timed(sandbox, "_restrict_files", "c_landlock_restrict")
    timed(sandbox, "_run", "c_run")
    real_read_job = sandbox._read_job

    def read_job(fd):
        emit("c_ready", cpu=time.process_time_ns() / 1e6)
        _open_for_child()
        t = time.perf_counter_ns()
        job = real_read_job(fd)
        emit("c_job", waited=(time.perf_counter_ns() - t) / 1e6, cpu=time.process_time_ns() / 1e6)
        return job

    sandbox._read_job = read_job
    real_exit = sandbox._exit

    def _exit(code):
        if _state["child"] and _state["fd"] is not None:
            u = resource.getrusage(resource.RUSAGE_SELF)
            emit("c_exit", cpu=(u.ru_utime + u.ru_stime) * 1000)
        real_exit(code)

    sandbox._exit = _exit
