"""Issue #30: save → verdict on a notebook against the same code in a .py, in the app.

    python tests/benchmarks/bench_notebook.py [--saves 30] [--json out.json]

Two apps run side by side, each in a tmux pane 80×24 of its own: one on attn-lab/lm3_l3.py,
one on `--file lab.ipynb` (LM3-L3's seed notebook, /work/shared/seeds, with the file's code
pasted into its first TODO cell and the two other TODO cells emptied: its markdown, its
self-check, leak() and experiment cells stay). Each save writes the same variant (a correct
file or one of _harness.BROKEN) to both, in turns (which goes first alternates), written as
editors write (temp file + rename, truncate + write). Latency from the app's trace; CPU of
each UI process per save (its threads' run time from /proc/PID/task/*/schedstat, read before
the save and 50 ms after the verdict): the notebook's reading is done there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    BROKEN,
    ROOT,
    SAVERS,
    VARIANTS,
    AppSession,
    LoadWindow,
    compile_tree,
    digest,
    jitter,
    kill_tmux_server,
    learner_text,
    loadavg,
    marks_for,
    require_tools,
    start_tmux_server,
    summary_ms,
)
from bench_latency import startup  # noqa: E402

SEED = Path("/work/shared/seeds/000_cb42ea30ea1af979.txt")
TODO = ("def causal_attention(", "class CausalMultiHeadAttention(", "def expected_shapes(")


class NotebookSession(AppSession):
    @property
    def learner(self) -> Path:
        return self.workdir / "lab.ipynb"


def as_notebook(text: str) -> str:
    data = json.loads(SEED.read_text(encoding="utf-8"))
    first = True
    for cell in data["cells"]:
        if cell["cell_type"] == "code" and "".join(cell["source"]).startswith(TODO):
            cell["source"] = text.splitlines(keepends=True) if first else ["# see above\n"]
            first = False
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def cpu_seconds(pid: int | None) -> float:
    """CPU time of the process's threads, in ns steps (/proc/PID/task/*/schedstat: stat's
    utime and stime count 10 ms ticks, too coarse for a save)."""
    if not pid:
        return 0.0
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return total / 1e9


def one(sess, trace, text: str, kind: str, method: str, timeout: float) -> dict:
    d = digest(text)
    cpu0 = cpu_seconds(sess.ui_pid)
    t0 = SAVERS[method](sess.learner, text)
    ev = trace.wait("verdicts", d, timeout=timeout)
    row = {"kind": kind, "method": method, "trace_ms": None, "problems": []}
    if ev is None:
        row["problems"].append("no verdict in the trace")
        return row
    row["trace_ms"] = round((ev["t"] - t0) * 1000, 2)
    time.sleep(0.05)  # the frame after the verdicts, and the state saved
    row["ui_cpu_ms"] = round((cpu_seconds(sess.ui_pid) - cpu0) * 1000, 1)
    marks = marks_for(ev["statuses"])
    if marks != VARIANTS[kind][1]:
        row["problems"].append(f"verdicts {marks}, expected {VARIANTS[kind][1]}")
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--saves", type=int, default=30, help="saves in each series")
    p.add_argument("--gap", type=float, default=0.3, help="pause after each verdict, s")
    p.add_argument("--jitter", type=float, default=0.2, help="extra random pause, up to, s")
    p.add_argument("--timeout", type=float, default=20.0)
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--python", default=sys.executable, help="the interpreter that runs the app")
    args = p.parse_args(argv)
    if not SEED.exists():
        print(f"no seed notebook at {SEED}", file=sys.stderr)
        return 2
    random.seed(args.seed)
    require_tools()
    compile_tree(ROOT, args.python)
    base = Path(tempfile.mkdtemp(prefix="attn-bench-notebook-"))
    socket = f"attn-bench-{os.getpid()}"
    start_tmux_server(socket)
    res: dict = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "load": {"start": loadavg()}}
    py = AppSession(base / "py", socket, "py", python=args.python)
    nb = NotebookSession(
        base / "nb",
        socket,
        "nb",
        command=[args.python, "-m", "tutor", "--file", "lab.ipynb", "--lesson", "lm3-l3"],
        python=args.python,
    )
    sessions = {"py": py, "notebook": nb}
    rows: dict[str, list] = {name: [] for name in sessions}
    try:
        traces = {}
        for name, sess in sessions.items():
            first = learner_text("correct", f"start-{name}")
            sess.trace_path = sess.workdir / "trace.jsonl"
            traces[name] = sess.trace()
            solution = as_notebook(first) if name == "notebook" else first
            print(f"start-up ({name}) …", flush=True)
            res[f"startup_{name}"] = startup(sess, traces[name], args, solution=solution)
        time.sleep(1.0)
        win = LoadWindow(lambda: py.own_pids() + nb.own_pids())
        for i in range(args.saves):
            kind = "correct" if i % 2 == 0 else BROKEN[(i // 2) % len(BROKEN)]
            method = ("atomic", "truncate")[(i // 2) % 2]
            text = learner_text(kind, f"{i}-{random.random():.9f}")
            order = list(sessions) if i % 2 == 0 else list(sessions)[::-1]
            for name in order:
                body = as_notebook(text) if name == "notebook" else text
                row = one(sessions[name], traces[name], body, kind, method, args.timeout)
                row["i"] = i
                rows[name].append(row)
                time.sleep(jitter(args.gap, args.jitter))
        res["phase_load"] = win.stop()
    finally:
        for sess in sessions.values():
            if sess.ui_pid:
                sess.quit(timeout=10)
        kill_tmux_server(socket)
        res["load"]["end"] = loadavg()
        shutil.rmtree(base, ignore_errors=True)
    res["saves"] = rows
    res["save_verdict"] = {name: summary_ms(r["trace_ms"] for r in rows[name]) for name in rows}
    res["ui_cpu_ms_median"] = {
        name: round(statistics.median(r["ui_cpu_ms"] for r in rows[name] if "ui_cpu_ms" in r), 1)
        for name in rows
    }
    res["problems"] = [
        f"{n} save {r['i']}: {x}" for n in rows for r in rows[n] for x in r["problems"]
    ]
    la, pl = res["load"], res["phase_load"]
    print(
        f"\nload average: start {la['start']['1m']:.2f}, end {la['end']['1m']:.2f}; during the "
        f"saves, CPUs busy: other processes {pl['others_cpus']:.2f}, apps {pl['app_cpus']:.2f}"
    )
    print(f"  {'save → verdicts, app trace, ms':<36} {'p50 / p95 / max':>22}   UI CPU ms/save")
    for name in rows:
        s = res["save_verdict"][name]
        print(
            f"  {name + f' (n={len(rows[name])})':<36} {s['p50']} / {s['p95']} / {s['max']}"
            f"   {res['ui_cpu_ms_median'][name]}"
        )
    ratio = res["save_verdict"]["notebook"]["p50"] / res["save_verdict"]["py"]["p50"]
    res["p50_ratio"] = round(ratio, 3)
    print(f"  notebook / py, p50: {ratio:.2f} (target ≤ 1.20)")
    for line in res["problems"][:20]:
        print("  problem:", line)
    if args.json:
        args.json.write_text(json.dumps(res, indent=1, ensure_ascii=False), encoding="utf-8")
    return 1 if res["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
