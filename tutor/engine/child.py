"""The child side: runs the learner's file and the probes of a run's steps, under limits.

Runs in a process forked from the worker for this one job: one or more steps, in
order. It may be killed at any moment; all it leaves behind is one frame per step
on its result pipe (codec.pack_frame), each signed with that step's token, and maybe
a faulthandler report before one.

What confines the learner's code here, and why (the worker adds its own learner_code.watch):
- RLIMIT_DATA over the current VmData: counts malloc, brk and private mmap (Linux ≥ 4.7),
  so torch's allocator and Python's fail with MemoryError instead of eating the machine;
  RLIMIT_AS would count torch's huge reservations. The hard limit is set too, a little
  above the soft one, so the harness can still report after the learner hit the limit.
- A larger RLIMIT_STACK for the main thread: deep recursion through C (nn.Module calls,
  __getattr__, __repr__) then ends in RecursionError even if the learner raised the
  recursion limit, not in a segfault.
- A seccomp filter that allows only the calls syscalls.ALLOWED names (docs/confinement.md):
  no network, no signal to the worker, the judge, the UI or every process (kill -1), no
  ptrace, no metadata changes, no keyring, no memfd or IPC, no io_uring. Capabilities dropped
  when run as root, so the hard limits hold and the worker's fds cannot be opened through /proc.
- RLIMIT_FSIZE per file (the worker bounds the scratch folder's total), RLIMIT_NOFILE 1024.
- fds: stdin is /dev/null (input() gets EOF), stdout/stderr the output pipe, the result
  pipe also kept at a high number (survives os.closerange(0, 100)); nothing else inherited.

What stays possible: code in this process can read the token from memory and forge a
frame. It gains nothing it could not get by computing the right answer: the judge builds
every expected value from its own inputs. See tests/reliability/README.md.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import json
import linecache
import os
import select
import signal
import sys
import time
import traceback
import types

import torch

from tutor.engine import codec, learner_code, origin, own_folder, protocol, stack_dumps
from tutor.engine.confine import child_confinement, fence, pids_cgroup
from tutor.engine.confine.platform_probe import Protections, probe
from tutor.engine.learner_code import (
    LearnerImportError,
    compile_learner,
    describe_exception,
    load_learner,
    safe_text,
)
from tutor.kit import probe_tools

DEFAULT_MEMORY_MB = 2048  # extra data segment over what the child holds when the job arrives
RECURSION_LIMIT = 2000
EXIT_NO_CHANNEL = 121  # the learner's code closed the result pipe: nothing could be reported
DUMP_MARGIN = 0.2  # s before the deadline: faulthandler shows where the code was stuck

# What the harness needs after the learner's code ran, as it was before: a file that sets
# os._exit = print must not turn this child into a second worker, nor json.dumps = None
# leave the result unwritten, nor a patched exec or clock break the steps that follow.
_exit, _write, _dumps, _monotonic = os._exit, os.write, json.dumps, time.monotonic
_dump_later, _cancel_dump = (
    faulthandler.dump_traceback_later,
    faulthandler.cancel_dump_traceback_later,
)
_collect = gc.collect


def memory_limit_bytes() -> int:
    """ATTN_TUTOR_MEMORY_MB (MiB over the baseline), default 2048; 0 or less: no limit."""
    try:
        mb = int(os.environ.get("ATTN_TUTOR_MEMORY_MB", DEFAULT_MEMORY_MB))
    except ValueError:
        mb = DEFAULT_MEMORY_MB
    return max(mb, 0) << 20


# ------------------------------------------------------------------ the job


def serve_one(
    job_fd: int,
    result_fd: int,
    output_fd: int,
    checks_modules: dict,
    protected=(),
    warm=None,
    fenced=None,
    protections: Protections | None = None,
    files=None,
    cgroup: str | None = None,
    inputs: dict | None = None,
) -> None:
    """A spare child: get ready, wait for one job on job_fd, run its steps, exit. Never returns.

    Everything that does not depend on the learner's file happens before the job
    arrives, so a save only pays for running the learner's code. warm: a list, see _warm_up;
    emptied after it, so that the reference's source and code are gone before the learner's
    code runs. fenced: fence.inventory(), what the learner's code may not open or import.
    protections: platform_probe.probe(), what to set up. files: (landlock.plan(), the run's
    scratch folder), the folders the learner's code may read and the one it may write.
    cgroup: the pids cgroup folder this child joins (pids_cgroup), or None. inputs: per
    lesson, its make_inputs(), made once by the worker (else here).
    """
    protections = protections or probe()
    # The fork bound: before anything else, so that no learner process escapes it.
    child_confinement.confined["forks"] = pids_cgroup.enter(cgroup) if cgroup else False
    rules, scratch = files or (None, None)
    try:
        os.setpgid(0, 0)
        job_fd, result_fd, marks_fd = child_confinement.arrange_fds(job_fd, result_fd, output_fd)
        sys.stdin = open(os.devnull)  # noqa: SIM115 (the child's stdin for good)
        sys.stdout = os.fdopen(1, "w", buffering=1, errors="replace", closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, errors="replace", closefd=False)
        # A crash or a hang leaves a traceback before the frame: the worker shows the learner's line.
        faulthandler.enable(file=result_fd, all_threads=False)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.set_wakeup_fd(
            -1
        )  # the worker's (closed above): a learner's handler must not write there
        _keep_handlers()
        sys.setrecursionlimit(RECURSION_LIMIT)
        torch.set_num_threads(1)
        # Inputs are made before any learner code runs, so nothing it patches can reach them.
        if inputs is None:
            inputs = {lesson: module.make_inputs() for lesson, module in checks_modules.items()}
        probe_tools.install_traps()
        _warm_up(warm or (), checks_modules, inputs, job_fd)
        _forget_warm_up(warm)
        data_limit = child_confinement.limit_resources(memory_limit_bytes(), protections)
        cwd = os.getcwd()
        ruleset = child_confinement.prepare_files(protections, rules, scratch)
        child_confinement.confine(list(protected), protections)
        if child_confinement.confined["network"] or ruleset is not None:
            sys.addaudithook(learner_code.watch)
        if fenced is not None:
            fence.install(fenced, stack_dumps.compile_watch(result_fd))
        job = _read_job(job_fd)
        if job is None:
            _exit(0)  # the worker is shutting down or replacing us
        job["folder"] = own_folder.enter(job, cwd)
        child_confinement.restrict_files(ruleset, job["filename"], cwd, job["folder"])
        tokens = [bytes.fromhex(token) for token in job.pop("tokens")]
    except BaseException as exc:  # the harness itself failed before any step: report, do not hang
        _send(result_fd, b"", _harness_failure(exc))
        _exit(0)
    _run_steps(
        job,
        tokens,
        marks_fd,
        result_fd,
        checks_modules[job["lesson"]],
        inputs[job["lesson"]],
        data_limit,
    )
    _exit(0)


def _warm_up(warm, checks_modules: dict, inputs: dict, job_fd: int | None = None) -> None:
    """Run each lesson's checked steps once on its warm-up file (warmup.py, or the starter),
    before any learner code: never on its reference, which would stay in the child's heap.
    Code runs about twice as slowly the first time in a fresh fork (single-head: 4.8 ms, then
    2.2): paid here, while the child waits, that is not in the learner's run. A job that comes
    meanwhile waits for one step at most.
    warm: (lesson id, file name, source, compiled code, step ids) per lesson."""
    streams = sys.stdout, sys.stderr
    rng = torch.get_rng_state()  # the reference's modules draw their initial weights from it
    quiet = None
    try:
        quiet = sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (closed below)
        for lesson, filename, source, code, steps in warm:
            for step in steps:
                if job_fd is not None and select.select([job_fd], [], [], 0)[0]:
                    return
                _run(
                    {"source": source, "filename": filename},
                    step,
                    code,
                    checks_modules[lesson],
                    inputs[lesson],
                )
    except BaseException:
        pass  # only the learner's run is slower
    finally:
        sys.stdout, sys.stderr = streams
        if quiet is not None:
            quiet.close()
        torch.set_rng_state(rng)
        sys.modules.pop("learner", None)
        # load_learner put each warm-up file's lines in linecache (for torch.jit.script): none
        # is the learner's own, and the learner's code must find only its own file there.
        for _, filename, *_ in warm:
            linecache.cache.pop(filename, None)
        _collect()


def warm_up(warm, checks_modules: dict, inputs: dict) -> None:
    """_warm_up in the worker itself (`grade`): its children are then forked warm."""
    _warm_up(warm, checks_modules, inputs)
    _forget_warm_up(None)


def _forget_warm_up(warm) -> None:
    """Nothing of the reference may stay reachable from the learner's code (gc.get_objects(),
    the frames above it): its source and code objects are freed here, not merely unused."""
    if warm is not None:
        warm.clear()  # the runs' tuples hold the only references: freed here (no cycle)
    _codes[:] = [None, frozenset()]


def _run_steps(
    job: dict, tokens: list[bytes], marks_fd: int, result_fd: int, checks_module, inputs, data_limit
) -> None:
    """One frame per step, in order. Each step gets a fresh module and the whole time limit,
    counted from when it starts here; the worker counts from the previous frame, a little later.
    Between two steps' output goes a marker (MAGIC and the step's token): the worker splits
    the output there, so each step shows only what it printed."""
    streams = sys.stdout, sys.stderr
    state = _torch_state()
    since = own_folder.newest_module()
    code = None
    deadline = float(job.get("deadline", _monotonic() + 3.0))  # the first step's: set by the worker
    for i, step in enumerate(job["steps"]):
        if i:
            # The last step's module holds what the file built (its functions' globals make a
            # cycle): free it, or a file that builds a big tensor on import has it twice.
            sys.modules.pop("learner", None)
            own_folder.forget_modules(job.get("folder"), since)
            _collect()
            deadline = _monotonic() + float(job.get("timeout", 3.0))
            _restore(state, streams)
            child_confinement.restore_headroom(data_limit)
            learner_code.network_tried.clear()
            learner_code.metadata_tried.clear()
        try:
            _dump_later(max(deadline - _monotonic() - DUMP_MARGIN, 0.01), file=result_fd)
            if code is None:
                code = compile_learner(job["source"], job["filename"])
            message, blob = _run(job, step, code, checks_module, inputs)
        except LearnerImportError as exc:  # the file does not compile: the same for every step
            message, blob = (
                protocol.ImportFailed(protocol.LearnerFailure.from_dict(exc.failure)),
                b"",
            )
        except BaseException as exc:  # the harness itself failed: report, do not hang
            _disarm_learner_signals()
            ours = _out_of_threads(exc) or probe_tools.is_out_of_memory(exc)  # said there
            if not ours and _learner_at_fault(exc, job["filename"]):  # a handler fired in our code
                failure = describe_exception(exc, job["filename"], job["source"])
                message, blob = protocol.Raised(protocol.LearnerFailure.from_dict(failure)), b""
            else:
                message, blob = _harness_failure(exc), b""
        _flush(streams)  # the step's prints reach the pipe before its marker
        if i < len(tokens) - 1:
            _mark(marks_fd, tokens[i])
        _send(result_fd, tokens[i], message, blob)


def _torch_state() -> tuple:
    return torch.get_default_dtype(), torch.is_grad_enabled(), sys.getrecursionlimit()


def _restore(state: tuple, streams: tuple) -> None:
    """What a previous step's learner code may have changed and the next step's code relies on."""
    dtype, grad, recursion = state
    try:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        sys.setrecursionlimit(recursion)
        sys.stdout, sys.stderr = streams
    except BaseException:
        pass  # the learner replaced these too: the step runs in what is left


def _flush(streams: tuple) -> None:
    for stream in streams:
        with contextlib.suppress(BaseException):
            stream.flush()


# What the harness's own thread or process start raises once the learner's code holds every
# thread or process it may have (faulthandler's watchdog, a pool): the learner's, not ours.
_NO_THREADS = ("can't start new thread", "unable to start watchdog thread")


def _out_of_threads(exc: BaseException) -> bool:
    if isinstance(exc, BlockingIOError):
        return True  # EAGAIN from clone: the pids bound, or RLIMIT_NPROC
    try:
        return type(exc) is RuntimeError and any(m in safe_text(exc) for m in _NO_THREADS)
    except Exception:
        return False


def _harness_failure(exc: BaseException) -> protocol.Report:
    if probe_tools.is_out_of_memory(exc):
        return protocol.Raised(protocol.LearnerFailure(protocol.Failure("MemoryError", "")))
    if _out_of_threads(exc):
        failure = protocol.Failure(type(exc).__name__, safe_text(exc, 300))
        return protocol.Raised(protocol.LearnerFailure(failure, confined="processes"))
    return protocol.HarnessError(f"{type(exc).__name__}: {safe_text(exc, 300)}")


def _send(
    result_fd: int, token: bytes, message: protocol.Report, blob: bytes | bytearray = b""
) -> None:
    """Write one step's frame. Threads the learner started end with the child."""
    try:
        _cancel_dump()  # a late dump must not cut into the frame
        child_confinement.release_headroom()
        try:
            payload = codec.pack_payload(message.to_json(), blob, _dumps)
        except BaseException as exc:
            payload = codec.pack_payload(_harness_failure(exc).to_json(), b"", _dumps)
        _write_all(result_fd, codec.pack_frame(token, payload))
    except OSError:
        _exit(EXIT_NO_CHANNEL)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[_write(fd, view) :]


