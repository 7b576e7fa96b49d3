"""The check worker: imports torch once, then runs each save's steps in pre-forked children.

It talks JSON lines with the UI (stdin/stdout) and never runs a torch op itself,
so that forking stays safe: the judge, forked at start, does the tensor work.

    UI ──run{gen, lesson, source}──► worker ──job──► child (learner code, step after step)
                                       │ ◄──one result frame per step── child
                                       ├──child data──► judge ──verdict──► worker
    UI ◄──step{gen, result}, done{gen}─┘   (also ping → pong, and stats → fd and child counts, for tests)

A save's checked steps share one child, in order: on 2 cores, four children at once
cost more than they save, and the judge works on one step while the child runs the
next. Each step still starts from a fresh import of the file and has the whole time
limit. A child that crashes or times out takes only its current step with it: the
steps after it get children of their own. So does a child still busy after HEDGE_AFTER,
so slow code costs no more time than when every step had its own child.

Every child ends with its run: the worker kills its process group, and as a child
subreaper it also gets (and kills) whatever the learner's code left behind in other
groups or sessions. While children run it ticks every TICK to watch their memory.
"""

from __future__ import annotations

import gc
import json
import os
import select
import selectors
import signal
import sys
import time

from tutor.engine import memory_watch, process_info, protocol
from tutor.engine.checks_loader import compiled_runs, load_checks, seed_inputs, warm_up_runs
from tutor.engine.confine import disk_quota, fence, landlock, leftovers
from tutor.engine.confine.platform_probe import probe
from tutor.engine.hardening import harden_self
from tutor.engine.jobs import Job, Judging, Spare
from tutor.engine.page_cache import torch_is_cached
from tutor.engine.process_info import children_of
from tutor.engine.scheduling import HEDGE_AFTER
from tutor.engine.verdict_flow import VerdictFlow
from tutor.engine.wire import PROTOCOL_VERSION

GO_WAIT = 1.0  # s at most before torch's import: see main
SHUTDOWN_GRACE = 2.0  # s at most to reap every child on the way out
TICK = 0.05  # s: how often the memory of running children is read, and leftovers swept


