"""Where does a save → verdict go? Timestamps from inside every process of the app.

    python tests/benchmarks/profile_breakdown.py [--saves 30] [--json breakdown.json] [--py-spy DIR]

Runs the app as bench_latency.py does (tmux, same saves), but started through
_probe_app.py: the UI, the worker, each spare child and the judge append timestamps
(time.time(), one clock) to a probe file; nothing in tutor/ is edited. For every save
the path to the verdicts on screen is cut at the step that reported last:

  wake      write → the watcher's batch reaches the app's event loop (inotify, debounce)
  read      the batch → the file read (and the settle wait after an empty read)
  submit    read → the run request written to the worker's stdin (UI event loop)
  pipe      → the worker reads it
  dispatch  → the job holding that step handed to a spare child
  child_wake → the child starts that step (a save's checked steps share one child, in order)
  child_run  the learner's file loaded and the step's probe run (CPU time is reported too)
  child_encode its result encoded (json.dumps in the sandbox)
  child_exit → written, and the worker has read the step's frame and sent it to the judge
  jqueue    waiting for the judge (one judge process, the steps queue up)
  judge     the judge's verdict for that step
  report    → the worker writes the step's result to the UI
  ui_recv   → the UI's reader thread has it
  ui_queue  → the app's message handler runs (event loop latency)
  render    after_results: the widgets rebuilt
  paint     → the refresh that puts them on screen (the trace event)

It also prints the CPU time each process spent per save (UI, worker, judge, children),
the UI's screen updates (frames, layouts, render_* calls: count, wall and CPU ms)
between a write and its verdicts on screen, what a spare child costs, and a start-up
timeline (launch → imports → worker ready → first verdicts).

With --py-spy DIR it also records py-spy profiles (collapsed stacks, `--format raw`:
feed them to flamegraph.pl or speedscope) of the UI and of the worker with its
children during the saves (py-spy must be on PATH: `pip install py-spy`).
py-spy's sampling (250 Hz) costs CPU itself. --root DIR profiles another copy of
the app (e.g. one with a proposed change), with the same probes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import contextlib  # noqa: E402

from _harness import (  # noqa: E402
    ROOT,
    AppSession,
    LoadWindow,
    compile_tree,
    kill_tmux_server,
    loadavg,
    proc_cpu_jiffies,
    require_tools,
    start_tmux_server,
    summary_ms,
)
from bench_latency import save_series  # noqa: E402

SEGMENTS = [
    "wake",
    "read",
    "submit",
    "pipe",
    "dispatch",
    "child_wake",
    "child_run",
    "child_encode",
    "child_exit",
    "jqueue",
    "judge",
    "report",
    "ui_recv",
    "ui_queue",
    "render",
    "paint",
]


UI_TIMED = (
    "ui_frame",
    "ui_layout",
    "ui_render_steps",
    "ui_render_progress",
    "ui_render_results",
    "ui_render_fileinfo",
    "ui_render_main",
    "ui_tick",
    "ui_remember",
)


def load_events(path: Path) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    out.sort(key=lambda e: e["t"])
    return out


def first(events, ev, after=0.0, **match):
    for e in events:
        if e["ev"] == ev and e["t"] >= after and all(e.get(k) == v for k, v in match.items()):
            return e
    return None


def last_before(events, ev, before, **match):
    found = None
    for e in events:
        if e["t"] > before:
            break
        if e["ev"] == ev and all(e.get(k) == v for k, v in match.items()):
            found = e
    return found


def breakdown(row: dict, events: list[dict]) -> dict | None:
    d, t0 = row["digest"], row["t_write"]
    if row["trace_ms"] is None:
        return None
    t_end = t0 + row["trace_ms"] / 1000
    read = first(events, "ui_read", t0, d=d)
    batch = read and last_before(events, "ui_batch", read["t"])
    runc = first(events, "ui_run_checks", t0, d=d)
    sent = runc and first(events, "ui_sent", runc["t"])
    handle = first(events, "w_handle", t0, d=d)
    stdin = handle and last_before(events, "w_stdin", handle["t"])
    if not all((read, batch, runc, sent, handle, stdin)):
        return None
    gen = handle["gen"]
    steps = {}
    for rep in (e for e in events if e["ev"] == "w_report" and e.get("d") == d and e["t"] >= t0):
        s = rep["step"]
        spawn = first(events, "w_spawn", t0, d=d, step=s)
        cjob = first(events, "c_job", t0, d=d, step=s)
        crun = first(events, "c_run", t0, d=d, step=s)
        cend = first(events, "c_run_end", t0, d=d, step=s)
        dumped = cend and first(events, "c_dumped", cend["t"], pid=cend["pid"])
        tojudge = first(events, "w_to_judge", t0, d=d, step=s)
        jstart = first(events, "j_start", t0, d=d, step=s)
        jend = first(events, "j_end", t0, d=d, step=s)
        recv = first(events, "ui_recv", rep["t"], type="step", step=s, gen=gen)
        steps[s] = dict(
            spawn=spawn,
            cjob=cjob,
            crun=crun,
            cend=cend,
            dumped=dumped,
            tojudge=tojudge,
            jstart=jstart,
            jend=jend,
            report=rep,
            recv=recv,
        )
    if not steps:
        return None
    crit_step = max(steps, key=lambda s: steps[s]["report"]["t"])
    c = steps[crit_step]
    final = None
    for e in events:
        if e["ev"] == "ui_after_results" and e.get("d") == d and e["running"] == 0 and e["t"] >= t0:
            final = e
            break
    final_end = final and first(events, "ui_after_results_end", final["t"])

    def ms(a, b):
        return (
            None
            if a is None or b is None
            else round(
                (b["t"] if isinstance(b, dict) else b) * 1000  # noqa: E731
                - (a["t"] if isinstance(a, dict) else a) * 1000,
                2,
            )
        )

    seg = {
        "wake": ms(t0, batch),
        "read": ms(batch, read),
        "submit": ms(read, sent),
        "pipe": ms(sent, stdin),
        "dispatch": ms(stdin, c["spawn"]),
        "child_wake": ms(c["spawn"], c["crun"]),
        "child_run": ms(c["crun"], c["cend"]),
        "child_encode": ms(c["cend"], c["dumped"]),
        "child_exit": ms(c["dumped"] or c["cend"], c["tojudge"]),
        "jqueue": ms(c["tojudge"], c["jstart"]) if c["jstart"] else None,
        "judge": ms(c["jstart"], c["jend"]) if c["jstart"] else None,
        "report": ms(c["jend"] or c["tojudge"], c["report"]),
        "ui_recv": ms(c["report"], c["recv"]),
        "ui_queue": ms(c["recv"], final),
        "render": ms(final, final_end),
        "paint": ms(final_end, t_end),
    }
    per_step = {
        s: {
            "child_run": ms(v["crun"], v["cend"]),
            "judge": ms(v["jstart"], v["jend"]),
            "child_run_cpu": v["cend"] and v["cend"].get("cpu"),
            "judge_cpu": v["jend"] and v["jend"].get("cpu"),
            "spawned_after_ms": ms(t0, v["spawn"]),
            "run_after_ms": ms(t0, v["crun"]),
            "judged_after_ms": ms(t0, v["jstart"]),
            "reported_after_ms": ms(t0, v["report"]),
        }
        for s, v in steps.items()
    }
    forks = [e for e in events if e["ev"] in ("w_fork", "w_fork_end") and t0 <= e["t"] <= t_end]
    ui = {}
    for ev in UI_TIMED:
        inside = [e for e in events if e["ev"] == ev and t0 <= e["t"] <= t_end]
        ui[ev] = {
            "n": len(inside),
            "ms": round(sum(e["dur"] for e in inside), 2),
            "cpu_ms": round(sum(e.get("cpu", 0) for e in inside), 2),
        }
    return {
        "i": row["i"],
        "kind": row["kind"],
        "method": row["method"],
        "total": row["trace_ms"],
        "critical_step": crit_step,
        "segments": seg,
        "steps": per_step,
        "ui_work": ui,
        "forks_on_path": sum(e["ev"] == "w_fork" for e in forks),
        "sum_segments": round(sum(v for v in seg.values() if v is not None), 2),
    }


def spare_costs(events: list[dict]) -> dict:
    """CPU of a spare child before its job (fork to ready), and in all (at its result), ms."""
    return {
        "prep_cpu": summary_ms(e["cpu"] for e in events if e["ev"] == "c_ready"),
        "total_cpu": summary_ms(e["cpu"] for e in events if e["ev"] == "c_dumped"),
        "result_bytes": summary_ms(e["size"] for e in events if e["ev"] == "c_dumped"),
    }


STARTUP_MARKS = [
    ("ui_start", "UI: python started (interpreter + site)"),
    ("ui_imported", "UI: tutor + Textual imported"),
    ("ui_mount", "UI: app mounted"),
    ("ui_worker_start", "UI: starts the worker process"),
    ("first_screen", "UI: first screen painted (trace)"),
    ("w_start", "worker: python started"),
    ("w_torch", "worker: torch imported"),
    ("w_checks_loaded", "worker: lessons' checks loaded"),
    ("w_loop", "worker: judge forked (and any warm-up done)"),
    ("w_ready", "worker: ready (spares forked)"),
    ("ui_run_checks", "UI: first run requested"),
    ("c_run", "first child runs the learner's code"),
    ("w_report", "first step verdict reported"),
    ("verdicts", "UI: first verdicts painted (trace)"),
]


def startup_timeline(events: list[dict], t_launch: float, trace) -> list[tuple[str, float | None]]:
    """ms since the launch of each start-up mark (the first of its kind)."""
    out = []
    for ev, label in STARTUP_MARKS:
        if ev in ("first_screen", "verdicts"):
            e = trace.find(ev)
        else:
            e = next((x for x in events if x["ev"] == ev), None)
        out.append((label, None if e is None else round((e["t"] - t_launch) * 1000, 1)))
    return out


def role_cpu(sess) -> dict:
    """CPU jiffies so far: the UI, the worker itself, its ended children (spares), the judge."""
    tree = sess.tree()
    worker_all = proc_cpu_jiffies(tree["worker"], children=True)
    worker_self = proc_cpu_jiffies(tree["worker"])
    judge = proc_cpu_jiffies(tree["judge"])
    return {
        "ui": proc_cpu_jiffies(tree["ui"]),
        "worker": worker_self,
        "judge": judge,
        "children": worker_all - worker_self + sum(proc_cpu_jiffies(p) for p in tree["children"]),
    }


def fork_costs(events: list[dict]) -> dict:
    starts = {}
    costs = []
    for e in events:
        if e["ev"] == "w_fork":
            starts[e["pid"]] = e["t"]
        elif e["ev"] == "w_fork_end" and e["pid"] in starts:
            costs.append((e["t"] - starts.pop(e["pid"])) * 1000)
    return summary_ms(costs)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--saves", type=int, default=30)
    p.add_argument("--gap", type=float, default=0.3)
    p.add_argument("--jitter", type=float, default=0.2)
    p.add_argument("--timeout", type=float, default=20.0)
    p.add_argument("--json", type=Path)
    p.add_argument(
        "--py-spy",
        type=Path,
        dest="py_spy",
        help="folder for py-spy flame graphs of the UI and worker",
    )
    p.add_argument("--keep", action="store_true")
    p.add_argument(
        "--root", type=Path, default=ROOT, help="the attn-tutor tree to run (default: this one)"
    )
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    random.seed(11)
    require_tools()
    compile_tree(args.root, sys.executable)
    base = Path(tempfile.mkdtemp(prefix="attn-prof-"))
    socket = f"attn-prof-{os.getpid()}"
    probe = base / "probe.jsonl"
    start_tmux_server(socket)
    spies = []
    try:
        sess = AppSession(
            base / "app",
            socket,
            "prof",
            root=args.root,
            command=[sys.executable, str(HERE / "_probe_app.py")],
            env={"ATTN_BENCH_PROBE": str(probe)},
        )
        sess.launch()
        trace = sess.trace()
        if trace.wait("verdicts", timeout=args.timeout) is None:
            print("the app gave no first verdicts", file=sys.stderr)
            return 2
        time.sleep(1.0)
        if args.py_spy:
            args.py_spy.mkdir(parents=True, exist_ok=True)
            tree = sess.tree()
            for role in ("ui", "worker"):
                for fmt, ext in (("raw", "txt"),):
                    out = args.py_spy / f"{role}.{ext}"
                    spies.append(
                        subprocess.Popen(
                            [
                                "py-spy",
                                "record",
                                "--pid",
                                str(tree[role]),
                                "--rate",
                                "250",
                                "--format",
                                fmt,
                                "--output",
                                str(out),
                                "--nonblocking",
                            ]
                            + (["--subprocesses"] if role == "worker" else []),
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                        )
                    )
            time.sleep(1.0)
        win = LoadWindow(lambda: sess.own_pids())
        roles0 = role_cpu(sess)
        rows = save_series(sess, trace, args.saves, "prof", None, args)
        time.sleep(0.5)  # the last spares get ready
        roles1 = role_cpu(sess)
        load = win.stop()
        cpu_roles = {
            k: round(
                (roles1[k] - roles0[k]) * 1000 / os.sysconf("SC_CLK_TCK") / max(1, len(rows)), 1
            )
            for k in roles0
        }
        for spy in spies:
            spy.send_signal(2)  # SIGINT: py-spy writes its SVG and ends
        for spy in spies:
            try:
                spy.wait(timeout=30)
            except subprocess.TimeoutExpired:
                spy.kill()
        sess.quit()
    finally:
        kill_tmux_server(socket)
    events = load_events(probe)
    startup = startup_timeline(events, sess.t_launch, trace)
    parts = [b for b in (breakdown(r, events) for r in rows) if b]
    seg_stats = {s: summary_ms(b["segments"][s] for b in parts) for s in SEGMENTS}
    total = summary_ms(b["total"] for b in parts)
    step_stats = defaultdict(dict)
    for s in ("single-head", "leakage", "multi-head", "shapes"):
        for k in (
            "child_run",
            "judge",
            "child_run_cpu",
            "judge_cpu",
            "spawned_after_ms",
            "run_after_ms",
            "judged_after_ms",
            "reported_after_ms",
        ):
            step_stats[s][k] = summary_ms(b["steps"].get(s, {}).get(k) for b in parts)
    crit = defaultdict(int)
    for b in parts:
        crit[b["critical_step"]] += 1
    by_kind = {
        k: summary_ms(b["total"] for b in parts if b["kind"] == k)
        for k in sorted({b["kind"] for b in parts})
    }
    res = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "load": load,
        "loadavg_end": loadavg(),
        "total_ms": total,
        "segments_ms": seg_stats,
        "steps_ms": step_stats,
        "critical_step": dict(crit),
        "by_kind": by_kind,
        "startup_ms": startup,
        "cpu_ms_per_save": cpu_roles,
        "fork_ms": fork_costs(events),
        "spare": spare_costs(events),
        "forks_on_path": summary_ms(b["forks_on_path"] for b in parts),
        "ui_work": {
            ev: {
                "n": summary_ms(b["ui_work"][ev]["n"] for b in parts)["p50"],
                "ms": summary_ms(b["ui_work"][ev]["ms"] for b in parts)["p50"],
                "cpu_ms": summary_ms(b["ui_work"][ev]["cpu_ms"] for b in parts)["p50"],
            }
            for ev in UI_TIMED
        },
        "saves": parts,
    }

    print()
    print(
        f"save → verdict breakdown, {len(parts)} saves   load {load['load_start']['1m']:.2f}→{load['load_end']['1m']:.2f}, "
        f"other processes used {load['others_cpus']:.2f} of {load['ncpu']} CPUs"
    )
    print(
        f"  total (trace)  p50 {total['p50']} ms  p95 {total['p95']} ms;  CPU of the app's processes "
        f"{load['app_cpu_ms'] / max(1, len(rows)):.0f} ms per save (waits between saves included)"
    )
    print(
        "  CPU ms per save by process: "
        + ", ".join(f"{k} {v}" for k, v in cpu_roles.items())
        + "  (children: the spare children, from their fork to their exit)"
    )
    print(f"  {'segment (critical path)':<26}{'p50':>8}{'p95':>8}{'mean':>8}  share of mean")
    mean_total = sum((seg_stats[s]["mean"] or 0) for s in SEGMENTS) or 1
    for s in SEGMENTS:
        st = seg_stats[s]
        print(
            f"  {s:<26}{st['p50'] or 0:8.1f}{st['p95'] or 0:8.1f}{st['mean'] or 0:8.1f}  {100 * (st['mean'] or 0) / mean_total:5.1f}%"
        )
    print("  per step (all four, not only the critical one):")
    for s, v in step_stats.items():
        print(
            f"    {s:<12} child run p50 {v['child_run']['p50']} ms (CPU {v['child_run_cpu']['p50']}), "
            f"judge p50 {v['judge']['p50']} ms (CPU {v['judge_cpu']['p50']}), "
            f"job handed out at +{v['spawned_after_ms']['p50']} ms, run from +{v['run_after_ms']['p50']}, "
            f"judged from +{v['judged_after_ms']['p50']}, reported at +{v['reported_after_ms']['p50']} ms"
        )
    print(
        f"  critical step: {dict(crit)}; forks inside a save window p50 {res['forks_on_path']['p50']}; "
        f"a fork_spare takes p50 {res['fork_ms']['p50']} ms"
    )
    print(
        "  UI work between the write and the verdicts on screen (per save, p50): "
        + ", ".join(
            f"{ev[3:]} {res['ui_work'][ev]['n']}× {res['ui_work'][ev]['ms']} ms (CPU {res['ui_work'][ev]['cpu_ms']})"
            for ev in UI_TIMED
        )
    )
    sp = res["spare"]
    print(
        f"  a spare child: CPU before its job p50 {sp['prep_cpu']['p50']} ms, CPU up to its result p50 "
        f"{sp['total_cpu']['p50']} ms; result message p50 {sp['result_bytes']['p50']} bytes, max {sp['result_bytes']['max']}"
    )
    print("  start-up, ms after the launch:")
    for label, ms in startup:
        print(f"    {ms if ms is not None else '—':>8}  {label}")
    print("  by file kind:", ", ".join(f"{k} {v['p50']}" for k, v in by_kind.items()))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1), encoding="utf-8")
        print(f"results: {args.json}")
    if args.keep:
        print("probe events:", probe)
    else:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