def _read_job(fd: int) -> dict | None:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks)) if chunks else None


def _mark(marks_fd: int, token: bytes) -> None:
    try:
        _write_all(marks_fd, codec.MAGIC + token)
    except OSError:
        pass  # the learner's code closed it: the worker gives all output to the step it has


READS_LIMIT = 64  # names of the file a probe read, at most; more: unknown (the app runs it)


def _record_reads(module: types.ModuleType) -> set[str]:
    """The learner's module made to note each name read from it as an attribute (the probe's
    ctx.get, ctx.module.X): the app runs a step again only when what it read, or what that
    names, changed (tutor/workspace/unchanged.py). The file's own code reads its globals
    without this; the set is out of its namespace."""
    reads: set[str] = set()

    class ReadModule(types.ModuleType):
        def __getattribute__(self, name: str):
            reads.add(name)
            return types.ModuleType.__getattribute__(self, name)

    module.__class__ = ReadModule
    return reads


def _names_read(reads: set[str]) -> list[str] | None:
    """The names the probe read of the file (sorted), or None when any name may have been read
    (its __dict__, vars()) or they are too many. Names the file does not define count too:
    defining one later may change the verdict."""
    if "__dict__" in reads:
        return None
    names = sorted(n for n in reads if not n.startswith("__"))
    return names if len(names) <= READS_LIMIT else None


