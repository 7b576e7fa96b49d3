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

import contextlib
import ctypes
import fcntl
import gc
import importlib.util
import json
import os
import select
import selectors
import signal
import socket
import struct
import tempfile
import time
from dataclasses import dataclass, field

import psutil

from tutor.engine import protocol
from tutor.engine.client import too_large
from tutor.engine.confine import disk_quota, landlock, leftovers, pids_cgroup
from tutor.engine.confine.platform_probe import probe
from tutor.engine.confine.syscalls import PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, PR_SET_PDEATHSIG
from tutor.model.results import Failure, Frame, StepResult

OUTPUT_TAIL = 4000
SPARES = 3  # children kept forked and ready: the checked steps, the experiment on screen, one spare
BATCH_SPARES = 1  # in a batch (`grade`), see refill_spares
GO_WAIT = 1.0  # s at most before torch's import: see main
HEDGE_AFTER = 0.3  # s: a shared child still this busy hands the steps it has not begun to children of their own
QUIET_AFTER_RUN = 0.15  # s between a run's last verdict and forking new spares
SHUTDOWN_GRACE = 2.0  # s at most to reap every child on the way out
TICK = 0.05  # s: how often the memory of running children is read, and leftovers swept
MEMORY_SLACK = 256 << 20  # RSS above the RLIMIT_DATA budget before the watchdog kills
JUDGE_DEATHS = 2  # judges a step may cost (see judge_died) before it is said to be unjudgeable
JUDGE_LIMIT = 60.0  # s a judge may spend on one step (~0.1 s is usual) before it is killed
TIMEOUT_DUMP = "Timeout ("  # how faulthandler.dump_traceback_later starts its report
MEMORY_NEAR = (
    0.5  # a step that times out holding this share of its memory budget is said to use too much
)
DRAIN_CAP = 1 << 20  # bytes read at once from a pipe something may still be writing to
READ_SIZE = 1 << 20  # one read takes all a pipe holds
# Output is read at each tick, not on every write: a print loop then costs the child a write
# into a pipe nobody waits on, and the worker ≤ 20 wakeups a second (measured: 2.5× the prints).
# But a child that fills the pipe between two ticks blocks on it: then its output fd joins
# the selector (a flood), read as it comes, until a tick's worth falls below half a pipe.
# Every small write wakes a reader that waits in the selector: after a read of less than a
# quarter of the pipe, it waits FLOOD_PAUSE (≤ 200 wakeups a second; small writes would
# need > 50 MB/s to fill the pipe meanwhile). A big print's reads take the whole pipe.
# A step gets FLOOD_BUDGET read that way (~25× what a correct file printing 5 MB a call makes
# in a step), then ticks again: a thread or `yes` writing for ever must not keep a core busy.
OUTPUT_PIPE = 256 << 10
FLOOD_PAUSE = 0.005
FLOOD_BUDGET = 256 << 20
# A step's frame (up to ~150 KB) in one write, not in 64 KiB pieces each waiting for us to read.
RESULT_PIPE = 512 << 10
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032


def warm_up_runs(lessons) -> list[tuple]:
    """What a spare warms up on (child._warm_up): each lesson's warmup.py (torch's operations
    on a solution's shapes, wrong on purpose: dev check proves it fails every checked step), or
    its starter; (lesson id, file name, source, step ids). Never the reference: what the
    warm-up ran stays in the child's heap, freed or not."""
    runs = []
    for lesson in lessons:
        try:
            source = lesson.warm_up_path.read_text(encoding="utf-8")
        except (OSError, ValueError):
            continue  # no warm-up for this lesson: its runs are only a little slower
        runs.append((lesson.id, lesson.file_name, source, [s.id for s in lesson.checked_steps]))
    return runs


