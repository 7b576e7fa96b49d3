"""Timestamps inside the app, its worker, the spare children and the judge, for
profile_breakdown.py. Nothing in tutor/ is edited: the UI is started through
_probe_app.py and the worker through _probe_worker.py, which wrap a few methods
before the real code runs. Each event is one JSON line appended (O_APPEND, one
write) to the file in ATTN_BENCH_PROBE, with time.time() (one clock for all).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
_FD: int | None = None


def emit(ev: str, **fields) -> None:
    global _FD
    path = os.environ.get("ATTN_BENCH_PROBE")
    if not path:
        return
    if _FD is None or os.getpid() != _FD_PID:
        _open(path)
    line = json.dumps({"ev": ev, "t": time.time(), "pid": os.getpid(), **fields}) + "\n"
    os.write(_FD, line.encode())


_FD_PID = -1


def _open(path: str) -> None:
    global _FD, _FD_PID
    _FD = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    _FD_PID = os.getpid()


def dig(text) -> str | None:
    if text is None:
        return None
    if isinstance(text, str):
        text = text.encode("utf-8", errors="surrogateescape")
    return hashlib.sha256(text).hexdigest()[:16]


def wrap(owner, name: str, before=None, after=None) -> None:
    """owner.name(*a) runs between before(*a) and after(result, *a), both optional."""
    original = getattr(owner, name)
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def wrapped(*args, **kwargs):
            if before:
                before(*args, **kwargs)
            result = await original(*args, **kwargs)
            if after:
                after(result, *args, **kwargs)
            return result
    else:

        @functools.wraps(original)
        def wrapped(*args, **kwargs):
            if before:
                before(*args, **kwargs)
            result = original(*args, **kwargs)
            if after:
                after(result, *args, **kwargs)
            return result

    setattr(owner, name, wrapped)


def timed(owner, name: str, ev: str) -> None:
    """One event per call, at its end: its duration and this thread's CPU time in it, ms (sync methods only)."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        t, c = time.perf_counter(), time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            emit(
                ev,
                dur=round((time.perf_counter() - t) * 1000, 3),
                cpu=round((time.thread_time() - c) * 1000, 3),
            )

    setattr(owner, name, wrapped)


# ------------------------------------------------------------------ the UI process


def install_ui() -> None:
    from tutor.app import app as app_mod
    from tutor.engine import client
    from tutor.workspace import watch

    wrap(
        watch.FileWatcher,
        "_read_settled",
        before=lambda self: emit("ui_batch"),
        after=lambda saved, self: emit("ui_read", d=saved and dig(saved.raw)),
    )
    wrap(
        app_mod.TutorApp,
        "run_checks",
        before=lambda self, text, raw: emit("ui_run_checks", d=dig(text)),
        after=lambda r, self, text, raw: emit("ui_run_checks_end", d=dig(text)),
    )
    wrap(client.EngineClient, "submit", after=lambda gen, self, *a, **k: emit("ui_sent", gen=gen))
    wrap(
        client.EngineClient,
        "start",
        before=lambda self, *a, **k: emit("ui_worker_start"),
        after=lambda r, self, *a, **k: emit("ui_worker_started"),
    )
    wrap(app_mod.TutorApp, "on_mount", before=lambda self: emit("ui_mount"))

    original_init = client.EngineClient.__init__

    def init(self, on_event, *args, **kwargs):
        def on_event_probe(event):
            result = getattr(event, "result", None)
            emit(
                "ui_recv",
                type=event.type,
                gen=getattr(event, "gen", None),
                step=getattr(result, "id", None),
            )
            return on_event(event)

        original_init(self, on_event_probe, *args, **kwargs)

    client.EngineClient.__init__ = init

    wrap(
        app_mod.TutorApp,
        "after_results",
        before=lambda self: emit(
            "ui_after_results", running=len(self.running), d=self.running_digest
        ),
        after=lambda r, self: emit(
            "ui_after_results_end", running=len(self.running), d=self.running_digest
        ),
    )

    # Screen updates: each timer-driven update (layout + compositor) and each layout pass,
    # with their durations; and the app's own render_* calls.
    from textual.screen import Screen

    timed(Screen, "_on_timer_update", "ui_frame")
    timed(Screen, "_refresh_layout", "ui_layout")
    for name in (
        "render_steps",
        "render_progress",
        "render_results",
        "render_fileinfo",
        "render_main",
        "tick",
        "remember",
    ):
        timed(app_mod.TutorApp, name, "ui_" + name)

    # Who asks for a layout: Widget.refresh(layout=True) (and the one that asks for a recompose).
    from textual.widget import Widget

    original_refresh = Widget.refresh

    def refresh(self, *regions, repaint=True, layout=False, recompose=False):
        if layout or recompose:
            emit(
                "ui_layout_request", widget=f"{type(self).__name__}#{self.id}", recompose=recompose
            )
        return original_refresh(self, *regions, repaint=repaint, layout=layout, recompose=recompose)

    Widget.refresh = refresh

    # Start our worker launcher instead of `python -m tutor.engine.supervisor`: the client
    # gets a copy of the subprocess module whose Popen swaps that one command line.
    import subprocess as _sp

    def popen(args, *a, **k):
        if list(args[1:3]) == ["-m", "tutor.engine.supervisor"]:
            args = [args[0], str(HERE / "_probe_worker.py")]
        return _sp.Popen(args, *a, **k)

    shim = type(sys)("subprocess_probe")
    shim.__dict__.update(_sp.__dict__)
    shim.Popen = popen
    client.subprocess = shim