_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
_handlers: dict = {}  # the harness's own signal handlers, taken before any learner code


def _keep_handlers() -> None:
    for sig in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError):
            handler = signal.getsignal(sig)
            if handler is not None:  # None: not set from Python, nor settable from it
                _handlers[sig] = handler


def _disarm_learner_signals() -> None:
    """The learner's timers stopped and its signal handlers undone before the harness's own
    code runs: a handler that raises (say a KeyboardInterrupt every 5 ms) must land in the
    learner's run, never in the frame we send. One may still fire in here: it raises, and we
    go again (the timers are stopped first, so it ends)."""
    for _ in range(1000):
        try:
            for timer in _TIMERS:
                signal.setitimer(timer, 0)
            for sig, handler in _handlers.items():
                if signal.getsignal(sig) is not handler:
                    signal.signal(sig, handler)
            return
        except BaseException:  # the learner's handler, raising: try again
            continue


def _learner_at_fault(exc: BaseException, filename: str) -> bool:
    if isinstance(
        exc, (SystemExit, KeyboardInterrupt, RecursionError)
    ) or probe_tools.is_out_of_memory(exc):
        return True
    return any(fs.filename == filename for fs in traceback.extract_tb(exc.__traceback__))


_codes: list = [None, frozenset()]  # (code object, its code_ids): once per file, not per step


