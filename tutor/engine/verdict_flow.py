"""From a child's frame to a verdict: the frame read, sent to the judge, its reply reported; a
child that died or ran out of time reported as its step's failure (deaths.py); a judge that
died restarted, and the steps it held sent again."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import selectors
import signal
import socket
import time
from typing import cast

from tutor.engine import deaths, protocol
from tutor.engine.framing import recv_frame, send_frame
from tutor.engine.hardening import die_with_parent
from tutor.engine.jobs import Job, Judging
from tutor.engine.judge_process import judge_main
from tutor.engine.output_capture import take_output
from tutor.engine.process_info import resident_bytes
from tutor.engine.scheduling import Scheduler
from tutor.model.results import Failure, StepResult

JUDGE_DEATHS = 2  # judges a step may cost (see judge_died) before it is said to be unjudgeable
JUDGE_LIMIT = 60.0  # s a judge may spend on one step (~0.1 s is usual) before it is killed


class VerdictFlow(Scheduler):
    def start_judge(self) -> None:
        parent, child = socket.socketpair()
        gc.freeze()  # see fork_spare
        me = os.getpid()
        pid = os.fork()
        if pid == 0:
            die_with_parent(self.protections, me)
            parent.close()
            fd = child.fileno()
            os.closerange(3, fd)  # the UI's pipes, children's pipes: the judge needs none
            os.closerange(fd + 1, 1 << 16)
            os.setpgid(0, 0)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            for sig in (signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            signal.set_wakeup_fd(-1)  # the worker's, closed above
            judge_main(
                child,
                self.modules,
                {lid: lesson.message_keys() for lid, lesson in self.lessons.items()},
            )
            os._exit(0)
        child.close()
        self.judge_sock, self.judge_pid = parent, pid
        self.sel.register(parent, selectors.EVENT_READ, ("judge", None))

    def on_result(self, job: Job) -> None:
        open_ = self.read_result(job)
        while not job.result_done and (job.reader.payload is not None or job.reader.too_big):
            self.on_frame(job)
        if not job.result_done and not open_ and job.status is not None:
            self.report_death(job)

    def on_exit(self, job: Job) -> None:
        """The child was reaped before all its frames came: what it wrote is in the pipe already."""
        self.read_result(job)
        while not job.result_done and (job.reader.payload is not None or job.reader.too_big):
            self.on_frame(job)
        if not job.result_done:
            self.report_death(job)

    def on_frame(self, job: Job) -> None:
        """A step's frame is in. Its payload goes to the judge unread: parsing it is the judge's work."""
        from tutor.engine.codec import FrameReader

        if job.reader.too_big:
            self.report_failure(job, "error", Failure("channel", ""), "failure.channel", {})
            return
        self.drain_output(job)
        step, started, output, payload = (
            job.step,
            job.started,
            take_output(job),
            cast(bytes, job.reader.payload),  # a frame is in: its payload is set
        )
        job.index += 1
        if job.index < len(job.steps):
            rest = job.reader.rest
            job.reader = FrameReader(job.tokens[job.index])
            job.reader.feed(rest)
            job.step_read = 0
            now = time.monotonic()
            job.started, job.deadline = now, now + job.timeout
        else:
            job.result_done = True
            self.finish(job)  # all it had to say is read: the child ends, the fds close
        self.send_to_judge(job, step, started, output, payload)

    def send_to_judge(
        self, job: Job, step: str, started: float, output: tuple[str, int], payload: bytes
    ) -> None:
        key = self.next_judging
        self.next_judging += 1
        # A run someone watches (the app's, with views) never waits for the mutants; `check`
        # and `grade` do, for the diagnosis they print.
        wait = not job.views
        request = protocol.JudgeRequest(
            key, job.lesson, step, job.source, job.views, wait
        ).to_json()
        item = Judging(job.gen, step, started, *output, request, payload, time.monotonic())
        self.judging[key] = item
        try:
            self.resend(key, item)
        except OSError:  # the judge died: it is restarted, and this step sent to it again
            self.judge_died()

    def report_death(self, job: Job) -> None:
        """The child ended without a result: an exit, a signal, or a memory limit."""
        self.drain_output(job)
        dump = job.reader.before()
        said = deaths.describe_death(job, dump, self.scratch_limit, self.scratch_entries)
        if said is None:  # it crashed dumping where it was, at its deadline: out of time
            self.report_timeout(job, dump, 0)
            return
        failure, key, params = said
        self.report_failure(job, "error", failure, key, params)

    def on_timeout(self, job: Job) -> None:
        rss = resident_bytes(job.pid) if job.status is None else 0  # while it still runs
        self.read_result(job)  # faulthandler's report of where it was, written just before
        self.drain_output(job)
        self.report_timeout(job, job.reader.before(), rss)

    def report_timeout(self, job: Job, dump: str, rss: int) -> None:
        """Out of time (rss: the child's, at the deadline): deaths.describe_timeout says why."""
        failure, key, params, at_import = deaths.describe_timeout(job, dump, rss, self.memory)
        self.report_failure(job, "timeout", failure, key, params, same_for_rest=at_import)

    def on_judge(self) -> None:
        try:
            reply = protocol.JudgeReply.from_json(recv_frame(self.judge_sock))
        except (EOFError, OSError):
            self.judge_died()
            return
        except Exception:  # a reply we cannot read (the judge is broken): as if it had died
            self.kill_pid(self.judge_pid or 0)
            self.judge_died()
            return
        pending = self.judging.pop(reply.job, None)
        if pending is None or pending.gen < self.current_gen:
            return  # superseded while the judge worked on it
        self.report(
            pending.gen,
            pending.step,
            pending.started,
            (pending.output, pending.dropped),
            reply.result,
        )
        if any(c.id == "file-loads" for c in reply.result.checks):
            self.file_failed(pending.gen, reply.result)

    def file_failed(self, gen: int, result: StepResult) -> None:
        """A kept run's file does not load (an exception at import: a memory bomb's takes seconds
        to come): every step it has not reported would import it again to the same end. They get
        this verdict now, and its child ends. A run in the app is left alone."""
        running = [j for j in self.jobs.values() if j.gen == gen and j.keep and not j.result_done]
        rest = self.pending_steps.get(gen)
        if not running or not rest:
            return
        for job in running:
            self.finish(job)
            job.result_done = True
        self.judging = {k: j for k, j in self.judging.items() if j.gen != gen}
        for step in sorted(rest):
            self.report(gen, step, time.monotonic(), ("", 0), dataclasses.replace(result, id=step))

    def judge_died(self) -> None:
        """A new judge, and every step the dead one held sent to it again: a judge's death is
        never a verdict. The step it was judging (the oldest: it answers in order) is the likely
        cause; one that has now cost JUDGE_DEATHS judges is said to be unjudgeable, alone."""
        for _ in range(JUDGE_DEATHS + 1):
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(self.judge_sock)
            self.judge_sock.close()
            if self.judge_pid:
                self.kill_pid(self.judge_pid)
            pending = sorted((k, j) for k, j in self.judging.items() if j.gen >= self.current_gen)
            self.judging = dict(pending)
            if pending:
                pending[0][1].deaths += 1
            self.start_judge()
            try:
                for key, item in pending:
                    if item.deaths >= JUDGE_DEATHS:
                        del self.judging[key]
                        self.report_unjudged(item, "judge")
                    else:
                        self.resend(key, item)
                return
            except OSError:
                continue  # the new judge died at once: again, the oldest step counted
        for key, item in sorted(self.judging.items()):  # no judge would start
            del self.judging[key]
            self.report_unjudged(item, "judge")

    def report_unjudged(self, item: Judging, what: str) -> None:
        result = protocol.failed_step(
            item.step,
            "error",
            Failure("unjudged", what),
            "failure.unjudged",
            {"what": what},
            check="judge",
        )
        self.report(item.gen, item.step, item.started, (item.output, item.dropped), result)

    def resend(self, key: int, item: Judging) -> None:
        item.sent = time.monotonic()
        send_frame(self.judge_sock, item.request, item.payload)

    def judge_overdue(self) -> float | None:
        """When the step the judge works on now has had JUDGE_LIMIT: then it is killed (a judge
        looping on a child's data would hold every later verdict)."""
        if not self.judging:
            return None
        return min(j.sent for j in self.judging.values()) + JUDGE_LIMIT
