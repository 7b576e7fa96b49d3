"""The UI side of the check worker. Imports no torch: the worker does.

One EngineClient owns one worker process. Runs are numbered (generations); the
worker drops older ones when a newer arrives, and so do we.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from tutor.engine import protocol
from tutor.engine.protocol import Done, Event, Gone, Ready, Request, StepVerdict
from tutor.engine.wire import PROTOCOL_VERSION
from tutor.model.results import StepResult

DEFAULT_TIMEOUT = 3.0
# A learner's file larger than this is not run (check, grade, the app alike): the lessons'
# solutions are a few KiB, and a 104 MiB file of comments held a class's batch 135 s.
MAX_SOURCE_BYTES = 1 << 20
LESSON_DIR_ENV = "ATTN_TUTOR_LESSON_DIR"  # read by worker.main
SEED_ENV = "ATTN_TUTOR_SEED"  # read by worker.main: the checks' inputs drawn from this seed
BATCH_ENV = (
    "ATTN_TUTOR_BATCH"  # read by worker.main: kept runs only (`grade`), see Supervisor.batch
)
# read by worker.main: the lesson the client opens first, so that the spares forked before
# the first run warm up on it alone, not on every lesson
FIRST_LESSON_ENV = "ATTN_TUTOR_FIRST_LESSON"
# A Python script to run in place of `-m tutor.engine.supervisor`. Only the test suite sets
# it: its stand-in has the worker forked from a process that imported torch once
# (tests/tools/warm_workers.py), instead of importing torch in every worker.
WORKER_SCRIPT_ENV = "ATTN_TUTOR_WORKER_SCRIPT"
SUPERVISOR = "tutor.engine.supervisor"


class WorkerGone(RuntimeError):
    pass


class ProtocolMismatch(WorkerGone):
    """The worker speaks another protocol version than this client (another checkout's
    worker): it is stopped, nothing is sent to it."""

    def __init__(self, theirs: int):
        super().__init__(
            f"the check worker speaks protocol version {theirs}, this client {PROTOCOL_VERSION}:"
            " they come from different versions of attn-tutor"
        )


class EngineClient:
    """Callbacks get protocol.Event objects: Ready, StepVerdict(gen, result), Done(gen),
    Gone(code) (the worker process ended), and the replies to raw requests (Pong, Stats).
    They run on a reader thread."""

    def __init__(
        self,
        on_event: Callable[[Event], None] | None,
        timeout: float = DEFAULT_TIMEOUT,
        log: Path | None = None,
        lesson_dir: Path | None = None,
        keep: bool = False,
        seed: int = 0,
        views: bool = True,
        lesson: str | None = None,
    ):
        self.lesson = lesson  # the lesson of the first run, when the caller knows it
        # lesson_dir: a lesson folder the worker loads in place of the installed lesson of its
        # id (`attn-tutor dev check PATH`: an author's copy, its checks.py included).
        self.lesson_dir = lesson_dir
        # keep: runs go side by side, none superseding another (`attn-tutor grade`); every
        # run's events are delivered, told apart by their gen.
        self.keep = keep
        self.seed = seed
        # views=False: no one will look at the runs' views (`check`, `grade`); the probes and
        # judges that honour it (ctx.views, jctx.views) skip what only feeds them.
        self.views = views
        self.on_event = on_event  # None until attach(): events wait for it
        self._early: list[Event] = []
        self._events_lock = threading.Lock()
        self.timeout = timeout
        self.log = log
        self.proc: subprocess.Popen | None = None
        self.gen = 0
        self.ready = threading.Event()
        self._lock = threading.Lock()
        self._closing = False
        self.mismatch: ProtocolMismatch | None = None  # set by a Ready of another version

    def start(self, defer: bool = False) -> None:
        """defer: the worker waits (up to worker.GO_WAIT) for go() before it imports torch, so
        that the app's first screen does not share the machine with that import."""
        stderr: int | IO[bytes] | None = subprocess.DEVNULL
        if os.environ.get("ATTN_TUTOR_DEBUG"):
            stderr = None
        elif self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            stderr = open(self.log, "ab")  # noqa: SIM115 (the worker writes it while it lives)
        env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
        # Run our own copy of the package, wherever the caller's cwd is.
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = (
            root + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else root
        )
        if self.lesson_dir is not None:
            env[LESSON_DIR_ENV] = str(Path(self.lesson_dir).resolve())
        if self.seed:
            env[SEED_ENV] = str(self.seed)
        if self.keep:
            env[BATCH_ENV] = "1"
        if self.lesson:
            env[FIRST_LESSON_ENV] = self.lesson
        script = os.environ.get(WORKER_SCRIPT_ENV)
        command = [sys.executable, script] if script else [sys.executable, "-m", SUPERVISOR]
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            start_new_session=True,  # Ctrl+C in the terminal is the app's, not the worker's
        )
        if not isinstance(stderr, int) and stderr is not None:
            stderr.close()
        threading.Thread(target=self._read, name="attn-worker-reader", daemon=True).start()
        if not defer:
            self.go()

    def go(self) -> None:
        try:
            self._send(protocol.Go())
        except WorkerGone:
            pass  # reported by the reader thread as "gone"

    def _read(self) -> None:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            try:
                event = protocol.event_from_json(json.loads(line))
            except ValueError:  # not JSON, or no event we know (protocol.Malformed): not for us
                continue
            if isinstance(event, Ready) and event.protocol != PROTOCOL_VERSION:
                self.mismatch = ProtocolMismatch(event.protocol)
                self.proc.kill()
                break
            if isinstance(event, Ready):
                self.ready.set()
            elif isinstance(event, (StepVerdict, Done)) and event.gen != self.gen and not self.keep:
                continue  # a result for a file that has since been saved again
            self._deliver(event)
        self.ready.clear()
        if not self._closing:
            detail = str(self.mismatch) if self.mismatch else ""
            self._deliver(Gone(self.proc.wait(), detail))

    def _deliver(self, event: Event) -> None:
        with self._events_lock:
            if self.on_event is None:
                self._early.append(event)
                return
            on_event = self.on_event
        on_event(event)

    def attach(self, on_event: Callable[[Event], None]) -> None:
        """Start receiving events; those that came before (the worker can be started before
        the app, to overlap torch's import with the UI's) are delivered first."""
        with self._events_lock:
            self.on_event = on_event
            early, self._early = self._early, []
        for event in early:
            on_event(event)

    def _send(self, request: Request) -> None:
        if self.mismatch is not None:
            raise self.mismatch
        if not self.proc or self.proc.poll() is not None or not self.proc.stdin:
            raise WorkerGone("the check worker is not running")
        try:
            self.proc.stdin.write((json.dumps(request.to_json()) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerGone(str(exc)) from exc

    def submit(
        self,
        lesson_id: str,
        filename: str,
        source: str,
        steps: list[str] | None = None,
        params: dict | None = None,
        folder: str | None = None,
        views: bool | None = None,
    ) -> int:
        """params: per step id, its settings as lesson.toml declares them (the probe's ctx.params).
        folder: the learner's own folder (grade: a student's), whose files the file may import.
        views: this run's, instead of the client's."""
        with self._lock:
            self.gen += 1
            self._send(
                protocol.Run(
                    self.gen,
                    lesson_id,
                    filename,
                    source,
                    steps,
                    float(self.timeout),
                    params or {},
                    keep=self.keep,
                    views=self.views if views is None else views,
                    folder=folder or None,
                )
            )
            return self.gen

    def close(self) -> None:
        self._closing = True
        if not self.proc:
            return
        if not self.ready.is_set():
            # Still importing torch: it would read "quit" only after that (seconds). It has no
            # children yet, or only ones that end when its pipes close.
            self.proc.kill()
        with contextlib.suppress(WorkerGone):
            self._send(protocol.Quit())
        try:
            # The worker reaps its children (up to its SHUTDOWN_GRACE, 2 s) and then removes
            # their scratch folders: a kill before that would leave them (a deep tree takes a
            # while on a loaded machine).
            self.proc.wait(timeout=6)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                stream and stream.close()


def check_source(
    lesson_id: str,
    filename: str,
    source: str,
    timeout: float = DEFAULT_TIMEOUT,
    steps: list[str] | None = None,
    params: dict | None = None,
    views: bool = True,
) -> list[StepResult]:
    """Run every checked step once and wait for all verdicts (for `attn-tutor check`)."""
    return check_sources(
        lesson_id, [(filename, source, steps)], timeout=timeout, params=params, views=views
    )[0]


def check_sources(
    lesson_id: str,
    runs: list[tuple[str, str, list[str] | None]],
    timeout: float = DEFAULT_TIMEOUT,
    params: dict | None = None,
    lesson_dir: Path | None = None,
    views: bool = True,
    viewed: frozenset[int] = frozenset(),
) -> list[list[StepResult]]:
    """Each (filename, source, steps) in turn through one worker (torch imported once), the
    verdicts of each run once all have come. views: see EngineClient; viewed: the runs (by
    index) that draw their views whatever views says.
    Should the worker die during a run (a tutor bug, never a verdict), the run goes again in a
    new one; dying again there, its steps without a verdict say the tutor could not judge them
    (WorkerGone when the run names no steps and none came)."""
    state: dict = {}

    def on_event(event: Event) -> None:
        if isinstance(event, StepVerdict):
            state["results"][event.result.id] = event.result
        elif isinstance(event, Done):
            state["done"].set()
        elif isinstance(event, Gone):
            state["gone"].append(event)
            state["done"].set()

    def start() -> EngineClient:
        worker = EngineClient(
            on_event, timeout=timeout, lesson_dir=lesson_dir, views=views, lesson=lesson_id
        )
        state["gone"] = []
        worker.start()
        return worker

    worker: EngineClient | None = start()
    out: list[list[StepResult]] = []
    try:
        for index, (filename, source, steps) in enumerate(runs):
            gone = None
            for _attempt in (1, 2):
                if worker is None:
                    worker = start()
                # One run at a time: the worker drops a run when a newer one comes.
                state["results"], state["done"] = {}, threading.Event()
                with contextlib.suppress(WorkerGone):  # the reader thread says "gone"
                    worker.submit(
                        lesson_id, filename, source, steps, params, views=views or index in viewed
                    )
                if not state["gone"]:
                    state["done"].wait()
                if not state["gone"]:
                    gone = None
                    break
                gone = state["gone"][0]
                worker.close()
                worker = None  # a new one for the next try, or the next run
            results = state["results"]
            if gone is not None:
                if not steps and not results:
                    raise WorkerGone(
                        gone.detail or f"the check worker ended (exit code {gone.code})"
                    )
                results = dict(results)
                for step in steps or []:
                    results.setdefault(step, unjudged_result(step, "worker"))
            out.append(list(results.values()))
    finally:
        if worker is not None:
            worker.close()
    return out


def unjudged_result(step: str, what: str) -> StepResult:
    """A step the tutor could not judge: its worker died on it, twice."""
    from tutor.model.results import Check, Failure, Message

    return StepResult(
        step,
        "error",
        [Check("judge", "error", Message("failure.unjudged", {"what": what}))],
        Failure("unjudged", what),
    )


def unreadable_results(lesson, key: str, params: dict) -> list[StepResult]:
    """Verdicts for a file we cannot hand to Python at all (not UTF-8): no run needed."""
    from tutor.model.results import Check, Message

    return [
        StepResult(s.id, "error", [Check("file-loads", "error", Message(key, params))])
        for s in lesson.checked_steps
    ]


def size_text(n: int) -> str:
    """A size as people read it: 1 MiB, 104.2 MiB, 980 KiB, 12 bytes."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def too_large(size: int) -> dict | None:
    """The message params for a file past MAX_SOURCE_BYTES (failure.too_large), else None."""
    if size <= MAX_SOURCE_BYTES:
        return None
    return {"size": size_text(size), "limit": size_text(MAX_SOURCE_BYTES)}


def decode_source(raw: bytes) -> tuple[str | None, dict | None]:
    """The file's text, or the message for why it has none (where the bad bytes are)."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, {"line": line, "byte": f"0x{raw[exc.start]:02x}"}


def check_file(
    lesson, path: Path, raw: bytes, timeout: float = DEFAULT_TIMEOUT
) -> list[StepResult]:
    from tutor.workspace.learner_file import learner_text, placed

    learner = learner_text(path, raw)
    if learner.text is None:
        assert learner.problem is not None  # no text: the problem says why
        return unreadable_results(lesson, *learner.problem)
    order = [s.id for s in lesson.checked_steps]
    # `check` prints no views: their probes are skipped (views=False), the verdicts are the same.
    results = check_source(
        lesson.id, str(path), learner.text, timeout=timeout, steps=order, views=False
    )
    by_id = {r.id: r for r in placed(results, learner, lesson)}
    return [by_id[s] for s in order if s in by_id]
