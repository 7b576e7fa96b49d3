"""What the worker tracks: a spare child waiting for a job, a job (one child running a save's
steps in order), and a step's child data at the judge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tutor.model.results import Frame

if TYPE_CHECKING:
    from tutor.engine.codec import FrameReader


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
    reader: FrameReader  # for the step running now
    rss_limit: int
    output_pipe: int = 64 << 10
    index: int = 0  # the step running now: steps[index]
    # Output per step index: [tail, bytes dropped]. The child puts a marker (MAGIC + the
    # step's token) between steps; `out_step` is the step the output read now belongs to.
    outputs: dict[int, list[Any]] = field(default_factory=dict)
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
    folder: str | None = None  # the submission's folder (`grade`): its other files are importable

    @property
    def step(self) -> str:
        return self.steps[min(self.index, len(self.steps) - 1)]


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


def result_frames(frames: list[dict]) -> list[Frame]:
    """stack_dumps.dumped_frames' dicts as results' frames."""
    return [Frame(f["line"], f["function"], f["code"]) for f in frames]
