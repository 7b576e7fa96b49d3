"""Issue #31: where a graded file's CPU goes, process by process.

    PYTHONPATH=TREE python tests/benchmarks/grade_split.py [--n 200] [--rounds 1]

Grades a generated class (tests/grade/class_kit.py, lm3-l3) through one EngineClient as
`grade` does (kept runs without views, two files at a time), after one file that starts the
worker, its zygote and its judge. From /proc, the CPU each process took per file: the worker
itself, its children's (the spare children it reaps, from their fork to their exit), the
judge and the zygote; and the spares' minor page faults per file (mostly copy-on-write: a
child writes to pages it shares with the zygote). No grade records are written, so the
figures are the engine's alone; bench_grade.py times the whole command.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "grade"))

import psutil  # noqa: E402
from class_kit import plan, write_class  # noqa: E402

from tutor.engine.client import EngineClient  # noqa: E402
from tutor.engine.process_info import children_of  # noqa: E402
from tutor.engine.protocol import Done  # noqa: E402
from tutor.model.lesson import get_lesson  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
JOBS = 2


def cpu(pid: int) -> dict[str, float]:
    """Seconds of user and system CPU of pid, of its reaped children; their minor faults."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(x) / TICK for x in fields[11:15])
    return {"user": utime, "sys": stime, "children": cutime + cstime, "cminflt": int(fields[8])}


def helpers(worker: int) -> list[int]:
    """The judge and the zygote: the worker's two oldest children (spares come after)."""
    found = sorted(children_of(worker), key=lambda pid: psutil.Process(pid).create_time())
    if len(found) < 2:
        raise SystemExit(f"expected the judge and the zygote among the worker's children {found}")
    return found[:2]


def grade_round(files: list[Path]) -> None:
    lesson = get_lesson("lm3-l3")
    steps = [s.id for s in lesson.checked_steps]
    done = threading.Semaphore(0)
    client = EngineClient(
        lambda e: isinstance(e, Done) and done.release(), timeout=3.0, keep=True, views=False
    )
    client.start()
    assert client.proc is not None

    def submit(path: Path) -> None:
        text = path.read_text(encoding="utf-8")
        client.submit(lesson.id, str(path), text, steps, folder=str(path.parent))

    try:
        submit(files[0])  # the worker's start and the zygote's warm-up: not counted
        done.acquire()
        time.sleep(1.0)
        worker = client.proc.pid
        procs = {"worker": worker, **{f"pid {p}": p for p in helpers(worker)}}
        before = {name: cpu(pid) for name, pid in procs.items()}
        start, in_flight = time.monotonic(), 0
        for path in files[1:]:
            submit(path)
            in_flight += 1
            if in_flight >= JOBS:
                done.acquire()
                in_flight -= 1
        for _ in range(in_flight):
            done.acquire()
        took = time.monotonic() - start
        after = {name: cpu(pid) for name, pid in procs.items()}
    finally:
        client.close()
    n = len(files) - 1
    per = {
        name: {k: (after[name][k] - before[name][k]) * 1e3 / n for k in ("user", "sys")}
        for name in procs
    }
    for name in [p for p in per if p != "worker"]:  # the zygote only forks: mostly system time
        role = "zygote" if per[name]["sys"] > per[name]["user"] else "judge"
        per[f"{role} ({name})"] = per.pop(name)
    spares = (after["worker"]["children"] - before["worker"]["children"]) * 1e3 / n
    faults = (after["worker"]["cminflt"] - before["worker"]["cminflt"]) / n
    total = sum(c["user"] + c["sys"] for c in per.values()) + spares
    print(f"{n} files in {took:.2f} s: {n / took:.1f} a second; CPU ms a file: {total:.1f} in all")
    print(f"  spare children {spares:.1f} ({faults:.0f} minor faults a child)")
    for name, c in per.items():
        print(f"  {name} {c['user'] + c['sys']:.1f} (user {c['user']:.1f}, system {c['sys']:.1f})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    with tempfile.TemporaryDirectory(prefix="attn-grade-split-") as tmp:
        folder = write_class(Path(tmp) / "class", plan(args.n))
        files = sorted(folder.glob("*/lm3_l3.py"))
        for _ in range(args.rounds):
            grade_round(files)


if __name__ == "__main__":
    main()
