"""Why a child ended without its step's frame, or ran out of time, said as a step's failure:
the failure, its message key and the key's parameters."""

from __future__ import annotations

import os
import signal
from typing import Any

from tutor.engine.jobs import Job, result_frames
from tutor.engine.memory_watch import MEMORY_SLACK
from tutor.model.results import Failure

TIMEOUT_DUMP = "Timeout ("  # how faulthandler.dump_traceback_later starts its report
MEMORY_NEAR = (
    0.5  # a step that times out holding this share of its memory budget is said to use too much
)


def describe_death(
    job: Job, dump: str, scratch_limit: int, scratch_entries: int
) -> tuple[Failure, str, dict] | None:
    """The child ended without a result: an exit, a signal, or a memory limit. None: it was out
    of time (see describe_timeout)."""
    from tutor.engine.child import EXIT_NO_CHANNEL
    from tutor.engine.stack_dumps import dumped_frames

    status = job.status or 0
    params: dict[str, Any]
    frames, runaway = dumped_frames(dump, job.filename, job.source)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        failure = Failure("crash", name, result_frames(frames))
        if job.over_disk:
            key = "failure.scratch_full"
            params = {"limit": scratch_limit >> 20, "entries": scratch_entries}
            failure.kind = "disk"
        elif job.over_memory or sig == signal.SIGKILL:  # our watchdog, or the kernel's OOM killer
            key, params = "failure.memory", {}
            failure.kind = "memory"
        elif TIMEOUT_DUMP in dump:
            # It crashed in faulthandler's dump of where it was, just before its deadline (seen
            # while torch.compile traced): out of time, as a timeout would have said.
            return None
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
        failure = Failure("exit", f"exit code {code}", result_frames(frames))
        key, params = "failure.exit", {"code": code}
        if code == EXIT_NO_CHANNEL:
            failure.kind = "channel"
            key, params = "failure.channel", {}
    return failure, key, params


def describe_timeout(job: Job, dump: str, rss: int, memory: int) -> tuple[Failure, str, dict, bool]:
    """Out of time: said with the likely why when it shows. torch.compile compiling (its
    frames in the stack faulthandler dumped, or torch.compile in the file), memory held
    near the limit (rss: the child's, at the deadline; memory: the budget); else a loop or a
    sleep. The last item: the steps after this one get the same verdict without running."""
    from tutor.engine.stack_dumps import compiling, dumped_frames

    frames, _ = dumped_frames(dump, job.filename, job.source)
    seconds = f"{job.timeout:g}"
    key = "failure.timeout"
    params: dict[str, Any] = {"seconds": seconds}
    # What the child holds over what it held when the job came.
    grown = rss - (job.rss_start or job.rss_limit - MEMORY_SLACK - memory)
    compiler = compiling(dump, job.source)
    if compiler == "stack":  # caught compiling: whatever it held, that is why it was slow
        key = "failure.timeout_compile"
    elif memory > 0 and grown >= MEMORY_NEAR * memory:
        key = "failure.timeout_memory"
        params.update(mb=grown >> 20, limit=memory >> 20)
    elif compiler:
        key = "failure.timeout_compile"
    # A kept run out of time while its file was being imported (the outermost frame of the
    # learner's is the module's): every later step imports it again and would spend its whole
    # limit there too. In a class's batch, that is one core for each: they are said at once.
    at_import = job.keep and bool(frames) and frames[0]["function"] == "<module>"
    failure = Failure("timeout", f"{seconds} s", result_frames(frames))
    return failure, key, params, at_import
