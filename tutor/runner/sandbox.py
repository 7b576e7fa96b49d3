"""The child side: runs the learner's file and one step's probe, under limits.

Runs in a process forked from the worker for this one job. It may be killed at
any moment; all it leaves behind is one encoded message on its result pipe.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import traceback
import types

import torch

from . import codec, probe_kit

MEMORY_LIMIT = 3 << 30  # extra data segment over what the worker already holds


class LearnerImportError(Exception):
    def __init__(self, failure: dict):
        super().__init__(failure.get("detail", ""))
        self.failure = failure


def describe_exception(exc: BaseException, filename: str, source: str) -> dict:
    lines = source.splitlines()
    frames = []
    for fs in traceback.extract_tb(exc.__traceback__):
        if fs.filename == filename and fs.lineno:
            code = lines[fs.lineno - 1] if 0 < fs.lineno <= len(lines) else ""
            frames.append({"line": fs.lineno, "function": fs.name, "code": code.rstrip()})
    caret = ""
    if isinstance(exc, SyntaxError) and exc.lineno:
        text = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else (exc.text or "")
        col = max((exc.offset or 1) - 1, 0)
        caret = f"{exc.lineno:>4} | {text.rstrip()}\n     | {' ' * col}^"
        frames = [{"line": exc.lineno, "function": "<module>", "code": text.rstrip()}]
    kind = type(exc).__name__
    detail = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    if probe_kit.is_out_of_memory(exc):
        kind = "MemoryError"
    return {"kind": kind, "detail": detail[:1000], "frames": frames[-8:], "caret": caret}


def load_learner(source: str, filename: str) -> types.ModuleType:
    module = types.ModuleType("learner")
    module.__file__ = filename
    sys.modules["learner"] = module
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: the file is at fault
        raise LearnerImportError(describe_exception(exc, filename, source)) from None
    return module


def _limit_resources() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    used = _data_bytes()
    limit = used + MEMORY_LIMIT
    if hard == resource.RLIM_INFINITY or limit < hard:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    # Output floods go to a pipe the worker drains; core dumps would only fill the disk.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _data_bytes() -> int:
    # VmData from /proc: RLIMIT_DATA is measured against the same number.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def serve_one(job_fd: int, result_fd: int, output_fd: int, checks_modules: dict) -> None:
    """A spare child: get ready, wait for one job on job_fd, run it, exit. Never returns.

    Everything that does not depend on the learner's file happens before the job
    arrives, so a save only pays for running the learner's code.
    """
    try:
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        sys.stdin = open(os.devnull)
        sys.stdout = os.fdopen(1, "w", buffering=1, errors="replace", closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, errors="replace", closefd=False)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sys.setrecursionlimit(2000)
        torch.set_num_threads(1)
        # Inputs are made before any learner code runs, so nothing it patches can reach them.
        inputs = {lesson: module.make_inputs() for lesson, module in checks_modules.items()}
        probe_kit.install_traps()
        _limit_resources()
        job = _read_job(job_fd)
        if job is None:
            os._exit(0)  # the worker is shutting down or replacing us
        message = _run(job, checks_modules[job["lesson"]], inputs[job["lesson"]])
    except BaseException as exc:  # the harness itself failed: report, do not hang
        message = {"harness_error": f"{type(exc).__name__}: {exc}"}
    try:
        data = json.dumps(message, allow_nan=True).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view):]
    finally:
        os._exit(0)


def _read_job(fd: int) -> dict | None:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks)) if chunks else None


def _run(job: dict, checks_module, inputs) -> dict:
    spec = checks_module.STEPS[job["step"]]
    try:
        module = load_learner(job["source"], job["filename"])
    except LearnerImportError as exc:
        return {"import_error": exc.failure}
    ctx = probe_kit.ProbeContext(module, job["filename"], job["source"])
    ctx.params = job.get("params") or {}  # an experiment's settings, chosen in the app
    try:
        outputs = spec.probe(ctx, inputs)
    except probe_kit.Missing as exc:
        return {"missing": exc.name}
    except probe_kit.LearnerFailure as exc:
        return {"failure": exc.failure, "todo": exc.todo}
    return {"outputs": codec.encode(outputs), "kernels": sorted(ctx.kernels)}
