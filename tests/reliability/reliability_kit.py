"""Helpers for the reliability tests: a real check worker driven through the client API,
learner files written to disk, and readers for verdicts and for processes in /proc.

No mocks: every case is a file on disk, sent to a real worker process, which forks a
real child that runs it; the judge process gives the verdicts.
"""

from __future__ import annotations

import dataclasses
import os
import textwrap
import threading
import time
from contextlib import contextmanager, suppress
from pathlib import Path

from tutor.engine import protocol
from tutor.engine.client import WORKER_SCRIPT_ENV, EngineClient, WorkerGone
from tutor.model.lesson import all_lessons
from tutor.model.results import StepResult

ROOT = Path(__file__).resolve().parents[2]
STANDIN = ROOT / "tests" / "tools" / "worker_standin.py"
LESSONS = all_lessons()
REFERENCE = {lesson.id: lesson.reference_path.read_text(encoding="utf-8") for lesson in LESSONS}
CHECKED = {lesson.id: [s.id for s in lesson.checked_steps] for lesson in LESSONS}
FILENAME = {lesson.id: lesson.file_name for lesson in LESSONS}
# The session workers (conftest.py): `live` with a short step timeout, so cases that must
# time out cost little; `memory_live` with a smaller memory limit and a longer timeout.
STEP_TIMEOUT = 2.0
MEMORY_MB = 512
MEMORY_TIMEOUT = 10.0
# lm3-l3: which checked steps call which of the learner's names.
STEPS_OF = {
    "causal_attention": ["single-head", "leakage"],
    "CausalMultiHeadAttention": ["multi-head"],
    "expected_shapes": ["shapes"],
}


def with_code(code: str, lesson: str = "lm3-l3") -> str:
    """The reference solution with code appended: a later def replaces the reference's."""
    return REFERENCE[lesson] + "\n\n" + textwrap.dedent(code).strip("\n") + "\n"


def at_import(code: str, lesson: str = "lm3-l3") -> str:
    return with_code(code, lesson)


UNMASKED = """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    weights = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
    return weights @ v, weights
"""


def problem_keys(result: StepResult) -> set[str]:
    """Catalog keys in the messages of the checks that did not pass, nested ones included."""
    keys: set[str] = set()

    def walk(value):
        if isinstance(value, dict):
            if "key" in value and isinstance(value["key"], str):
                keys.add(value["key"])
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    for c in result.checks:
        if c.status != "pass" and c.message is not None:
            keys.add(c.message.key)
            walk(c.message.params)
    return keys


def first_message(result: StepResult):
    return next((c.message for c in result.checks if c.status != "pass" and c.message), None)


def summary(results: dict[str, StepResult]) -> str:
    out = []
    for sid, r in results.items():
        out.append(f"{sid}: {r.status} ({r.ms} ms)")
        for c in r.checks:
            if c.status != "pass":
                out.append(
                    f"    {c.id} {c.status} {c.message.key if c.message else ''} "
                    f"{c.message.params if c.message else ''}"[:400]
                )
        if r.failure:
            out.append(
                f"    failure {r.failure.kind}: {r.failure.detail[:200]} "
                f"frames={[(f.line, f.function) for f in r.failure.frames]}"
            )
        if r.output:
            out.append(f"    output tail: {r.output[-160:]!r}")
    return "\n".join(out)


class Run:
    def __init__(self, gen: int, started: float):
        self.gen = gen
        self.started = started
        self.results: dict[str, StepResult] = {}
        self.arrived: dict[str, float] = {}  # s after submit
        self.done = threading.Event()