def compiled_runs(runs: list[tuple]) -> list[tuple]:
    """warm_up_runs with each source compiled: (lesson id, file name, source, code, step ids)."""
    out = []
    for lesson_id, name, source, steps in runs:
        try:
            code = compile(source, name, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        out.append((lesson_id, name, source, code, steps))
    return out


def runs_for(runs: list[tuple], lesson: str | None) -> list[tuple]:
    """A spare's warm-up: the lesson of the last run (its learner rarely switches), or every
    lesson before the first run."""
    return [run for run in runs if run[0] == lesson] or runs


def load_checks(lessons) -> dict:
    modules = {}
    for lesson in lessons:
        spec = importlib.util.spec_from_file_location(
            f"attn_checks_{lesson.id.replace('-', '_')}", lesson.checks_path
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[lesson.id] = module
    return modules


def seed_inputs(modules: dict, seed: int) -> None:
    """Every make_inputs() of this worker (the children's and the judge's) draws from `seed`
    (`attn-tutor grade --seed`); 0 is the lessons' own inputs. A lesson whose make_inputs
    takes no seed keeps its own."""
    import functools
    import inspect

    if not seed:
        return
    for module in modules.values():
        if "seed" in inspect.signature(module.make_inputs).parameters:
            module.make_inputs = functools.partial(module.make_inputs, seed=seed)


# ------------------------------------------------------------------ framing between worker and judge


def send_frame(sock: socket.socket, obj, raw: bytes | None = None) -> None:
    """A JSON object, and after it, if given, raw bytes (a child's payload, passed on unparsed)."""
    data = json.dumps(obj).encode()
    parts = [struct.pack("!I", len(data)), data]
    if raw is not None:
        parts += [struct.pack("!I", len(raw)), raw]
    sock.sendall(b"".join(parts))


def recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_raw(sock: socket.socket) -> bytes:
    (n,) = struct.unpack("!I", recv_exact(sock, 4))
    return recv_exact(sock, n)


def recv_frame(sock: socket.socket):
    return json.loads(recv_raw(sock))


def judge_main(sock: socket.socket, modules: dict, own_keys: dict) -> None:
    import sys

    import torch

    from tutor.engine.judge import Judge, unjudged
    from tutor.kit.source_tools import PARSE_RECURSION_LIMIT

    torch.set_num_threads(1)
    # Any file the child compiled (at child.RECURSION_LIMIT) parses here too, in the kit's
    # parse and in a lesson's checks alike.
    sys.setrecursionlimit(PARSE_RECURSION_LIMIT)
    judge = Judge(modules, own_keys)
    while True:
        try:
            req = protocol.JudgeRequest.from_json(recv_frame(sock))
            payload = recv_raw(sock)
        except EOFError:
            os._exit(0)
        # Whatever a child's data makes of the judge, it answers: a verdict that says it could
        # not judge this step, never its own death (that would cost the steps queued behind).
        try:
            result = judge.verdict(req.lesson, req.step, payload, req.source, req.views)
            reply = protocol.JudgeReply(req.job, result).to_json()
            data = json.dumps(reply).encode()
        except Exception as exc:
            reply = protocol.JudgeReply(req.job, unjudged(req.step, exc)).to_json()
            data = json.dumps(reply).encode()
        sock.sendall(struct.pack("!I", len(data)) + data)


# ------------------------------------------------------------------ process information


def children_of(pid: int) -> set[int]:
    """Our children's pids. Linux: /proc/<pid>/task/*/children (~0.03 ms; psutil's children()
    reads every process's stat, ~3 ms here, and this runs at every tick); elsewhere psutil."""
    found: set[int] = set()
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        try:
            return {p.pid for p in psutil.Process(pid).children()}
        except psutil.Error:
            return found
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                found.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return found


_processes: dict[int, psutil.Process] = {}  # pid -> its psutil handle, for the 50 ms memory watch


def resident_bytes(pid: int) -> int:
    """RSS (psutil: /proc/<pid>/statm on Linux, the task's info on macOS); 0 once it is gone."""
    proc = _processes.get(pid)
    try:
        if proc is None:
            if len(_processes) > 64:
                _processes.clear()
            proc = _processes[pid] = psutil.Process(pid)
        return proc.memory_info().rss
    except psutil.Error:
        _processes.pop(pid, None)
        return 0


def runnable(pid: int) -> bool:
    """Our child is neither stopped (SIGSTOP from a learner's process) nor dead; asks, does not reap."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WSTOPPED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False


# ------------------------------------------------------------------ the worker proper


@dataclass
class Spare:
    pid: int
    job_fd: int
    result_fd: int
    output_fd: int
    rss_limit: int
    output_pipe: int  # the output pipe's capacity, bytes


@dataclass
class Job:
    """One child running a list of steps in order, one result frame each."""

    id: int
    gen: int
    lesson: str
    steps: list[str]
    tokens: list[bytes]  # one per step: a frame must carry its step's
    source: str
    filename: str
    params: dict  # step -> an experiment's settings
    pid: int
    result_fd: int
    output_fd: int
    deadline: float  # of the step running now
    started: float  # when the step running now began
    spawned: float
    timeout: float
    reader: object  # codec.FrameReader for the step running now
    rss_limit: int
    output_pipe: int = 64 << 10
    index: int = 0  # the step running now: steps[index]
    # Output per step index: [tail, bytes dropped]. The child puts a marker (MAGIC + the
    # step's token) between steps; `out_step` is the step the output read now belongs to.
    outputs: dict = field(default_factory=dict)
    out_step: int = 0
    carry: bytes = b""  # the stream's last bytes, which may be the start of a marker
    flood: bool = False  # output is read as it comes, not at ticks (see OUTPUT_PIPE)
    out_watched: bool = False  # output_fd is in the selector
    out_resume: float = 0.0  # a flood of small writes: output_fd back in the selector then
    out_read: int = 0  # bytes read from output_fd since the last tick
    step_read: int = 0  # bytes read from output_fd since the step running now began
    status: int | None = None  # wait status, once the child is reaped
    result_done: bool = False  # every step's frame is in, or the job was cut short
    over_memory: bool = False
    over_disk: bool = False  # its scratch folder passed disk_quota's bound: killed for it
    rss_start: int = 0  # the child's own RSS when it got the job: what it then holds is the job's
    keep: bool = False  # a kept run's (`attn-tutor grade`): see report_timeout
    views: bool = True  # False: nobody will look at its views (`check`, `grade`), see tutor.kit

    @property
    def step(self) -> str:
        return self.steps[min(self.index, len(self.steps) - 1)]


def _frames(frames: list[dict]) -> list[Frame]:
    """child.dumped_frames' dicts as results' frames."""
    return [Frame(f["line"], f["function"], f["code"]) for f in frames]


def add_clipped(part: list, data) -> None:
    """Append to an output [tail, bytes dropped], keeping the last OUTPUT_TAIL bytes."""
    if len(data) >= OUTPUT_TAIL:  # a flood's chunk: copy only its tail
        part[1] += len(part[0]) + len(data) - OUTPUT_TAIL
        part[0] = bytearray(data[-OUTPUT_TAIL:])
        return
    part[0] += data
    extra = len(part[0]) - OUTPUT_TAIL
    if extra > 0:
        del part[0][:extra]
        part[1] += extra


@dataclass
class Judging:
    """A step's child data, sent to the judge; the verdict is reported when it comes back.
    The request and payload are kept until then: should the judge die, it is sent again."""

    gen: int
    step: str
    started: float
    output: str
    dropped: int  # bytes of output before the tail
    request: dict = field(default_factory=dict)
    payload: bytes = b""
    sent: float = 0.0  # when this judge was sent it
    deaths: int = 0  # judges that died while this was the one they were judging


class Worker:
    def __init__(
        self,
        modules: dict,
        lessons: dict,
        out_fd: int,
        batch: bool = False,
        zygote=None,
        seed: int = 0,
    ):
        from tutor.engine.child import memory_limit_bytes
        from tutor.engine.confine import fence

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
        self.bound = (
            None  # the children's pids cgroups: a fork bomb gets EAGAIN at pids_cgroup.LIMIT
        )
        if self.protections.forks:
            try:
                leftovers.sweep_cgroups(pids_cgroup.base())
                self.bound = pids_cgroup.Bound(pids_cgroup.base())
            except (OSError, TypeError):
                pass
        self.lesson_in_use: str | None = None  # the last run's: spares warm up on it alone
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
        self.judge_sock = None
        self.judge_pid = None
        self.spares: list[Spare] = []
        self.judging: dict[int, Judging] = {}
        self.next_judging = 0
        self.quiet_until = 0.0  # no forking before this: the UI is painting the verdicts
        self.next_tick = 0.0
        self.start_judge()

    # --- processes

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
        # ATTN_TUTOR_MEMORY_MB=0 turns the limit off, and so the watchdog.
        parent = self.zygote.pid if self.zygote is not None else os.getpid()
        rss_limit = (
            resident_bytes(parent) + self.memory + MEMORY_SLACK if self.memory > 0 else 1 << 62
        )
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
        if cgroup is not None:
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
            try:
                return self.zygote.fork_spare(fds, request)
            except zygote.SpareRefused:
                raise  # the zygote is fine: as os.fork's failure
            except OSError:
                if self.zygote.alive:
                    self.kill_pid(self.zygote.pid)
                self.zygote.close()
                self.zygote = zygote.respawn(self.protections)
                self.zygote.setup(self.zygote_config)
        raise OSError("no zygote")

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
            )

    def hedge(self, job: Job) -> None:
        rest = job.steps[job.index + 1 :]
        job.steps = job.steps[: job.index + 1]
        job.tokens = job.tokens[: job.index + 1]
        self.spawn_each(job, rest)

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

    def refill_spares(self) -> None:
        if self.batch:
            # A batch's next file finds its child forked, in its cgroup (joining one sleeps ~10 ms)
            # and confined, while the other files run. Not before this process is warm.
            while self.batch_warm and len(self.spares) < BATCH_SPARES:
                self.spares.append(self.fork_spare())
            return
        # Forking takes ~10 ms of this process and a core: not while a run waits on us, nor
        # while the app draws the run that just ended.
        if time.monotonic() < self.quiet_until:
            return
        while len(self.spares) < SPARES and not self.jobs and not self.judging:
            self.spares.append(self.fork_spare())

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
            _processes.pop(pid, None)  # the pid may be reused by a process that is not ours
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

    def remove_scratch(self, pid: int) -> None:
        scratch = self.scratches.pop(pid, None)
        if scratch is not None:
            leftovers.remove(scratch)  # not shutil.rmtree: a deep tree made it raise and stay

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
        for job in list(self.jobs.values()):
            if (
                not job.result_done
                and job.status is None
                and resident_bytes(job.pid) > job.rss_limit
            ):
                job.over_memory = True
                self.kill_pid(job.pid)

    def watch_disk(self) -> None:
        """RLIMIT_FSIZE bounds one file in the child; its scratch folder's total is bounded here."""
        for job in list(self.jobs.values()):
            scratch = self.scratches.get(job.pid)
            if (
                scratch
                and not job.result_done
                and job.status is None
                and disk_quota.over(scratch, self.scratch_limit, self.scratch_entries)
            ):
                job.over_disk = True
                self.kill_pid(job.pid)

    # --- protocol with the UI

    def emit(self, event: protocol.Event) -> None:
        data = (json.dumps(protocol.event_to_json(event)) + "\n").encode()
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.out_fd, view) :]
            except BlockingIOError:
                time.sleep(0.001)

    def handle_request(self, req: dict) -> None:
        kind = req.get("type")
        if kind == "quit":
            raise SystemExit(0)
        if kind == "ping":
            self.emit(protocol.Pong())
            return
        if kind == "stats":  # for tests: what a leak would grow
            self.emit(
                protocol.Stats(
                    psutil.Process().num_fds(),
                    len(self.spares),
                    len(self.jobs),
                    sorted(children_of(os.getpid())),
                )
            )
            return
        if kind != "run":
            return
        gen = int(req["gen"])
        if self.batch and not self.batch_warm and req.get("lesson") in self.modules:
            self.warm_for_batch(req["lesson"])
        if not req.get("keep"):
            # A newer save supersedes everything still running. A kept run supersedes nothing,
            # and sets no current_gen: the runs before it, kept too, still report.
            for job in list(self.jobs.values()):
                if job.gen < gen:
                    self.finish(job)
            self.pending_steps = {g: s for g, s in self.pending_steps.items() if g >= gen}
            self.judging = {k: j for k, j in self.judging.items() if j.gen >= gen}
            self.current_gen = gen
        lesson = req.get("lesson")
        if lesson not in self.modules:
            self.emit(protocol.RunError(gen, f"unknown lesson {lesson!r}"))
            self.emit(protocol.Done(gen))
            return
        self.lesson_in_use = lesson
        steps = [s for s in self.modules[lesson].STEPS if not req.get("steps") or s in req["steps"]]
        big = too_large(len(str(req.get("source", "")).encode("utf-8", "replace")))
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
        params = {s: p for s, p in (req.get("params") or {}).items() if s in steps}
        timeout = float(req.get("timeout", 3.0))
        together = [s for s in steps if s in checked]
        # An experiment may take a second: it never holds up the verdicts.
        groups = ([together] if together else []) + [[s] for s in steps if s not in checked]
        for group in groups:
            self.spawn(
                gen,
                lesson,
                group,
                req["source"],
                req["filename"],
                timeout,
                {s: params[s] for s in group if s in params},
                keep=bool(req.get("keep")),
                views=req.get("views", True) is not False,
                folder=req.get("folder") if isinstance(req.get("folder"), str) else None,
            )
        if not steps:
            self.emit(protocol.Done(gen))

    def report(
        self, gen: int, step: str, started: float, output: tuple[str, int], result: StepResult
    ) -> None:
        result.output, result.output_dropped = output
        result.ms = round((time.monotonic() - started) * 1000, 1)
        self.emit(protocol.StepVerdict(gen, result))
        left = self.pending_steps.get(gen)
        if left is not None:
            left.discard(step)
            if not left:
                del self.pending_steps[gen]
                self.emit(protocol.Done(gen))
                self.quiet_until = time.monotonic() + QUIET_AFTER_RUN

    def take_output(self, job: Job) -> tuple[str, int]:
        """What the step running now printed (its marker is in the pipe before its frame): the
        tail, and how many bytes came before it (the UI says so, in the learner's language)."""
        index = job.index
        if (
            job.out_step <= index
        ):  # no marker (the learner closed its fd, or the step died): all so far
            self.keep_output(job, b"", final=True)
            job.out_step = index + 1
        whole = [bytearray(), 0]
        for i in sorted(k for k in job.outputs if k <= index):
            part, lost = job.outputs.pop(i)
            whole[1] += lost
            add_clipped(whole, part)
        tail, dropped = whole
        return tail.decode("utf-8", errors="replace"), dropped

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
        self.report(job.gen, job.step, job.started, self.take_output(job), result)
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

    # --- events

    def keep_output(self, job: Job, chunk: bytes, final: bool = False) -> None:
        from tutor.engine.codec import MAGIC

        data = job.carry + chunk if job.carry else chunk
        view = memoryview(data)  # slices of a flood's chunk without copying it
        start = 0
        while job.out_step < len(job.tokens):
            marker = MAGIC + job.tokens[job.out_step]
            at = data.find(marker, start)
            if at < 0:
                break
            self.append_output(job, view[start:at])
            start = at + len(marker)
            job.out_step += 1
        # Held back: the start of a marker split between two reads (not once the job's steps are done).
        keep = (
            0
            if final or job.out_step >= len(job.tokens)
            else min(len(MAGIC) + 15, len(data) - start)
        )
        end = len(data) - keep
        job.carry = bytes(view[end:])
        self.append_output(job, view[start:end])

    def append_output(self, job: Job, data: bytes) -> None:
        if job.out_step >= len(job.tokens):
            return  # after the last step's marker: steps handed to other children (see hedge)
        add_clipped(job.outputs.setdefault(job.out_step, [bytearray(), 0]), data)

    def drain_output(self, job: Job) -> None:
        """What is in the pipe now, up to DRAIN_CAP: a thread or subprocess may still be writing."""
        got = 0
        while job.output_fd >= 0 and got < DRAIN_CAP:
            try:
                chunk = os.read(job.output_fd, READ_SIZE)
            except BlockingIOError:
                break
            if not chunk:
                self.close_fd(job.output_fd)
                job.output_fd = -1
                job.flood = job.out_watched = False
                break
            got += len(chunk)
            self.keep_output(job, chunk)
        job.out_read += got
        job.step_read += got

    def pace_output(self, job: Job) -> None:
        """At a tick: read the output pipe, and read it as it comes while the child floods it."""
        self.drain_output(job)
        job.flood = (
            job.out_read >= job.output_pipe // 2
            and job.step_read < FLOOD_BUDGET
            and job.output_fd >= 0
        )
        self.flooding[job.lesson] = job.flood
        job.out_read = 0
        job.out_resume = 0.0
        self.watch_output(job, job.flood)

    def on_output(self, job: Job) -> None:
        before = job.out_read
        self.drain_output(job)
        if job.step_read >= FLOOD_BUDGET:
            job.flood = False
            self.watch_output(job, False)
        elif job.out_read - before < job.output_pipe // 4:
            self.watch_output(job, False)  # small writes: let them gather
            job.out_resume = time.monotonic() + FLOOD_PAUSE

    def watch_output(self, job: Job, on: bool) -> None:
        if on != job.out_watched and job.output_fd >= 0:
            if on:
                self.sel.register(job.output_fd, selectors.EVENT_READ, ("output", job.id))
            else:
                self.sel.unregister(job.output_fd)
            job.out_watched = on

    def read_result(self, job: Job) -> bool:
        """Feed what the result pipe holds to the frame reader; False at EOF."""
        got = 0
        while job.result_fd >= 0 and got < DRAIN_CAP and job.reader.payload is None:
            try:
                chunk = os.read(job.result_fd, 1 << 20)
            except BlockingIOError:
                return True
            if not chunk:
                self.close_fd(job.result_fd)
                job.result_fd = -1
                return False
            got += len(chunk)
            job.reader.feed(chunk)
        return True

    def on_result(self, job: Job) -> None:
        open_ = self.read_result(job)
        while not job.result_done and (job.reader.payload is not None or job.reader.too_big):
            self.on_frame(job)
        if not job.result_done and not open_ and job.status is not None:
            self.report_death(job)
        # EOF with the child still alive (it closed its fds): reap or the deadline decides.

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
            self.take_output(job),
            job.reader.payload,
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
        request = protocol.JudgeRequest(key, job.lesson, step, job.source, job.views).to_json()
        item = Judging(job.gen, step, started, *output, request, payload, time.monotonic())
        self.judging[key] = item
        try:
            self.resend(key, item)
        except OSError:  # the judge died: it is restarted, and this step sent to it again
            self.judge_died()

    def report_death(self, job: Job) -> None:
        """The child ended without a result: an exit, a signal, or a memory limit."""
        from tutor.engine.child import EXIT_NO_CHANNEL, dumped_frames

        status = job.status or 0
        self.drain_output(job)
        dump = job.reader.before()
        frames, runaway = dumped_frames(dump, job.filename, job.source)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = (
                signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            )
            failure = Failure("crash", name, _frames(frames))
            if job.over_disk:
                key = "failure.scratch_full"
                params = {"limit": self.scratch_limit >> 20, "entries": self.scratch_entries}
                failure.kind = "disk"
            elif (
                job.over_memory or sig == signal.SIGKILL
            ):  # our watchdog, or the kernel's OOM killer
                key, params = "failure.memory", {}
                failure.kind = "memory"
            elif TIMEOUT_DUMP in dump:
                # It crashed in faulthandler's dump of where it was, just before its deadline (seen
                # while torch.compile traced): out of time, as a timeout would have said.
                self.report_timeout(job, dump, 0)
                return
            elif runaway:  # the C stack overflowed: say where it recursed
                key = "failure.recursion"
                params = {
                    "fn": frames[-1]["function"],
                    "line": frames[-1]["line"],
                    "kind": name,
                    "detail": "stack overflow",
                    "code": frames[-1]["code"],
                }
                failure.detail = f"{name} (stack overflow)"
            else:
                key, params = "failure.crash", {"signal": name}
        else:
            code = os.WEXITSTATUS(status)
            failure = Failure("exit", f"exit code {code}", _frames(frames))
            key, params = "failure.exit", {"code": code}
            if code == EXIT_NO_CHANNEL:
                failure.kind = "channel"
                key, params = "failure.channel", {}
        self.report_failure(job, "error", failure, key, params)

    def on_timeout(self, job: Job) -> None:
        rss = resident_bytes(job.pid) if job.status is None else 0  # while it still runs
        self.read_result(job)  # faulthandler's report of where it was, written just before
        self.drain_output(job)
        self.report_timeout(job, job.reader.before(), rss)

    def report_timeout(self, job: Job, dump: str, rss: int) -> None:
        """Out of time: said with the likely why when it shows. torch.compile compiling (its
        frames in the stack faulthandler dumped, or torch.compile in the file), memory held
        near the limit (rss: the child's, at the deadline); else a loop or a sleep."""
        from tutor.engine.child import compiling, dumped_frames

        frames, _ = dumped_frames(dump, job.filename, job.source)
        seconds = f"{job.timeout:g}"
        key, params = "failure.timeout", {"seconds": seconds}
        # What the child holds over what it held when the job came.
        grown = rss - (job.rss_start or job.rss_limit - MEMORY_SLACK - self.memory)
        compiler = compiling(dump, job.source)
        if compiler == "stack":  # caught compiling: whatever it held, that is why it was slow
            key = "failure.timeout_compile"
        elif self.memory > 0 and grown >= MEMORY_NEAR * self.memory:
            key = "failure.timeout_memory"
            params.update(mb=grown >> 20, limit=self.memory >> 20)
        elif compiler:
            key = "failure.timeout_compile"
        # A kept run out of time while its file was being imported (the outermost frame of the
        # learner's is the module's): every later step imports it again and would spend its whole
        # limit there too. In a class's batch, that is one core for each: they are said at once.
        at_import = job.keep and bool(frames) and frames[0]["function"] == "<module>"
        self.report_failure(
            job,
            "timeout",
            Failure("timeout", f"{seconds} s", _frames(frames)),
            key,
            params,
            same_for_rest=at_import,
        )

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
        import dataclasses

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

    def on_stdin(self) -> None:
        try:
            chunk = os.read(0, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            raise SystemExit(0)  # the UI went away
        self.inbuf += chunk
        *lines, self.inbuf = self.inbuf.split(b"\n")
        requests = []
        for line in lines:
            try:
                req = json.loads(line) if line.strip() else None
            except ValueError:
                continue
            if isinstance(req, dict):
                requests.append(req)
        # Only the newest run matters when saves arrive faster than we read them; a kept run
        # (`attn-tutor grade`: one file among many, run side by side) is never superseded.
        runs = [r for r in requests if r.get("type") == "run" and not r.get("keep")]
        for req in requests:
            if req.get("type") != "run" or req.get("keep") or req is runs[-1]:
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
        self.emit(protocol.Ready(os.getpid(), self.protections.off()))
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
            if paused:
                wait = max(0.0, min(min(j.out_resume for j in paused) - time.monotonic(), wait))
            if len(self.spares) < SPARES and not self.jobs and not self.judging:
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


def _harden_self(protections) -> None:
    """Subreaper: orphans of learner processes come to us to be killed. Not dumpable: a child
    cannot open our fds through /proc/<pid>/fd (the UI's pipe!) nor read our memory."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if protections.subreaper:
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        if protections.nondumpable:
            libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def die_with_parent(protections, parent: int) -> None:
    """In a child of ours (spare, judge): SIGKILL when the worker dies, even by SIGKILL."""
    if not protections.subreaper:
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the call
        os._exit(0)


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
    _harden_self(protections)
    # torch's import makes ~170k long-lived objects, and the cyclic GC's passes over them while
    # it grows cost ~0.3 s of the first verdict. Off until the checks are loaded; then those
    # objects are frozen out of later passes (the ~7k garbage ones among them stay, ~0.7 MB).
    gc.disable()
    # torch's import reads ~0.5 GB; started alongside the UI's start-up, it put ~0.2 s on the first
    # screen when the page cache was cold (0.86-1.05 s against 0.72-0.80 s, and +0.3-0.5 s on the
    # first verdict). So it waits for the client's first line: "go" once the app has painted
    # (client.Worker.go), at once without an app, or a run.
    select.select([0], [], [], GO_WAIT)
    from pathlib import Path

    import torch  # noqa: F401  (loaded once, shared by every fork)
    import torch.nn.functional  # noqa: F401

    from tutor import kit  # noqa: F401  (the checks' kit, and with it the probes')
    from tutor.engine import child, zygote  # noqa: F401

    # Forked before any lesson is read: the children it forks never held a reference solution,
    # a model answer or the judge's data (zygote.py).
    spares_from = zygote.start(protections)
    from tutor.engine.client import BATCH_ENV, LESSON_DIR_ENV, SEED_ENV
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
    worker = None
    try:
        worker = Worker(
            checks,
            lessons,
            out_fd,
            batch=bool(os.environ.get(BATCH_ENV)),
            zygote=spares_from,
            seed=seed,
        )
        worker.loop()
    except SystemExit:
        pass
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP})  # one shutdown
        if worker is not None:
            worker.shutdown()
    # Interpreter teardown with torch loaded takes ~2 s; nothing is left to flush or save.
    os._exit(0)


if __name__ == "__main__":
    main()
