"""Spare children: forked (by the zygote, or here) and confined before a save comes, each
waiting on its job pipe; kept at SPARES, and not forked while a run or the UI needs the core."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import tempfile
import time

from tutor.engine import memory_watch
from tutor.engine.checks_loader import runs_for
from tutor.engine.confine import leftovers
from tutor.engine.hardening import die_with_parent
from tutor.engine.jobs import Spare
from tutor.engine.output_capture import (
    F_GETPIPE_SZ,
    F_SETPIPE_SZ,
    OUTPUT_PIPE,
    RESULT_PIPE,
    OutputReader,
)

SPARES = 3  # children kept forked and ready: the checked steps, the experiment on screen, one spare
BATCH_SPARES = 1  # in a batch (`grade`), see refill_spares


class SparePool(OutputReader):
    def protected_pids(self) -> list[int]:
        """Pids a child may not signal (seccomp): us, the UI, the judge, their groups, and -1."""
        pids = [-1, 1, os.getpid(), -os.getpgrp(), os.getppid()]
        with contextlib.suppress(OSError):
            pids.append(-os.getpgid(os.getppid()))
        if self.judge_pid:
            pids += [self.judge_pid, -self.judge_pid]
        if self.zygote is not None:
            pids.append(self.zygote.pid)
        return pids

    def fork_spare(self) -> Spare:
        """A child that prepares everything but the learner's code, then waits for a job."""
        from tutor.engine.child import serve_one

        job_r, job_w = os.pipe()
        result_r, result_w = os.pipe()
        output_r, output_w = os.pipe()
        protected = self.protected_pids()
        parent = self.zygote.pid if self.zygote is not None else os.getpid()
        rss_limit = memory_watch.rss_limit(parent, self.memory)
        # The run's only writable folder (its cwd and TMPDIR): removed when the child is reaped.
        scratch = tempfile.mkdtemp(prefix=f"{leftovers.SCRATCH}{leftovers.tag()}-")
        me = os.getpid()
        cgroup = None
        if self.bound is not None:
            self.bound.made += 1
            cgroup = self.bound.make(str(self.bound.made))
        if self.zygote is not None:
            try:
                pid = self.spare_from_zygote(
                    (job_r, result_w, output_w),
                    {
                        "protected": protected,
                        "scratch": scratch,
                        "cgroup": cgroup,
                        "lesson": self.lesson_in_use,
                    },
                )
            except OSError:
                for fd in (job_r, job_w, result_r, result_w, output_r, output_w):
                    os.close(fd)
                leftovers.remove(scratch)
                raise
        else:
            # Torch's ~10^5 objects out of the collector's reach: a child's collection then
            # neither walks them (≈10 ms, landing in some learner's run) nor copies their pages.
            gc.freeze()
            pid = os.fork()
        if pid == 0:
            die_with_parent(self.protections, me)
            # The warm-up's runs in a list of the child's own, and none left on this object (this
            # copy of it): the frames above the learner's code lead here, and the reference's
            # source must be gone once the warm-up is done (serve_one empties the list).
            warm = [] if self.batch else list(runs_for(self.warm, self.lesson_in_use))
            self.warm = []
            # serve_one closes every fd but these three: ours, the UI's, other children's.
            serve_one(
                job_r,
                result_w,
                output_w,
                self.modules,
                protected,
                warm,
                self.fenced,
                self.protections,
                (self.read_rules, scratch),
                cgroup,
                self.inputs,
            )
            os._exit(70)  # serve_one never returns
        self.scratches[pid] = scratch
        if cgroup is not None and self.bound is not None:  # a cgroup comes from the bound
            self.bound.adopt(cgroup, pid)  # the child enters it itself (child.serve_one)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass  # the child did it first, or has already exited
        for fd in (job_r, result_w, output_w):
            os.close(fd)
        for fd in (result_r, output_r):
            os.set_blocking(fd, False)
        for fd, size in ((output_r, OUTPUT_PIPE), (result_r, RESULT_PIPE)):
            try:
                fcntl.fcntl(fd, F_SETPIPE_SZ, size)
            except OSError:
                pass  # over the user's pipe quota: the default 64 KiB will do
        try:
            output_pipe = fcntl.fcntl(output_r, F_GETPIPE_SZ)
        except OSError:
            output_pipe = 64 << 10
        return Spare(pid, job_w, result_r, output_r, rss_limit, output_pipe)

    def spare_from_zygote(self, fds: tuple[int, int, int], request: dict) -> int:
        """A spare forked by the zygote, adopted by us. A zygote that died is started afresh
        (exec: our memory now holds the lessons), once per spare; then we fork it ourselves."""
        from tutor.engine import zygote

        for _ in range(2):
            spawner = self.zygote
            assert spawner is not None  # only called with a zygote
            try:
                return spawner.fork_spare(fds, request)
            except zygote.SpareRefused:
                raise  # the zygote is fine: as os.fork's failure
            except OSError:
                if spawner.alive:
                    self.kill_pid(spawner.pid)
                spawner.close()
                self.zygote = zygote.respawn(self.protections)
                self.zygote.setup(self.zygote_config)
        raise OSError("no zygote")

    def discard_spare(self, spare: Spare) -> None:
        for fd in (spare.job_fd, spare.result_fd, spare.output_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.kill_pid(spare.pid)

    def warm_for_batch(self, lesson: str) -> None:
        """A batch's first run: this process runs the lesson's reference once, so that every
        child is forked warm, its Python bytecode specialised and torch's first-call work done
        in pages it inherits (a graded file's child: 43 -> 36 ms of CPU). In the app each spare
        warms up by itself instead, off the save's path."""
        from tutor.engine import child
        from tutor.kit import probe_tools

        self.batch_warm = True
        if self.zygote is not None:
            return  # the zygote warmed up before its first spare
        probe_tools.install_traps()
        child.warm_up(runs_for(self.warm, lesson), self.modules, self.inputs)

    def fork_due(self) -> bool:
        """The app's pool is short of a spare and no run is in the way: refill_spares forks one
        once the quiet period is over (a batch's pool refills at once, or not at all)."""
        return not self.batch and len(self.spares) < SPARES and not self.jobs and not self.judging

    def refill_spares(self) -> None:
        if self.batch:
            # A batch's next file finds its child forked, in its cgroup (joining one sleeps ~10 ms)
            # and confined, while the other files run. Not before this process is warm.
            while self.batch_warm and len(self.spares) < BATCH_SPARES:
                self.spares.append(self.fork_spare())
            return
        # Forking takes ~10 ms of this process and a core: not while a run waits on us, nor
        # while the app draws the run that just ended. One per turn of the loop, which then
        # does not wait: a run asked for meanwhile (the first, at start-up) is read before the
        # next fork, and finds its spare not yet warming up.
        if time.monotonic() < self.quiet_until:
            return
        if self.fork_due():
            self.spares.append(self.fork_spare())
