"""Issue #18: the time `attn-tutor grade` takes for a class, against a loop of `attn-tutor check`.

    python tests/benchmarks/bench_grade.py [--n 200] [--loop 20] [--hostile 4] [--jobs N] [--json out.json]

Three timings, each of the real CLI in a subprocess (worker start and torch's import included):
  1. `grade` over N ordinary submissions (tests/grade/class_kit.py: about 6 in 10 correct,
     written four ways; 3 in 10 with one of lessons/lm3-l3/mistakes.toml's mistakes; 1 in 10
     the untouched starter);
  2. `grade` over N submissions of which --hostile are hostile (a hang, a memory bomb, a
     print flood, sys.exit at import), the rest as in 1;
  3. `attn-tutor check FILE --json` run once per file over the first --loop files of set 1
     (each pays the torch import), extrapolated to N: said as such in the output.
The load average is printed before each phase: other jobs on a 2-core machine move the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "grade"))

from class_kit import plan, write_class  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


CPU = {
    "last": 0.0
}  # CPU seconds of the last cli() call's process tree (those reaped: the judge is not)


def cli(*args) -> float:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "tutor", *map(str, args)], env=ENV, capture_output=True, text=True
    )
    took = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["last"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if proc.returncode not in (0, 1):
        raise SystemExit(
            f"attn-tutor {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr[-2000:]}"
        )
    return took


def statuses(out: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in (out / "students").glob("*.json"):
        status = json.loads(path.read_text(encoding="utf-8"))["status"]
        counts[status] = counts.get(status, 0) + 1
    return counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument(
        "--loop", type=int, default=20, help="files for the `check` loop (extrapolated to --n)"
    )
    ap.add_argument("--hostile", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    result: dict = {"n": args.n, "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="attn-bench-grade-") as tmp:
        tmp = Path(tmp)
        ordinary = write_class(tmp / "ordinary", plan(args.n))
        mixed = write_class(tmp / "mixed", plan(args.n, hostile=args.hostile))
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(ROOT / "tutor"), str(ROOT / "lessons")],
            env=ENV,
        )

        for name, folder in (("ordinary", ordinary), ("with_hostile", mixed)):
            print(f"[{name}] load average {load()}", flush=True)
            out = tmp / f"out-{name}"
            took = cli("grade", folder, "--out", out, "--timeout", args.timeout, *jobs)
            result[name] = {
                "seconds": round(took, 2),
                "per_second": round(args.n / took, 1),
                "cpu_seconds": round(CPU["last"], 1),
                "statuses": statuses(out),
                "load_after": load(),
            }
            print(
                f"[{name}] {args.n} submissions graded in {took:.1f} s: {args.n / took:.1f}/s, "
                f"{CPU['last']:.1f} CPU-s; statuses {result[name]['statuses']}",
                flush=True,
            )

        print(f"[check loop] load average {load()}", flush=True)
        files = sorted(ordinary.glob("*/lm3_l3.py"))[: args.loop]
        start = time.monotonic()
        for path in files:
            cli("check", path, "--json", "--timeout", args.timeout)
        took = time.monotonic() - start
        per_file = took / len(files)
        result["check_loop"] = {
            "files": len(files),
            "seconds": round(took, 2),
            "per_file": round(per_file, 3),
            "extrapolated_seconds": round(per_file * args.n, 1),
        }
        print(
            f"[check loop] {len(files)} files in {took:.1f} s ({per_file:.2f} s a file): "
            f"{per_file * args.n:.0f} s for {args.n}, extrapolated",
            flush=True,
        )
        speedup = per_file * args.n / result["ordinary"]["seconds"]
        result["speedup"] = round(speedup, 1)
        print(
            f"grade is {speedup:.0f}× the check loop; target ≤ 10 s for {args.n} ordinary: "
            f"{'met' if result['ordinary']['seconds'] <= 10 else 'missed'}"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
