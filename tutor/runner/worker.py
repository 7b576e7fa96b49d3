"""The check worker: imports torch once, then forks a child for each step of each run.

It talks JSON lines with the UI (stdin/stdout) and never runs a torch op itself,
so that forking stays safe: the judge, forked at start, does the tensor work.

    UI ──run{gen, lesson, source}──► worker ──fork──► child per step (learner code)
                                       │ ◄──result data── child
                                       ├──child data──► judge ──verdict──► worker
    UI ◄──step{gen, result}, done{gen}─┘
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field

OUTPUT_TAIL = 4000
SPARES = 4  # children kept forked and ready: as many as a lesson has checked steps


def load_checks(lessons) -> dict:
    modules = {}
    for lesson in lessons:
        spec = importlib.util.spec_from_file_location(f"attn_checks_{lesson.id.replace('-', '_')}", lesson.checks_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[lesson.id] = module
    return modules


# ------------------------------------------------------------------ framing between worker and judge

def send_frame(sock: socket.socket, obj) -> None:
    data = json.dumps(obj).encode()
    sock.sendall(struct.pack("!I", len(data)) + data)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket):
    (n,) = struct.unpack("!I", recv_exact(sock, 4))
    return json.loads(recv_exact(sock, n))


def judge_main(sock: socket.socket, modules: dict) -> None:
    import torch

    from .judge import Judge

    torch.set_num_threads(1)
    judge = Judge(modules)
    while True:
        try:
            req = recv_frame(sock)
        except EOFError:
            os._exit(0)
        result = judge.verdict(req["lesson"], req["step"], req["child"], req["source"])
        send_frame(sock, {"job": req["job"], "result": result.to_dict()})


# ------------------------------------------------------------------ the worker proper

@dataclass
class Spare:
    pid: int
    job_fd: int
    result_fd: int
    output_fd: int


@dataclass
class Job:
    id: int
    gen: int
    lesson: str
    step: str
    source: str
    pid: int
    result_fd: int
    output_fd: int
    deadline: float
    started: float
    timeout: float
    data: bytearray = field(default_factory=bytearray)
    output: bytearray = field(default_factory=bytearray)
    output_dropped: int = 0
    result_done: bool = False
    judged: bool = False


class Worker:
    def __init__(self, modules: dict, lessons: dict, out_fd: int):
        self.modules = modules
        self.lessons = lessons
        self.out_fd = out_fd
        self.sel = selectors.DefaultSelector()
        self.jobs: dict[int, Job] = {}
        self.next_job = 0
        self.current_gen = -1
        self.pending_steps: dict[int, set] = {}  # gen -> step ids not yet reported
        self.inbuf = b""
        self.judge_sock = None
        self.judge_pid = None
        self.exit_status: dict[int, int] = {}  # children reaped before their pipe closed
        self.spares: list[Spare] = []
        self.start_judge()

    # --- processes

    def start_judge(self) -> None:
        parent, child = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            parent.close()
            os.setpgid(0, 0)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            judge_main(child, self.modules)
            os._exit(0)
        child.close()
        self.judge_sock, self.judge_pid = parent, pid
        self.sel.register(parent, selectors.EVENT_READ, ("judge", None))

    def fork_spare(self) -> Spare:
        """A child that prepares everything but the learner's code, then waits for a job."""
        from .sandbox import serve_one

        job_r, job_w = os.pipe()
        result_r, result_w = os.pipe()
        output_r, output_w = os.pipe()
        own_fds = [self.out_fd, self.judge_sock.fileno(), job_w, result_r, output_r]
        own_fds += [fd for j in self.jobs.values() for fd in (j.result_fd, j.output_fd)]
        own_fds += [fd for sp in self.spares for fd in (sp.job_fd, sp.result_fd, sp.output_fd)]
        pid = os.fork()
        if pid == 0:
            for fd in own_fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            serve_one(job_r, result_w, output_w, self.modules)
            os._exit(70)  # serve_one never returns
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass  # the child did it first, or has already exited
        for fd in (job_r, result_w, output_w):
            os.close(fd)
        for fd in (result_r, output_r):
            os.set_blocking(fd, False)
        return Spare(pid, job_w, result_r, output_r)

    def spawn(self, gen: int, lesson: str, step: str, source: str, filename: str, timeout: float,
              params: dict | None = None) -> Job:
        job_data = json.dumps({"lesson": lesson, "step": step, "source": source, "filename": filename,
                               "params": params or {}}).encode()
        while True:
            spare = self.spares.pop(0) if self.spares else self.fork_spare()
            try:
                view = memoryview(job_data)
                while view:
                    view = view[os.write(spare.job_fd, view):]
                os.close(spare.job_fd)
                break
            except OSError:  # that spare died while it waited: take another
                self.discard_spare(spare)
        now = time.monotonic()
        job = Job(self.next_job, gen, lesson, step, source, spare.pid, spare.result_fd, spare.output_fd,
                  now + timeout, now, timeout)
        self.next_job += 1
        self.jobs[job.id] = job
        self.sel.register(job.result_fd, selectors.EVENT_READ, ("result", job.id))
        self.sel.register(job.output_fd, selectors.EVENT_READ, ("output", job.id))
        return job

    def discard_spare(self, spare: Spare) -> None:
        for fd in (spare.job_fd, spare.result_fd, spare.output_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.killpg(spare.pid, signal.SIGKILL)
        except OSError:
            pass

    def refill_spares(self) -> None:
        # Forking takes ~10 ms of this process: do it only while no run is waiting on us.
        while len(self.spares) < SPARES and not self.jobs:
            self.spares.append(self.fork_spare())

    def kill(self, job: Job) -> None:
        for target in (lambda: os.killpg(job.pid, signal.SIGKILL), lambda: os.kill(job.pid, signal.SIGKILL)):
            try:
                target()
                break
            except OSError:
                continue

    def close_fd(self, fd: int) -> None:
        if fd < 0:
            return
        try:
            self.sel.unregister(fd)
        except (KeyError, ValueError):
            pass
        os.close(fd)

    def finish(self, job: Job) -> None:
        self.kill(job)  # threads or grandchildren the learner left behind go with it
        self.exit_status.pop(job.pid, None)
        self.close_fd(job.result_fd)
        self.close_fd(job.output_fd)
        job.result_fd = job.output_fd = -1
        self.jobs.pop(job.id, None)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.judge_pid:
                self.judge_pid = None
            elif any(j.pid == pid for j in self.jobs.values()):
                self.exit_status[pid] = status

    # --- protocol with the UI

    def emit(self, obj) -> None:
        data = (json.dumps(obj) + "\n").encode()
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.out_fd, view):]
            except BlockingIOError:
                time.sleep(0.001)

    def handle_request(self, req: dict) -> None:
        kind = req.get("type")
        if kind == "quit":
            raise SystemExit(0)
        if kind == "ping":
            self.emit({"type": "pong"})
            return
        if kind != "run":
            return
        gen = int(req["gen"])
        # A newer save supersedes everything still running.
        for job in list(self.jobs.values()):
            if job.gen < gen:
                self.finish(job)
        self.pending_steps = {g: s for g, s in self.pending_steps.items() if g >= gen}
        self.current_gen = gen
        lesson = req.get("lesson")
        if lesson not in self.modules:
            self.emit({"type": "error", "gen": gen, "detail": f"unknown lesson {lesson!r}"})
            self.emit({"type": "done", "gen": gen})
            return
        steps = [s for s in self.modules[lesson].STEPS if not req.get("steps") or s in req["steps"]]
        self.pending_steps[gen] = set(steps)
        for step in steps:
            self.spawn(gen, lesson, step, req["source"], req["filename"], float(req.get("timeout", 3.0)),
                       (req.get("params") or {}).get(step))
        if not steps:
            self.emit({"type": "done", "gen": gen})

    def report(self, job: Job, result: dict) -> None:
        result["output"] = self.output_text(job)
        result["ms"] = round((time.monotonic() - job.started) * 1000, 1)
        self.emit({"type": "step", "gen": job.gen, "result": result})
        left = self.pending_steps.get(job.gen)
        if left is not None:
            left.discard(job.step)
            if not left:
                del self.pending_steps[job.gen]
                self.emit({"type": "done", "gen": job.gen})

    def output_text(self, job: Job) -> str:
        text = job.output.decode("utf-8", errors="replace")
        if job.output_dropped:
            text = f"[… {job.output_dropped} bytes not shown …]\n" + text
        return text

    # --- events

    def on_output(self, job: Job) -> None:
        try:
            chunk = os.read(job.output_fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            self.close_fd(job.output_fd)
            job.output_fd = -1
            return
        job.output += chunk
        extra = len(job.output) - OUTPUT_TAIL
        if extra > 0:
            del job.output[:extra]
            job.output_dropped += extra

    def on_result(self, job: Job) -> None:
        try:
            chunk = os.read(job.result_fd, 1 << 20)
        except BlockingIOError:
            return
        if chunk:
            job.data += chunk
            return
        self.close_fd(job.result_fd)
        job.result_fd = -1
        if job.data:
            try:
                child = json.loads(job.data)
            except ValueError:
                child = {"harness_error": "the result message was cut short"}
            self.drain_output(job)
            self.kill(job)
            job.result_done = True
            send_frame(self.judge_sock, {"job": job.id, "lesson": job.lesson, "step": job.step,
                                         "child": child, "source": job.source})
        else:
            self.report_death(job)

    def drain_output(self, job: Job) -> None:
        while job.output_fd >= 0:
            try:
                chunk = os.read(job.output_fd, 65536)
            except BlockingIOError:
                return
            if not chunk:
                return
            job.output += chunk
            if len(job.output) > OUTPUT_TAIL:
                job.output_dropped += len(job.output) - OUTPUT_TAIL
                del job.output[:-OUTPUT_TAIL]

    def report_death(self, job: Job) -> None:
        """The child ended without a result: an exit, a signal, or the memory killer."""
        status = self.exit_status.pop(job.pid, None)
        if status is None:
            try:
                _, status = os.waitpid(job.pid, 0)
            except ChildProcessError:
                status = 0
        self.drain_output(job)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            key = "failure.memory" if sig == signal.SIGKILL else "failure.crash"
            failure = {"kind": "crash", "detail": name, "frames": [], "caret": ""}
            params = {"signal": name}
        else:
            code = os.WEXITSTATUS(status)
            key, params = "failure.exit", {"code": code}
            failure = {"kind": "exit", "detail": f"exit code {code}", "frames": [], "caret": ""}
        self.finish(job)
        self.report(job, {"id": job.step, "status": "error", "failure": failure,
                          "checks": [{"id": "runs", "status": "error", "message": {"key": key, "params": params}}],
                          "visuals": {}})

    def on_timeout(self, job: Job) -> None:
        self.drain_output(job)
        self.finish(job)
        seconds = job.timeout
        self.report(job, {"id": job.step, "status": "timeout",
                          "failure": {"kind": "timeout", "detail": f"{seconds:g} s", "frames": [], "caret": ""},
                          "checks": [{"id": "runs", "status": "timeout",
                                      "message": {"key": "failure.timeout", "params": {"seconds": f"{seconds:g}"}}}],
                          "visuals": {}})

    def on_judge(self) -> None:
        try:
            reply = recv_frame(self.judge_sock)
        except (EOFError, OSError):
            self.judge_died()
            return
        job = self.jobs.get(reply["job"])
        if job is None:
            return  # superseded while the judge worked on it
        self.finish(job)
        self.report(job, reply["result"])

    def judge_died(self) -> None:
        self.sel.unregister(self.judge_sock)
        self.judge_sock.close()
        for job in list(self.jobs.values()):
            if job.result_done:
                self.finish(job)
                self.report(job, {"id": job.step, "status": "error", "visuals": {}, "failure": None,
                                  "checks": [{"id": "judge", "status": "error",
                                              "message": {"key": "failure.harness", "params": {"detail": "judge"}}}]})
        self.start_judge()

    def on_stdin(self) -> None:
        try:
            chunk = os.read(0, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            raise SystemExit(0)  # the UI went away
        self.inbuf += chunk
        *lines, self.inbuf = self.inbuf.split(b"\n")
        requests = [json.loads(line) for line in lines if line.strip()]
        # Only the newest run matters when saves arrive faster than we read them.
        runs = [r for r in requests if r.get("type") == "run"]
        for req in requests:
            if req.get("type") != "run" or req is runs[-1]:
                self.handle_request(req)

    def loop(self) -> None:
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, ("stdin", None))
        self.emit({"type": "ready", "pid": os.getpid()})
        while True:
            self.refill_spares()
            deadlines = [j.deadline for j in self.jobs.values() if not j.result_done]
            wait = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            for key, _ in self.sel.select(wait):
                kind, job_id = key.data
                if kind == "stdin":
                    self.on_stdin()
                elif kind == "judge":
                    self.on_judge()
                else:
                    job = self.jobs.get(job_id)
                    if job is None:
                        continue
                    (self.on_output if kind == "output" else self.on_result)(job)
            now = time.monotonic()
            for job in list(self.jobs.values()):
                if not job.result_done and job.result_fd >= 0 and now >= job.deadline:
                    self.on_timeout(job)
            self.reap()

    def shutdown(self) -> None:
        for job in list(self.jobs.values()):
            self.finish(job)
        for spare in self.spares:
            self.discard_spare(spare)
        if self.judge_pid:
            try:
                os.killpg(self.judge_pid, signal.SIGKILL)
            except OSError:
                pass


def main() -> None:
    # Keep the protocol channel for ourselves: stray prints (torch warnings) go to stderr.
    out_fd = os.dup(1)
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C belongs to the UI; it tells us to quit
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch  # noqa: F401  (loaded once, shared by every fork)
    import torch.nn.functional  # noqa: F401

    from ..lesson import all_lessons

    lessons = {lesson.id: lesson for lesson in all_lessons()}
    worker = Worker(load_checks(lessons.values()), lessons, out_fd)
    try:
        worker.loop()
    except SystemExit:
        pass
    finally:
        worker.shutdown()
    # Interpreter teardown with torch loaded takes ~2 s; nothing is left to flush or save.
    os._exit(0)


if __name__ == "__main__":
    main()