# ------------------------------------------------------------------ the worker process (and its forks)


def install_worker(w) -> None:
    """w: the tutor.engine.supervisor module, imported (not run as __main__)."""
    from tutor.engine import child as sandbox
    from tutor.engine import judge as judge_mod

    wrap(w, "load_checks", after=lambda r, lessons: emit("w_checks_loaded"))
    wrap(w.Supervisor, "loop", before=lambda self: emit("w_loop"))
    wrap(w.Supervisor, "emit", before=lambda self, obj: obj.type == "ready" and emit("w_ready"))

    wrap(w.Supervisor, "on_stdin", before=lambda self: emit("w_stdin"))
    wrap(
        w.Supervisor,
        "handle_request",
        # Requests are the protocol's dataclasses (tutor.engine.protocol): read by attribute.
        before=lambda self, req: emit(
            "w_handle",
            type=req.type,
            gen=getattr(req, "gen", None),
            d=dig(getattr(req, "source", None)),
        ),
        after=lambda r, self, req: emit(
            "w_handle_end", type=req.type, gen=getattr(req, "gen", None)
        ),
    )

    def after_spawn(job, self, gen, lesson, steps, source, *a, **k):
        for step in steps:  # a job runs its steps in order, in one child
            emit("w_spawn", step=step, gen=gen, d=dig(source), child=job.pid)

    wrap(w.Supervisor, "spawn", after=after_spawn)
    wrap(
        w.Supervisor,
        "fork_spare",
        before=lambda self: emit("w_fork"),
        after=lambda sp, self: emit("w_fork_end", child=sp.pid),
    )

    digests = {}  # (gen, step) -> the source's digest: report() is not given the source

    def to_judge(self, job, step, *a):
        digests[(job.gen, step)] = dig(job.source)
        emit("w_to_judge", step=step, gen=job.gen, d=dig(job.source))

    wrap(w.Supervisor, "send_to_judge", before=to_judge)
    wrap(w.Supervisor, "on_judge", before=lambda self: emit("w_judge_reply"))
    wrap(
        w.Supervisor,
        "report",
        before=lambda self, gen, step, started, output, result: emit(
            "w_report", step=step, gen=gen, d=digests.get((gen, step)), status=result.status
        ),
    )

    def after_read_job(job, fd):
        if job is not None:
            for step in job["steps"]:
                emit("c_job", step=step, d=dig(job["source"]))

    # CPU time since the fork (a child's counters start at zero): the spare's preparation.
    wrap(
        sandbox,
        "_read_job",
        before=lambda fd: emit("c_ready", cpu=round(time.process_time() * 1000, 2)),
        after=after_read_job,
    )
    cpu0 = {}

    def cpu_start(key):
        cpu0[key] = time.process_time()

    def cpu_ms(key):
        return round((time.process_time() - cpu0.pop(key, time.process_time())) * 1000, 2)

    def run_before(job, step, *a):
        emit("c_run", step=step, d=dig(job["source"]))
        cpu_start("run")

    # A step's result message: encoded (the sandbox's own json.dumps) → written → the worker reads it.
    real_dumps = sandbox._dumps

    def dumps(obj, *a, **k):
        data = real_dumps(obj, *a, **k)
        emit("c_dumped", size=len(data), cpu=round(time.process_time() * 1000, 2))
        return data

    sandbox._dumps = dumps

    wrap(
        sandbox,
        "_run",
        before=run_before,
        after=lambda r, job, step, *a: emit(
            "c_run_end", step=step, d=dig(job["source"]), cpu=cpu_ms("run")
        ),
    )

    def judge_before(self, lesson, step, child, source, *a, **k):
        emit("j_start", step=step, d=dig(source))
        cpu_start("judge")

    wrap(
        judge_mod.Judge,
        "verdict",
        before=judge_before,
        after=lambda r, self, lesson, step, child, source, *a, **k: emit(
            "j_end", step=step, d=dig(source), status=r.status, cpu=cpu_ms("judge")
        ),
    )
