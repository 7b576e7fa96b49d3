"""What a child prints: split between its steps by the markers the child writes, clipped to a
tail, and read at the pace its writes come (OutputReader, the supervisor's layer that reads it).

Output is read at each tick, not on every write: a print loop then costs the child a write
into a pipe nobody waits on, and the worker ≤ 20 wakeups a second (measured: 2.5× the prints).
But a child that fills the pipe between two ticks blocks on it: then its output fd joins
the selector (a flood), read as it comes, until a tick's worth falls below half a pipe.
Every small write wakes a reader that waits in the selector: after a read of less than a
quarter of the pipe, it waits FLOOD_PAUSE (≤ 200 wakeups a second; small writes would
need > 50 MB/s to fill the pipe meanwhile). A big print's reads take the whole pipe.
A step gets FLOOD_BUDGET read that way (~25× what a correct file printing 5 MB a call makes
in a step), then ticks again: a thread or `yes` writing for ever must not keep a core busy.
"""

from __future__ import annotations

import os
import selectors
import time
from typing import Any

from tutor.engine.jobs import Job
from tutor.engine.supervisor_base import SupervisorBase

OUTPUT_TAIL = 4000
DRAIN_CAP = 1 << 20  # bytes read at once from a pipe something may still be writing to
READ_SIZE = 1 << 20  # one read takes all a pipe holds
OUTPUT_PIPE = 256 << 10
FLOOD_PAUSE = 0.005
FLOOD_BUDGET = 256 << 20
# A step's frame (up to ~150 KB) in one write, not in 64 KiB pieces each waiting for us to read.
RESULT_PIPE = 512 << 10
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032


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


def keep_output(job: Job, chunk: bytes, final: bool = False) -> None:
    from tutor.engine.codec import MAGIC

    data = job.carry + chunk if job.carry else chunk
    view = memoryview(data)  # slices of a flood's chunk without copying it
    start = 0
    while job.out_step < len(job.tokens):
        marker = MAGIC + job.tokens[job.out_step]
        at = data.find(marker, start)
        if at < 0:
            break
        append_output(job, view[start:at])
        start = at + len(marker)
        job.out_step += 1
    # Held back: the start of a marker split between two reads (not once the job's steps are done).
    keep = (
        0 if final or job.out_step >= len(job.tokens) else min(len(MAGIC) + 15, len(data) - start)
    )
    end = len(data) - keep
    job.carry = bytes(view[end:])
    append_output(job, view[start:end])


def append_output(job: Job, data: bytes | memoryview) -> None:
    if job.out_step >= len(job.tokens):
        return  # after the last step's marker: steps handed to other children (see hedge)
    add_clipped(job.outputs.setdefault(job.out_step, [bytearray(), 0]), data)


def take_output(job: Job) -> tuple[str, int]:
    """What the step running now printed (its marker is in the pipe before its frame): the
    tail, and how many bytes came before it (the UI says so, in the learner's language)."""
    index = job.index
    if job.out_step <= index:  # no marker (the learner closed its fd, or the step died): all so far
        keep_output(job, b"", final=True)
        job.out_step = index + 1
    whole: list[Any] = [bytearray(), 0]
    for i in sorted(k for k in job.outputs if k <= index):
        part, lost = job.outputs.pop(i)
        whole[1] += lost
        add_clipped(whole, part)
    tail, dropped = whole
    return tail.decode("utf-8", errors="replace"), dropped


class OutputReader(SupervisorBase):
    """The supervisor's reading of its children's pipes: output at ticks or as it floods, results."""

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
            keep_output(job, chunk)
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
