"""Issue #13: save → verdict of a file whose functions print a lot, against the same file silent.

    python tests/benchmarks/bench_output.py [--bytes 1000000] [--saves 20] [--json out.json]

The app runs as in bench_latency.py (a tmux pane 80×24, the lm3-l3 step "single-head",
latency from the app's trace). Saves alternate a correct file and the broken variants, as
there; each is saved twice, once as it is and once with `print("x" * BYTES)` first in every
function (causal_attention, the module's __init__ and forward, expected_shapes), in turns,
so both series see the same load. With 1 MB a call, the four checked steps print ~34 MB
(single-head 4, leakage 12, multi-head 15, shapes 3), all of which crosses the child's output
pipe. Half the printing saves follow a silent one, so they start with the output read at
ticks (the worker reads as it comes from the start only after a run that flooded).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    BROKEN,
    ROOT,
    AppSession,
    LoadWindow,
    compile_tree,
    jitter,
    kill_tmux_server,
    loadavg,
    require_tools,
    start_tmux_server,
    summary_ms,
)
from bench_latency import one_save, startup  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--bytes", type=int, default=1_000_000, help="printed by every function, each call"
    )
    p.add_argument("--saves", type=int, default=20, help="saves in each series")
    p.add_argument("--gap", type=float, default=0.3, help="pause after each verdict, s")
    p.add_argument("--jitter", type=float, default=0.2, help="extra random pause, up to, s")
    p.add_argument("--timeout", type=float, default=20.0)
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--root", type=Path, default=ROOT, help="the attn-tutor tree to run (default: this one)"
    )
    p.add_argument("--python", default=sys.executable, help="the interpreter that runs the app")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    random.seed(args.seed)
    require_tools()
    compile_tree(args.root, args.python)
    base = Path(tempfile.mkdtemp(prefix="attn-bench-output-"))
    socket = f"attn-bench-{os.getpid()}"
    start_tmux_server(socket)
    series = {"silent": 0, "prints": args.bytes}
    rows: dict[str, list] = {name: [] for name in series}
    res: dict = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "bytes_per_call": args.bytes,
        "load": {"start": loadavg()},
    }
    sess = AppSession(base / "app", socket, "app", root=args.root, python=args.python)
    try:
        sess.trace_path = sess.workdir / "trace.jsonl"
        trace = sess.trace()
        print("start-up …", flush=True)
        res["startup"] = startup(sess, trace, args)
        time.sleep(0.5)
        print(f"{args.saves} saves × 2 ({args.bytes} bytes a call, and silent) …", flush=True)
        win = LoadWindow(sess.own_pids)
        for i in range(args.saves):
            kind = "correct" if i % 2 == 0 else BROKEN[(i // 2) % len(BROKEN)]
            method = ("atomic", "truncate")[(i // 2) % 2]
            order = list(series) if i % 2 == 0 else list(series)[::-1]
            for name in order:
                row = one_save(
                    sess,
                    trace,
                    kind,
                    method,
                    f"{name}-{i}-{random.random():.9f}",
                    None,
                    args.timeout,
                    series[name],
                )
                row["i"] = i
                rows[name].append(row)
                if args.verbose:
                    print(
                        f"  {name:7s} {i:3d} {kind:13s} {method:8s} trace {row['trace_ms']} ms {row['marks']} "
                        f"{row['problems'] or ''}",
                        flush=True,
                    )
                time.sleep(jitter(args.gap, args.jitter))
        res["phase_load"] = win.stop()
        res["quit"] = sess.quit()
    finally:
        if sess.ui_pid:
            sess.quit(timeout=5)
        kill_tmux_server(socket)
        res["load"]["end"] = loadavg()
        shutil.rmtree(base, ignore_errors=True)
    res["saves"] = rows
    res["save_verdict"] = {name: summary_ms(r["trace_ms"] for r in rows[name]) for name in series}
    for name in series:
        res["save_verdict"][name + ":correct"] = summary_ms(
            r["trace_ms"] for r in rows[name] if r["kind"] == "correct"
        )
    res["problems"] = [
        f"{name} save {r['i']} ({r['kind']}): {x}"
        for name in series
        for r in rows[name]
        for x in r["problems"]
    ]

    la, pl = res["load"], res["phase_load"]
    print(
        f"\nload average: start {la['start']['1m']:.2f}, end {la['end']['1m']:.2f}; during the saves, CPUs busy: "
        f"other processes {pl['others_cpus']:.2f}, app {pl['app_cpus']:.2f}"
    )
    print(f"  {'save → verdicts on screen, app trace, ms':<48} {'p50 / p95 / max':>22}")
    for name in series:
        for key, label in (
            (name, f"{name} (n={len(rows[name])})"),
            (name + ":correct", "  correct files only"),
        ):
            s = res["save_verdict"][key]
            print(f"  {label:<48} {s['p50']} / {s['p95']} / {s['max']}".replace("None", "—"))
    if res["problems"]:
        print("\nproblems:")
        for line in res["problems"][:20]:
            print("  -", line)
    if args.json:
        args.json.write_text(json.dumps(res, indent=1, ensure_ascii=False), encoding="utf-8")
        print(f"results: {args.json}")
    return 1 if res["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
