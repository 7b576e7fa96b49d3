"""The supervisor's state, and what every layer of it does: kill and reap-proof a child, close
its pipes, tell the UI a step's verdict.

The supervisor is built in layers, each a module and a class on top of the one below:
SupervisorBase (here) → OutputReader (output_capture.py) → SparePool (spares.py) →
Scheduler (scheduling.py) → VerdictFlow (verdict_flow.py) → Supervisor (supervisor.py, the
loop). A layer calls only what it or the layers below define.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import time
from typing import TYPE_CHECKING, Any

from tutor.engine import protocol
from tutor.engine.confine import leftovers, pids_cgroup
from tutor.engine.confine.platform_probe import Protections
from tutor.engine.jobs import Job, Judging, Spare
from tutor.model.results import StepResult

if TYPE_CHECKING:
    from tutor.engine.zygote import Zygote

QUIET_AFTER_RUN = 0.15  # s between a run's last verdict and forking new spares


class SupervisorBase:
    # Set by Supervisor.__init__ (supervisor.py); what each holds is said there.
    modules: dict[str, Any]
    lessons: dict[str, Any]
    protections: Protections
    zygote: Zygote | None
    zygote_config: dict[str, Any]
    warm: list[tuple]
    inputs: dict[str, Any]
    fenced: Any
    read_rules: Any
    scratches: dict[int, str]
    bound: pids_cgroup.Bound | None
    lesson_in_use: str | None
    batch: bool
    batch_warm: bool
    flooding: dict[str, bool]
    out_fd: int
    memory: int
    scratch_limit: int
    scratch_entries: int
    sel: selectors.BaseSelector
    jobs: dict[int, Job]
    by_pid: dict[int, Job]
    dying: set[int]
    next_job: int
    current_gen: int
    pending_steps: dict[int, set[str]]
    inbuf: bytes
    judge_sock: socket.socket  # set by VerdictFlow.start_judge, from __init__ on
    judge_pid: int | None
    spares: list[Spare]
    judging: dict[int, Judging]
    next_judging: int
    quiet_until: float
    next_tick: float

    def kill_pid(self, pid: int) -> None:
        """SIGKILL a child and its process group (threads, subprocesses, forks the learner left)."""
        if pid <= 0:  # kill(0) or kill(-1): our own group, or every process we may signal
            return
        for target in (
            lambda: os.killpg(pid, signal.SIGKILL),
            lambda: os.kill(pid, signal.SIGKILL),
        ):
            with contextlib.suppress(OSError):
                target()
        self.dying.add(pid)

    def kill(self, job: Job) -> None:
        # Once reaped, a pid may be reused by any process (pid_max is often 32768): never signal
        # it again. Its group was killed at reap time (see reap).
        if job.status is None:
            self.kill_pid(job.pid)

    def close_fd(self, fd: int) -> None:
        if fd < 0:
            return
        with contextlib.suppress(KeyError, ValueError):
            self.sel.unregister(fd)
        os.close(fd)

    def finish(self, job: Job) -> None:
        self.kill(job)
        for fd in (job.result_fd, job.output_fd):
            self.close_fd(fd)
        job.result_fd = job.output_fd = -1
        self.jobs.pop(job.id, None)
        if self.by_pid.get(job.pid) is job:
            del self.by_pid[job.pid]

    def remove_scratch(self, pid: int) -> None:
        scratch = self.scratches.pop(pid, None)
        if scratch is not None:
            leftovers.remove(scratch)  # not shutil.rmtree: a deep tree made it raise and stay

    def emit(self, event: protocol.Event) -> None:
        data = (json.dumps(protocol.event_to_json(event)) + "\n").encode()
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.out_fd, view) :]
            except BlockingIOError:
                time.sleep(0.001)

    def report(
        self, gen: int, step: str, started: float, output: tuple[str, int], result: StepResult
    ) -> None:
        result.output, result.output_dropped = output
        result.ms = round((time.monotonic() - started) * 1000, 1)
        self.emit(protocol.StepVerdict.of(gen, result))
        left = self.pending_steps.get(gen)
        if left is not None:
            left.discard(step)
            if not left:
                del self.pending_steps[gen]
                self.emit(protocol.Done(gen))
                self.quiet_until = time.monotonic() + QUIET_AFTER_RUN
