"""Soak: 200 runs in a row through one real worker, alternating the reference and a wrong
file, submitted as an app does (a newer save sometimes arrives before the last finished).

Every verdict delivered must match the file of its generation, and the worker's processes
and open fds, and this process's fds and threads, are the same before and after.
It uses the session worker `live`, after all the hostile cases have been through it.
"""

from __future__ import annotations

import os
import random
import threading
import time

from reliability_kit import CHECKED, UNMASKED, children_of, summary, wait_until, with_code

from tutor.engine.spares import SPARES  # the worker modules import no torch

RUNS = 200
SOURCES = {"good": with_code(""), "bad": with_code(UNMASKED)}
EXPECTED = {
    "good": dict.fromkeys(CHECKED["lm3-l3"], "pass"),
    "bad": {"single-head": "fail", "leakage": "fail", "multi-head": "pass", "shapes": "pass"},
}


def worker_counts(live) -> dict:
    """Children and open fds of the worker once it is idle, and this process's fds and threads.

    The worker answers `stats` from its loop, between runs, never in the middle of forking a
    spare (when it briefly holds the child's ends of three pipes). Its fds come from /proc,
    or from the worker itself where /proc refuses (the worker is not dumpable, so a non-root
    user may not list them)."""
    stats = {}

    def idle():
        stats.update(live.request({"type": "stats"}, "stats"))
        # The judge, the zygote the spares come from (where there is one: the worker's other
        # child besides them) and SPARES ready children; children killed with a run are reaped.
        return (
            stats["jobs"] == 0
            and stats["spares"] == SPARES
            and len(stats["children"]) in (1 + SPARES, 2 + SPARES)
        )

    assert wait_until(idle, 10, step=0.1), stats
    try:
        fds = len(os.listdir(f"/proc/{live.pid}/fd"))
        children = len(children_of(live.pid))
    except PermissionError:
        fds, children = stats["fds"], len(stats["children"])
    return {
        "worker_fds": fds,
        "worker_children": children,
        "test_fds": len(os.listdir("/proc/self/fd")),
        "test_threads": threading.active_count(),
    }


def test_soak(live, tmp_path):
    path = tmp_path / "lm3_l3.py"
    live.run("lm3-l3", SOURCES["good"])
    before = worker_counts(live)
    rng = random.Random(20260601)
    kinds: dict[int, str] = {}
    waited: list[int] = []
    start = time.monotonic()
    for i in range(RUNS):
        kind = "good" if i % 2 == 0 else "bad"
        path.write_text(SOURCES[kind], encoding="utf-8")  # the save, then the watcher's read
        run = live.submit("lm3-l3", path.read_text(encoding="utf-8"), filename=str(path))
        kinds[run.gen] = kind
        if i < RUNS - 1 and rng.random() < 0.3:
            time.sleep(rng.uniform(0, 0.08))  # saved again while this one runs: it is superseded
            continue
        assert run.done.wait(30), f"run {i} (generation {run.gen}) never finished"
        waited.append(run.gen)
    elapsed = time.monotonic() - start
    after = worker_counts(live)

    assert not live.gone
    # Every finished run has all its verdicts, each matching its own file.
    for gen in waited:
        results = live.runs[gen].results
        got = {sid: r.status for sid, r in results.items()}
        assert got == EXPECTED[kinds[gen]], f"generation {gen} ({kinds[gen]}):\n{summary(results)}"
    # And so does every verdict delivered for a run later superseded.
    with live.lock:
        delivered = [e for e in live.events if e.type == "step" and e.gen in kinds]
    for e in delivered:
        assert e.result.status == EXPECTED[kinds[e.gen]][e.result.id], e
    assert after == before, f"before {before}, after {after}"
    print(
        f"\nsoak: {RUNS} runs ({len(waited)} waited for, {RUNS - len(waited)} superseded) "
        f"in {elapsed:.1f} s; {len(delivered)} verdicts; before {before}; after {after}"
    )
    # No bound on the time: each run has its own (done.wait), and speed is the benchmarks'.
