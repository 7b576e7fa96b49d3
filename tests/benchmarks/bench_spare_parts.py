"""Where a `grade` spare's time goes, old tree against new: medians per part over every spare.

    python tests/benchmarks/bench_spare_parts.py [--n 40] [--reps 3] TREE [TREE…]

Each TREE is a copy of the app (e.g. `git worktree add /tmp/old <commit>`); runs of
`attn-tutor grade` alternate between them. The worker is started with _spare_probe.py's
probes (a sitecustomize written for the run): the worker's fork_spare and, where there is
one, the zygote's round trip and fork; in each spare, its CPU from the fork to serve_one,
each part of its set-up (cgroup, fds, warm-up, limits, Landlock, seccomp, fence), its CPU
when ready, each step's run, and its whole CPU as the worker's wait4 reaps it. Wall times
on a loaded machine are noisy: compare the CPU figures (ms), and repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "grade"))

from class_kit import plan, write_class  # noqa: E402

SITE = """
import os, sys
if b"tutor.engine.supervisor" in open("/proc/self/cmdline", "rb").read():
    import _spare_probe
    import tutor.engine.supervisor as w
    _spare_probe.install(w)
    try:
        w.main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    sys.stdout.flush()
    os._exit(code)
"""


def figures(path: Path) -> dict[str, list[float]]:
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out: dict[str, list[float]] = defaultdict(list)
    served = {e["pid"] for e in events if e["ev"] == "c_serve"}
    ran = {e["pid"] for e in events if e["ev"] == "c_run"}
    for e in events:
        ev = e["ev"]
        if ev == "reaped":
            if e["child"] in ran:
                out["child CPU (wait4), ran a job"].append(e["cpu"])
                out["child minor faults (wait4), ran a job"].append(e.get("faults", 0))
            elif e["child"] in served:
                out["child CPU (wait4), no job"].append(e["cpu"])
            continue
        for key in ("dur", "cpu", "since_fork", "waited"):
            if key in e:
                out[f"{ev}.{key}"].append(e[key])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="attn-bench-spares-"))
    (tmp / "site").mkdir()
    (tmp / "site" / "sitecustomize.py").write_text(SITE)
    folder = write_class(tmp / "class", plan(args.n))
    every: dict[str, dict[str, list[float]]] = {str(t): defaultdict(list) for t in args.trees}
    for rep in range(args.reps):
        for tree in args.trees if rep % 2 == 0 else args.trees[::-1]:
            probe = tmp / f"spares-{rep}-{tree.name}.jsonl"
            env = dict(
                os.environ,
                PYTHONPATH=os.pathsep.join([str(tree), str(tmp / "site"), str(HERE)]),
                ATTN_BENCH_SPARES=str(probe),
                LANG="C.UTF-8",
            )
            jobs = ["--jobs", str(args.jobs)] if args.jobs else []
            start = time.monotonic()
            cmd = [sys.executable, "-m", "tutor", "grade", str(folder), "--out"]
            cmd += [str(tmp / f"out-{rep}-{tree.name}"), "--timeout", "5", *jobs]
            # cwd: not a tree's folder (`-m` puts the cwd before PYTHONPATH)
            proc = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True)
            load = Path("/proc/loadavg").read_text().split()[0]
            print(
                f"{tree}: rc {proc.returncode}, {time.monotonic() - start:.1f} s, load {load}",
                flush=True,
            )
            if not probe.exists():
                raise SystemExit(f"no probe events: {proc.stderr[-2000:]}")
            for key, values in figures(probe).items():
                every[str(tree)][key] += values
    keys = sorted({k for d in every.values() for k in d})
    print(f"\nmedians, ms (n = values) over {args.reps} runs of {args.n} students")
    print(f"{'':44s}" + "".join(f"{Path(t).name[:22]:>24s}" for t in every))
    for key in keys:
        row = ""
        for data in every.values():
            v = data.get(key, [])
            row += f"{statistics.median(v):>15.2f} (n={len(v):>4d})" if v else f"{'-':>24s}"
        print(f"{key:44s}{row}")
    if args.json:
        args.json.write_text(json.dumps(every, indent=1) + "\n")


if __name__ == "__main__":
    main()