class Supervisor(VerdictFlow):
    """The worker's supervisor: its state (each layer's, see supervisor_base.py), the selector
    loop that drives the layers, reaping, and the way out."""

    def __init__(
        self,
        modules: dict,
        lessons: dict,
        out_fd: int,
        batch: bool = False,
        zygote=None,
        seed: int = 0,
        first_lesson: str | None = None,
    ):
        from tutor.engine.child import memory_limit_bytes

        self.modules = modules
        self.lessons = lessons
        self.protections = probe()
        protected = fence.protected_folders()
        # The spares' fork server (zygote.py): it never held a reference, an answer or the
        # judge's data. Told only what the children need, as data.
        self.zygote = zygote
        warm = warm_up_runs(lessons.values())
        self.zygote_config = {
            "lessons": list(lessons.values()),
            "seed": seed,
            "protected": protected,
            "warm": warm,
            "batch": batch,
        }
        if zygote is not None:
            zygote.setup(self.zygote_config)
            self.warm, self.inputs, self.fenced, self.read_rules = [], {}, None, None
        else:  # no subreaper to adopt its spares (not Linux): forked from here, as before
            self.warm = compiled_runs(warm)
            # The children's inputs, made once here rather than in every child. Each child has its
            # own copy-on-write pages of them: what a run's code does to them stays in that child.
            self.inputs = {lesson: module.make_inputs() for lesson, module in modules.items()}
            self.fenced = fence.inventory(protected)  # what the children's code may not read
            # What the children may read (Landlock): planned once here, not in every spare.
            self.read_rules = landlock.plan(protected) if self.protections.landlock else None
        self.scratches: dict[
            int, str
        ] = {}  # child pid -> its scratch folder, removed once it is reaped
        leftovers.sweep_scratch()  # those of a worker that was killed
        # The children's pids cgroups: a fork bomb gets EAGAIN at pids_cgroup.LIMIT.
        self.bound = memory_watch.pids_bound(self.protections.forks)
        # The last run's (before any, the one the client opens first): spares warm up on it alone.
        self.lesson_in_use: str | None = first_lesson if first_lesson in lessons else None
        # A batch (`grade`): throughput, not a save's latency. This process warms up on the
        # first run's lesson (warm_for_batch), and its spares do not warm up.
        self.batch = batch
        self.batch_warm = False
        # lesson -> its run flooded its output at the last tick: the next run (the same file,
        # saved again) reads its output as it comes from the start, not after a tick.
        self.flooding: dict[str, bool] = {}
        self.out_fd = out_fd
        self.memory = memory_limit_bytes()
        self.scratch_limit = disk_quota.scratch_bytes()
        self.scratch_entries = disk_quota.max_entries()
        self.sel = selectors.DefaultSelector()
        self.jobs: dict[int, Job] = {}
        self.by_pid: dict[int, Job] = {}
        self.dying: set[int] = set()  # killed, not yet reaped: tick until they are
        self.next_job = 0
        self.current_gen = -1
        self.pending_steps: dict[int, set] = {}  # gen -> step ids not yet reported
        self.inbuf = b""
        self.judge_pid = None
        self.spares: list[Spare] = []
        self.judging: dict[int, Judging] = {}
        self.next_judging = 0
        self.quiet_until = 0.0  # no forking before this: the UI is painting the verdicts
        self.next_tick = 0.0
        self.start_judge()

    def reap(self) -> None:
        reaped = False
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            reaped = True
            self.dying.discard(pid)
            self.remove_scratch(pid)
            process_info.forget(pid)  # the pid may be reused by a process that is not ours
            if self.bound is not None:
                self.bound.remove(pid)
            try:  # what it left in its group; the group keeps the number from reuse while it has members
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            if pid == self.judge_pid:
                self.judge_pid = None
            if self.zygote is not None and pid == self.zygote.pid:
                self.zygote.alive = False  # started afresh at the next spare
            for spare in [
                s for s in self.spares if s.pid == pid
            ]:  # died waiting (a learner's kill)
                self.spares.remove(spare)
                for fd in (spare.job_fd, spare.result_fd, spare.output_fd):
                    os.close(fd)
            job = self.by_pid.get(pid)
            if job is not None:
                job.status = status
                if not job.result_done:
                    self.on_exit(job)
        if reaped:
            self.sweep()  # a dead child's own children have just been handed to us

    def sweep(self) -> None:
        """Kill children we did not fork: orphans of learner processes, handed to us as subreaper."""
        known = {self.judge_pid} | {s.pid for s in self.spares} | set(self.by_pid) | self.dying
        if self.zygote is not None:
            known.add(self.zygote.pid)
        for pid in children_of(os.getpid()) - known:
            self.kill_pid(pid)
        if self.bound is not None and self.bound.left:
            self.bound.tidy()  # folders that still held an orphan at reap time

    def watch_memory(self) -> None:
        """RLIMIT_DATA misses shared mappings, and root can raise it: kill a child whose RSS runs away."""
        for job in memory_watch.over_memory(list(self.jobs.values())):
            job.over_memory = True
            self.kill_pid(job.pid)

    def watch_disk(self) -> None:
        """RLIMIT_FSIZE bounds one file in the child; its scratch folder's total is bounded here."""
        jobs = list(self.jobs.values())
        for job in memory_watch.over_disk(
            jobs, self.scratches, self.scratch_limit, self.scratch_entries
        ):
            job.over_disk = True
            self.kill_pid(job.pid)

    def on_stdin(self) -> None:
        try:
            chunk = os.read(0, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            raise SystemExit(0)  # the UI went away
        self.inbuf += chunk
        *lines, self.inbuf = self.inbuf.split(b"\n")
        requests: list[protocol.Request] = []
        for line in lines:
            if not line.strip():
                continue
            try:
                requests.append(protocol.request_from_json(json.loads(line)))
            except ValueError as exc:  # not JSON, or no request (protocol.Malformed): said, skipped
                print(f"attn-tutor worker: a request it cannot read: {exc}", file=sys.stderr)
        # Only the newest run matters when saves arrive faster than we read them; a kept run
        # (`attn-tutor grade`: one file among many, run side by side) is never superseded.
        runs = [r for r in requests if isinstance(r, protocol.Run) and not r.keep]
        for req in requests:
            if not isinstance(req, protocol.Run) or req.keep or req is runs[-1]:
                self.handle_request(req)

    def loop(self) -> None:
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, ("stdin", None))
        # A signal's byte wakes the selector; _quit only takes note of it.
        wake_r, wake_w = os.pipe()
        for fd in (wake_r, wake_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        self.sel.register(wake_r, selectors.EVENT_READ, ("signal", None))
        self.emit(protocol.Ready(os.getpid(), self.protections.off(), PROTOCOL_VERSION))
        while True:
            if _quit_asked:
                raise SystemExit(0)
            self.refill_spares()
            running = [j for j in self.jobs.values() if not j.result_done]
            wait = (
                max(0.0, min(j.deadline for j in running) - time.monotonic()) if running else None
            )
            if running or self.dying:
                wait = TICK if wait is None else min(wait, TICK)
            paused = [j for j in running if j.flood and not j.out_watched]
            if paused and wait is not None:  # paused jobs are running: wait is set
                wait = max(0.0, min(min(j.out_resume for j in paused) - time.monotonic(), wait))
            if self.fork_due():  # else an idle `grade` worker, short of SPARES, spun here
                until_quiet = max(0.0, self.quiet_until - time.monotonic())
                wait = until_quiet if wait is None else min(wait, until_quiet)
            overdue = self.judge_overdue()
            if overdue is not None:
                if time.monotonic() >= overdue and self.judge_pid:
                    self.kill_pid(self.judge_pid)  # its socket's EOF: judge_died
                wait = TICK if wait is None else min(wait, TICK)
            for key, _ in self.sel.select(wait):
                kind, job_id = key.data
                if kind == "signal":
                    os.read(wake_r, 512)
                elif kind == "stdin":
                    self.on_stdin()
                elif kind == "judge":
                    self.on_judge()
                else:
                    job = self.jobs.get(job_id)
                    if job is None or job.result_done:
                        continue
                    if kind == "output":
                        self.on_output(job)
                    else:
                        self.on_result(job)
            now = time.monotonic()
            for job in paused:
                if now >= job.out_resume:
                    self.watch_output(job, True)
            for job in list(self.jobs.values()):
                if not job.result_done and now >= job.deadline:
                    self.on_timeout(job)
                elif (
                    not job.result_done
                    and not job.keep
                    and job.index < len(job.steps) - 1
                    and now >= job.spawned + HEDGE_AFTER
                ):
                    # Not a kept run's: in a batch the other files keep every core busy, and a
                    # hedge would only add children (a file that hangs at import: one per step).
                    self.hedge(job)
            if now >= self.next_tick and (running or self.dying):
                self.next_tick = now + TICK
                for job in list(self.jobs.values()):
                    if not job.result_done:
                        self.pace_output(job)
                self.watch_memory()
                self.watch_disk()
                self.sweep()
            self.reap()

    def shutdown(self, grace: float = SHUTDOWN_GRACE) -> None:
        """Kill every child and reap it, and whatever comes back to us meanwhile (a subreaper
        gets the orphans of learner processes): nothing of ours is left alive or a zombie
        when we exit, even under a parent, or a pid 1, that never reaps."""
        for job in list(self.jobs.values()):
            self.finish(job)
        for spare in self.spares:
            self.discard_spare(spare)
        self.spares = []
        if self.judge_pid:
            self.kill_pid(self.judge_pid)
        if self.zygote is not None:
            if self.zygote.alive:
                self.kill_pid(self.zygote.pid)
            self.zygote.close()
        deadline = time.monotonic() + grace
        while True:
            for pid in children_of(os.getpid()):
                self.kill_pid(pid)
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break  # no child left, alive or zombie
            if pid:
                self.remove_scratch(pid)
                if self.bound is not None:
                    self.bound.remove(pid)
                try:
                    os.killpg(pid, signal.SIGKILL)  # what it left in its group
                except OSError:
                    pass
            elif time.monotonic() >= deadline:
                break  # a process stuck in the kernel (D state): not worth hanging the quit for
            else:
                time.sleep(0.002)
        for pid in list(self.scratches):
            self.remove_scratch(pid)
        if self.bound is not None:
            self.bound.close()


_quit_asked: list = []


def _quit(signum, frame) -> None:
    """SIGTERM, SIGHUP: the loop leaves through its finally, which reaps everything. Not raised
    here: a signal landing in a fork's at-fork callbacks (logging's) would have it swallowed."""
    _quit_asked.append(signum)


def main() -> None:
    # Keep the protocol channel for ourselves: stray prints (torch warnings) go to stderr.
    out_fd = os.dup(1)
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C belongs to the UI; it tells us to quit
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _quit)
    protections = probe()
    harden_self(protections)
    # torch's import makes ~170k long-lived objects, and the cyclic GC's passes over them while
    # it grows cost ~0.3 s of the first verdict. Off until the checks are loaded; then those
    # objects are frozen out of later passes (the ~7k garbage ones among them stay, ~0.7 MB).
    gc.disable()
    # torch's import reads ~0.5 GB; started alongside the UI's start-up, it put ~0.2 s on the first
    # screen when the page cache was cold (0.86-1.05 s against 0.72-0.80 s, and +0.3-0.5 s on the
    # first verdict). So then it waits for the client's first line: "go" once the app has painted
    # (client.EngineClient.go), at once without an app, or a run. From a warm cache it reads
    # nothing, and waiting would only put the app's start-up on the first verdict.
    if not torch_is_cached():
        select.select([0], [], [], GO_WAIT)
    from pathlib import Path

    import torch  # noqa: F401  (loaded once, shared by every fork)
    import torch.nn.functional  # noqa: F401

    from tutor import kit  # noqa: F401  (the checks' kit, and with it the probes')
    from tutor.engine import child, zygote  # noqa: F401

    # Forked before any lesson is read: the children it forks never held a reference solution,
    # a model answer or the judge's data (zygote.py).
    spares_from = zygote.start(protections)
    from tutor.engine.client import BATCH_ENV, FIRST_LESSON_ENV, LESSON_DIR_ENV, SEED_ENV
    from tutor.model.lesson import all_lessons, load_lesson, preload, without_answers

    lessons = {lesson.id: lesson for lesson in all_lessons()}
    if os.environ.get(
        LESSON_DIR_ENV
    ):  # an author's copy of a lesson (`dev check PATH`) instead of ours
        lesson = load_lesson(Path(os.environ[LESSON_DIR_ENV]))
        lessons[lesson.id] = lesson
    # Checking needs no model answer: none is kept, nor read again (a checks file's settings).
    lessons = {lid: without_answers(lesson) for lid, lesson in lessons.items()}
    preload(lessons.values())
    all_lessons.cache_clear()
    seed = int(os.environ.get(SEED_ENV) or 0)
    checks = load_checks(lessons.values())
    seed_inputs(checks, seed)
    gc.freeze()
    gc.enable()  # before the judge and the children are forked: they inherit it
    supervisor = None
    try:
        supervisor = Supervisor(
            checks,
            lessons,
            out_fd,
            batch=bool(os.environ.get(BATCH_ENV)),
            zygote=spares_from,
            seed=seed,
            first_lesson=os.environ.get(FIRST_LESSON_ENV),
        )
        supervisor.loop()
    except SystemExit:
        pass
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP})  # one shutdown
        if supervisor is not None:
            supervisor.shutdown()
    # Interpreter teardown with torch loaded takes ~2 s; nothing is left to flush or save.
    os._exit(0)


if __name__ == "__main__":
    main()
