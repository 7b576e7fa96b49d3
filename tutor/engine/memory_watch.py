"""Bounds the kernel does not keep for the worker: a child's resident memory (RLIMIT_DATA misses
shared mappings, and root can raise it), its scratch folder's size, and its pids cgroup."""

from __future__ import annotations

from collections.abc import Iterable

from tutor.engine.confine import disk_quota, leftovers, pids_cgroup
from tutor.engine.jobs import Job
from tutor.engine.process_info import resident_bytes

MEMORY_SLACK = 256 << 20  # RSS above the RLIMIT_DATA budget before the watchdog kills


def rss_limit(parent: int, memory: int) -> int:
    """The RSS at which a child forked from `parent` is killed. ATTN_TUTOR_MEMORY_MB=0 (memory 0)
    turns the limit off, and so the watchdog."""
    return resident_bytes(parent) + memory + MEMORY_SLACK if memory > 0 else 1 << 62


def over_memory(jobs: Iterable[Job]) -> list[Job]:
    """Running jobs whose child holds more than its RSS limit."""
    return [
        job
        for job in jobs
        if not job.result_done and job.status is None and resident_bytes(job.pid) > job.rss_limit
    ]


def over_disk(
    jobs: Iterable[Job], scratches: dict[int, str], limit: int, entries: int
) -> list[Job]:
    """Running jobs whose scratch folder passed disk_quota's bound (RLIMIT_FSIZE bounds one file)."""
    out = []
    for job in jobs:
        scratch = scratches.get(job.pid)
        if (
            scratch
            and not job.result_done
            and job.status is None
            and disk_quota.over(scratch, limit, entries)
        ):
            out.append(job)
    return out


def pids_bound(forks: bool) -> pids_cgroup.Bound | None:
    """The children's pids cgroups (a fork bomb gets EAGAIN at pids_cgroup.LIMIT), where they can
    be made; those a killed worker left are swept first."""
    if not forks:
        return None
    try:
        leftovers.sweep_cgroups(pids_cgroup.base())
        base = pids_cgroup.base()
        return pids_cgroup.Bound(base) if base is not None else None
    except (OSError, TypeError):
        return None