def _code_ids(code) -> frozenset[int]:
    if _codes[0] is not code:
        _codes[:] = [code, origin.code_ids(code)]  # holding code keeps the ids valid
    return _codes[1]


def _run(
    job: dict, step: str, code, checks_module, inputs
) -> tuple[protocol.Report, bytes | bytearray]:
    """The step's message, and the blob its tensors are in."""
    spec = checks_module.STEPS[step]
    try:
        try:
            module = load_learner(job["source"], job["filename"], code)
            reads = _record_reads(module)
            ctx = probe_tools.ProbeContext(
                module, job["filename"], job["source"], _code_ids(code), checks_module.__file__
            )
            ctx.params = (job.get("params") or {}).get(step) or {}  # an experiment's settings
            ctx.views = job.get("views", True)
            ctx.stop_at_kernel = spec.own_formula is not None
            ctx.reads = reads
            # Each of the step's names, whether the probe gets it or not.
            for name in spec.functions:
                try:
                    ctx.get(name)
                except probe_tools.NameMissing:
                    pass  # the probe says so, if it needs the name
            outputs = spec.probe(ctx, inputs)
        finally:
            _disarm_learner_signals()
        encoded, blob = codec.encode(outputs)
    except LearnerImportError as exc:
        return protocol.ImportFailed(protocol.LearnerFailure.from_dict(exc.failure)), b""
    except probe_tools.NameMissing as exc:
        return protocol.Missing(exc.name), b""
    except probe_tools.ForeignCode as exc:
        return protocol.Foreign(exc.name, safe_text(exc.origin, 300)), b""
    except probe_tools.ForbiddenKernel as exc:
        return protocol.KernelCalled(exc.kernels), b""
    except probe_tools.LearnerRaised as exc:
        return protocol.Raised(protocol.LearnerFailure.from_dict(exc.failure), bool(exc.todo)), b""
    except BaseException as exc:
        # The probe touched learner code outside ctx.call (an attribute, a method): the
        # learner's fault when their file is in the traceback, the tutor's otherwise.
        if not _learner_at_fault(exc, job["filename"]):
            raise
        traceback.clear_frames(exc.__traceback__)
        return protocol.Raised(
            protocol.LearnerFailure.from_dict(
                describe_exception(exc, job["filename"], job["source"])
            )
        ), b""
    return protocol.Outputs(encoded, sorted(ctx.kernels), _names_read(reads)), blob
