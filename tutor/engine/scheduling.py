"""A save's run handed to children: its checked steps to one child, in order, each experiment
to one of its own; the steps a child will not get to (it died, it hangs) to new children."""

from __future__ import annotations

import json
import os
import selectors
import time

import psutil

from tutor.engine import protocol
from tutor.engine.client import too_large
from tutor.engine.jobs import Job
from tutor.engine.output_capture import take_output
from tutor.engine.process_info import children_of, resident_bytes, runnable
from tutor.engine.spares import SparePool
from tutor.model.results import Failure

HEDGE_AFTER = 0.3  # s: a shared child still this busy hands the steps it has not begun to children of their own


class Scheduler(SparePool):
    def handle_request(self, req: protocol.Request) -> None:
        if isinstance(req, protocol.Quit):
            raise SystemExit(0)
        if isinstance(req, protocol.Ping):
            self.emit(protocol.Pong())
            return
        if isinstance(req, protocol.StatsRequest):  # for tests: what a leak would grow
            self.emit(
                protocol.Stats(
                    psutil.Process().num_fds(),
                    len(self.spares),
                    len(self.jobs),
                    sorted(children_of(os.getpid())),
                )
            )
            return
        if isinstance(req, protocol.Run):
            self.start_run(req)
        # Go: torch's import waited for it (supervisor.main); nothing more to do.

    def start_run(self, req: protocol.Run) -> None:
        gen = req.gen
        if self.batch and not self.batch_warm and req.lesson in self.modules:
            self.warm_for_batch(req.lesson)
        if not req.keep:
            # A newer save supersedes everything still running. A kept run supersedes nothing,
            # and sets no current_gen: the runs before it, kept too, still report.
            for job in list(self.jobs.values()):
                if job.gen < gen:
                    self.finish(job)
            self.pending_steps = {g: s for g, s in self.pending_steps.items() if g >= gen}
            self.judging = {k: j for k, j in self.judging.items() if j.gen >= gen}
            self.current_gen = gen
        lesson = req.lesson
        if lesson not in self.modules:
            self.emit(protocol.RunError(gen, f"unknown lesson {lesson!r}"))
            self.emit(protocol.Done(gen))
            return
        self.lesson_in_use = lesson
        # In the order the request lists them (the app puts the learner's step first).
        known = self.modules[lesson].STEPS
        steps = [s for s in dict.fromkeys(req.steps) if s in known] if req.steps else list(known)
        big = too_large(len(req.source.encode("utf-8", "replace")))
        if big is not None:  # the clients say so before sending; a file this large is not run
            self.pending_steps[gen] = set(steps)
            for step in steps:
                failure = Failure("too_large", big["size"])
                result = protocol.failed_step(
                    step, "error", failure, "failure.too_large", big, check="file-loads"
                )
                self.report(gen, step, time.monotonic(), ("", 0), result)
            if not steps:
                self.emit(protocol.Done(gen))
            return
        self.pending_steps[gen] = set(steps)
        checked = (
            {s.id for s in self.lessons[lesson].checked_steps} if lesson in self.lessons else set()
        )
        params = {s: p for s, p in req.params.items() if s in steps}
        together = [s for s in steps if s in checked]
        # An experiment may take a second: it never holds up the verdicts.
        groups = ([together] if together else []) + [[s] for s in steps if s not in checked]
        for group in groups:
            self.spawn(
                gen,
                lesson,
                group,
                req.source,
                req.filename,
                req.timeout,
                {s: params[s] for s in group if s in params},
                keep=req.keep,
                views=req.views,
                folder=req.folder,
            )
        if not steps:
            self.emit(protocol.Done(gen))

    def spawn(
        self,
        gen: int,
        lesson: str,
        steps: list[str],
        source: str,
        filename: str,
        timeout: float,
        params: dict | None = None,
        keep: bool = False,
        views: bool = True,
        folder: str | None = None,
    ) -> Job:
        from tutor.engine.codec import FrameReader

        # The child's frames must carry these: stray writes to its pipe do not.
        tokens = [os.urandom(16) for _ in steps]
        while True:
            spare = self.spares.pop(0) if self.spares else self.fork_spare()
            if not runnable(spare.pid):  # stopped or killed by the last run's code
                self.discard_spare(spare)
                continue
            now = time.monotonic()
            deadline = now + timeout  # from the hand-over, as the child counts it too
            job_data = json.dumps(
                {
                    "lesson": lesson,
                    "steps": steps,
                    "source": source,
                    "filename": filename,
                    "params": params or {},
                    "tokens": [t.hex() for t in tokens],
                    "views": views,
                    "folder": folder,
                    "deadline": deadline,
                    "timeout": timeout,
                }
            ).encode()
            try:
                view = memoryview(job_data)
                while view:
                    view = view[os.write(spare.job_fd, view) :]
                os.close(spare.job_fd)
                break
            except OSError:  # that spare died while it waited: take another
                self.discard_spare(spare)
        job = Job(
            self.next_job,
            gen,
            lesson,
            list(steps),
            tokens,
            source,
            filename,
            params or {},
            spare.pid,
            spare.result_fd,
            spare.output_fd,
            deadline,
            now,
            now,
            timeout,
            FrameReader(tokens[0]),
            spare.rss_limit,
            spare.output_pipe,
            keep=keep,
            views=views,
            folder=folder,
        )
        # The worker's RSS at fork (rss_limit's baseline) counts file pages a fresh child has not
        # touched yet: measured against it, what a job holds came out up to ~100 MB short.
        job.rss_start = resident_bytes(job.pid)
        self.next_job += 1
        self.jobs[job.id] = job
        self.by_pid[job.pid] = job
        self.sel.register(job.result_fd, selectors.EVENT_READ, ("result", job.id))
        if self.flooding.get(lesson):
            job.flood = True
            self.watch_output(job, True)
        return job

    def spawn_each(self, job: Job, steps: list[str]) -> None:
        """Steps a job will not run: a child each, as soon as possible."""
        for step in steps:
            self.spawn(
                job.gen,
                job.lesson,
                [step],
                job.source,
                job.filename,
                job.timeout,
                {step: job.params[step]} if step in job.params else None,
                keep=job.keep,
                views=job.views,
                folder=job.folder,
            )

    def hedge(self, job: Job) -> None:
        rest = job.steps[job.index + 1 :]
        job.steps = job.steps[: job.index + 1]
        job.tokens = job.tokens[: job.index + 1]
        self.spawn_each(job, rest)

    def report_failure(
        self,
        job: Job,
        status: str,
        failure: Failure,
        key: str,
        params: dict,
        same_for_rest: bool = False,
    ) -> None:
        """The job's current step ends here, and with it the child: the steps after it go elsewhere
        (same_for_rest: they are given this step's verdict, without running)."""
        rest = job.steps[job.index + 1 :]
        self.finish(job)
        result = protocol.failed_step(job.step, status, failure, key, params)
        self.report(job.gen, job.step, job.started, take_output(job), result)
        job.result_done = True
        if same_for_rest:
            for step in rest:
                self.report(
                    job.gen,
                    step,
                    time.monotonic(),
                    ("", 0),
                    protocol.failed_step(step, status, failure, key, params),
                )
            return
        self.spawn_each(job, rest)