class LiveWorker:
    """One real worker; run() submits a file and waits for its generation's `done`."""

    def __init__(
        self, timeout: float, env: dict | None = None, batch: bool = False, warm: bool = False
    ):
        """batch: a `grade` worker (kept runs, no views; it warms up in itself). warm: forked
        from the suite's warm server like other tests' workers, for tests that never read its
        pid or its children."""
        self.timeout = timeout
        self.env = env or {}
        self.warm = warm
        self.lock = threading.Lock()
        self.runs: dict[int, Run] = {}
        self.events: list[dict] = []  # every event the client delivered, in order
        self.gone: list[dict] = []
        self.worker = EngineClient(self.on_event, timeout=timeout, keep=batch, views=not batch)

    def start(self, wait: bool = True) -> None:
        # Tests read this worker's pid and its children: unless warm, it starts as in use,
        # never forked from the suite's warm server (tests/conftest.py), whichever test starts
        # it first. The client copies os.environ into the worker's.
        script = str(STANDIN) if self.warm else None
        with patched_env({**self.env, WORKER_SCRIPT_ENV: script}):
            self.worker.start()
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        if not self.worker.ready.wait(60):
            raise WorkerGone("the check worker did not become ready")

    @property
    def pid(self) -> int:
        return self.worker.proc.pid

    def on_event(self, event: dict) -> None:
        now = time.monotonic()
        with self.lock:
            self.events.append(event)
            run = self.runs.get(getattr(event, "gen", None))
        if event.type == "step" and run is not None:
            run.results[event.result.id] = event.result
            run.arrived[event.result.id] = now - run.started
        elif event.type == "done" and run is not None:
            run.done.set()
        elif event.type == "gone":
            self.gone.append(event)
            for r in list(self.runs.values()):
                r.done.set()

    def submit(self, lesson: str, source: str, steps=None, filename: str | None = None) -> Run:
        with self.lock:
            started = time.monotonic()
            gen = self.worker.submit(
                lesson,
                filename or f"/tmp/attn-lab/{FILENAME[lesson]}",
                source,
                steps or CHECKED[lesson],
            )
            run = self.runs[gen] = Run(gen, started)
        return run

    def run(
        self, lesson: str, source: str, steps=None, filename: str | None = None, wait: float = 60
    ) -> Run:
        run = self.submit(lesson, source, steps, filename)
        assert run.done.wait(wait), f"no 'done' for generation {run.gen} within {wait} s"
        assert not self.gone, f"the worker ended: {self.gone}"
        return run

    def request(self, obj: dict, reply: str, wait: float = 5) -> dict:
        """A raw protocol request (ping, stats) and the first reply of that type after it, as a dict."""
        with self.lock:
            start = len(self.events)
        self.worker._send(protocol.request_from_json(obj))
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with self.lock:
                found = next((e for e in self.events[start:] if e.type == reply), None)
            if found:
                return {"type": found.type, **dataclasses.asdict(found)}
            time.sleep(0.01)
        raise TimeoutError(f"no {reply!r} from the worker")

    def close(self) -> None:
        self.worker.close()


@contextmanager
def patched_env(env: dict):
    """os.environ with env's values set (None: unset) while the block runs."""
    saved = {k: os.environ.get(k) for k in env}
    _set_env(env)
    try:
        yield
    finally:
        _set_env(saved)


def _set_env(values: dict) -> None:
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


# ------------------------------------------------------------------ processes in /proc


def proc_alive(pid: int, start: str | None = None) -> bool:
    """Running (not a zombie), and the same process if its start time is given."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0] not in ("Z", "X") and (start is None or fields[19] == start)


def children_of(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        with suppress(OSError):
            found.update(
                int(p) for p in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
            )
    return found


def with_cmdline(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = (
                    Path(f"/proc/{entry}/cmdline")
                    .read_bytes()
                    .replace(b"\0", b" ")
                    .decode(errors="replace")
                )
            except OSError:
                continue
            if marker in cmd and proc_alive(int(entry)):
                found.append(int(entry))
    return found


# Learner code: record a process (pid and start time) on stdout, where the test finds it in the
# step's output (Landlock lets the code write nowhere the test could look).
RECORD = '''
def _record_line(pid=None):
    import os
    pid = pid or os.getpid()
    start = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19]
    return f"\\nattn-record {pid} {start}\\n".encode()

def _record(pid=None):
    import os
    os.write(1, _record_line(pid))

def _forked():
    """os.fork(), and the child records itself before the parent goes on (so that its record
    is in the step's output, ahead of the step's end)."""
    import os
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _record()
        os.write(w, b".")
        os.close(w)
        return 0
    os.close(w)
    os.read(r, 1)
    os.close(r)
    return pid
'''


def recorded(outputs) -> dict[int, str]:
    """pid -> start time, from the steps' outputs."""
    import re

    found = {}
    for text in outputs:
        for pid, start in re.findall(r"attn-record (\d+) (\d+)", text):
            found[int(pid)] = start
    return found


def recorded_alive(records: dict[int, str]) -> list[int]:
    return [pid for pid, start in records.items() if proc_alive(pid, start)]


def wait_until(predicate, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
