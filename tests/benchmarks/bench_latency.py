"""Issue #7: how long from a save to the verdicts on screen, against a cold `python -m pytest`.

    python tests/benchmarks/bench_latency.py [--json results.json] [--saves 40] [--quick]

One run measures, on this machine:
  1. save → verdict latency of the real app (`python -m tutor` in a tmux pane, 80×24), over
     --saves saves alternating a correct file and a broken one (five kinds of mistakes),
     saved the way editors save (temp file + rename, and truncate + write). Each save is
     measured alone (--gap s + up to --jitter s after the previous verdict). Measured two ways:
       trace: the app's own ATTN_TUTOR_TRACE "verdicts" event for this content's digest
              (written after the screen refresh that shows them), minus the write time;
       tmux:  the pane itself (`capture-pane -p` in a loop) until the step marks (✓/✗/○ in
              the left column) settle on new values. Phase "tmux" sends capture-pane through
              one tmux control-mode client; phase "tmux-spawn" starts `tmux capture-pane`
              per look (as a shell loop would). Their per-look cost is reported as overhead.
     plus a burst: 5 saves 20 ms apart, where only the last content's verdicts count.
     Also from the trace: the "current-verdict" event, after the frame that shows the verdict of
     the step on screen (the learner's), which may come before the other steps'.
  1b. the floor app (_floor_app.py, issue #31; --no-floor skips it): a trivial Textual app that
     watches the file as the app does and redraws one widget with what it read, in an 80×24 pane
     of its own tmux server. It gets the same saves as the app, in turns (app, floor, app, …) in
     the trace and tmux phases, measured the same two ways; the report gives the app's p50 over
     the floor's, and the CPU per save of each one's processes (its tmux server's included).
  2. the cold approach: the seed notebook's four self-checks as a pytest file
     (cold_selfchecks_lm3.py) against the same kind of files, `python -m pytest -q FILE`
     per save, and the ratio cold p50 / app p50.
  3. start-up: launch → first painted screen, launch → first verdicts (a new folder with
     the starter; then a folder with an existing correct solution).
  4. memory: peak RSS (VmHWM) of the UI, the worker, the judge and the largest child,
     sampled every 100 ms over the whole run, and PSS of the tree when idle (the floor's too).

Machine load (loadavg, and the CPU share used by other processes during each phase) is
reported next to the numbers: other jobs on a 2-core machine move them a lot.
The tmux servers are our own (-L attn-bench-PID, and attn-bench-PID-floor), killed at the end.
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
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    BROKEN,
    HERE,
    ROOT,
    SAVERS,
    VARIANTS,
    AppSession,
    ControlCapture,
    LoadWindow,
    MemorySampler,
    SpawnCapture,
    TraceTail,
    capture_cost_ms,
    compile_tree,
    digest,
    jitter,
    kill_tmux_server,
    learner_text,
    loadavg,
    marks_for,
    require_tools,
    settled,
    start_tmux_server,
    step_marks,
    summary_ms,
)

TARGETS = {
    "save_p50_ms": 60,
    "save_p95_ms": 150,
    "ratio_min": 40,
    "first_screen_ms": 1000,
    "first_verdict_ms": 4000,
    "ui_rss_mb": 120,
    # issue #31: against the floor app in the same run (p50 / the floor's p50), and per learner
    "floor_ratio_current": 2.0,
    "floor_ratio_every": 3.0,
    "cpu_ms_per_save": 80,
    "idle_pss_mb": 250,
}


# ------------------------------------------------------------------ saves

LOOK_PAUSE = [0.0]  # s between two looks at the pane (--look-pause)


def look_until(capture, seen, timeout: float, pause: float | None = None):
    """Look at the pane until seen(lines): (time.time() then, the lines, looks), or None, None."""
    deadline = time.monotonic() + timeout
    looks = 0
    pause = LOOK_PAUSE[0] if pause is None else pause
    while time.monotonic() < deadline:
        lines = capture.capture()
        now = time.time()
        looks += 1
        if seen(lines):
            return now, lines, looks
        if pause:
            time.sleep(pause)
    return None, None, looks


def wait_screen(capture, prev: str | None, timeout: float, pause: float | None = None):
    """Look at the pane until the step marks settle on values other than `prev`."""

    def new_marks(lines: list[str]) -> bool:
        marks = step_marks(lines)
        return settled(marks) and marks != prev

    now, lines, looks = look_until(capture, new_marks, timeout, pause)
    return now, lines and step_marks(lines), looks


def screen_marks(capture) -> str | None:
    return step_marks(capture.capture()) if capture else None


def one_save(
    sess, trace, kind: str, method: str, uid: str, capture, timeout: float, prints: int = 0
) -> dict:
    prev = screen_marks(capture)
    if capture is not None and not settled(prev):  # still showing a run: let it finish
        time.sleep(0.5)
        prev = screen_marks(capture)
    if (
        capture is not None and VARIANTS[kind][1] == prev
    ):  # the pane could not tell this save happened
        kind = next(k for k in ("correct",) + BROKEN if VARIANTS[k][1] != prev)
    text = learner_text(kind, uid, prints)
    d = digest(text)
    t0 = SAVERS[method](sess.learner, text)
    row = {
        "kind": kind,
        "method": method,
        "digest": d,
        "t_write": t0,
        "expected": VARIANTS[kind][1],
    }
    if capture is not None:
        t_screen, marks, looks = wait_screen(capture, prev, timeout)
        row.update(
            screen_ms=None if t_screen is None else round((t_screen - t0) * 1000, 2),
            screen_marks=marks,
            looks=looks,
        )
    ev = trace.wait("verdicts", d, timeout=timeout if capture is None else 5.0)
    if ev is not None:
        row["trace_ms"] = round((ev["t"] - t0) * 1000, 2)
        row["marks"] = marks_for(ev["statuses"])
        row["statuses"] = ev["statuses"]
    else:
        row["trace_ms"] = None
        row["marks"] = None
    # Written after the frame that shows the current step's verdict, so before "verdicts" or with it.
    current = trace.find("current-verdict", d)
    row["current_ms"] = None if current is None else round((current["t"] - t0) * 1000, 2)
    problems = []
    if row["marks"] is not None and row["marks"] != row["expected"]:
        problems.append(f"verdicts {row['marks']} but this variant should give {row['expected']}")
    if (
        capture is not None
        and row.get("screen_marks")
        and row["marks"]
        and row["screen_marks"] != row["marks"]
    ):
        problems.append(f"screen showed {row['screen_marks']}, trace says {row['marks']}")
    if row["trace_ms"] is None:
        problems.append("no verdicts event for this content")
    if capture is not None and row.get("screen_ms") is None:
        problems.append("the pane never showed the new marks")
    row["problems"] = problems
    return row


def save_series(
    sess, trace, n: int, label: str, capture, args, floor=None, floor_capture=None
) -> list[dict]:
    """n saves to the app; with `floor`, each is followed by the same save to the floor app
    (rows in floor.rows[label]), looked at through floor_capture when capture is given."""
    rows = []
    for i in range(n):
        kind = "correct" if i % 2 == 0 else BROKEN[(i // 2) % len(BROKEN)]
        method = ("atomic", "truncate")[(i // 2) % 2]
        row = one_save(
            sess, trace, kind, method, f"{label}-{i}-{random.random():.9f}", capture, args.timeout
        )
        row["i"] = i
        rows.append(row)
        if args.verbose:
            print(
                f"  {label} {i:3d} {row['kind']:13s} {method:8s} trace {row['trace_ms']} ms"
                + (f"  screen {row.get('screen_ms')} ms" if capture else "")
                + f"  current {row['current_ms']} ms  {row['marks']} {row['problems'] or ''}",
                flush=True,
            )
        time.sleep(jitter(args.gap, args.jitter))
        if floor is None:
            continue
        frow = floor_save(
            floor,
            row["kind"],  # the kind the app got (one_save may have changed it), the same size
            method,
            f"{label}-{i}-floor-{random.random():.9f}",
            floor_capture if capture is not None else None,
            args.timeout,
        )
        frow["i"] = i
        floor.rows.setdefault(label, []).append(frow)
        if args.verbose:
            print(
                f"  {label} {i:3d} {'floor':13s} {method:8s} trace {frow['trace_ms']} ms"
                + (f"  screen {frow.get('screen_ms')} ms" if capture else "")
                + f"  {frow['problems'] or ''}",
                flush=True,
            )
        time.sleep(jitter(args.gap, args.jitter))
    return rows


# ------------------------------------------------------------------ the floor app


@dataclass
class Floor:
    """The floor app (_floor_app.py) in a tmux server of its own, so that its CPU (tmux's too)
    is measured as the app's is."""

    sess: AppSession
    trace: TraceTail
    tmux_pid: int
    rows: dict[str, list[dict]] = field(default_factory=dict)

    def own_pids(self) -> list[int]:
        return self.sess.own_pids() + [self.tmux_pid]


def start_floor(base: Path, socket: str, args) -> Floor:
    """Launch the floor app on a correct file; returns once it has shown it."""
    start_tmux_server(socket)
    sess = AppSession(base / "floor", socket, "floor", root=args.root, python=args.python)
    sess.command = [args.python, str(HERE / "_floor_app.py"), str(sess.learner)]
    sess.learner.parent.mkdir(parents=True)
    sess.learner.write_text(learner_text("correct", "floor-start"), encoding="utf-8")
    sess.launch()
    trace = sess.trace()
    if trace.wait("verdicts", timeout=args.timeout) is None:
        raise RuntimeError(f"the floor app showed nothing in {args.timeout} s")
    return Floor(sess, trace, server_pid(socket))


def floor_save(floor: Floor, kind: str, method: str, uid: str, capture, timeout: float) -> dict:
    """One save to the floor app, as one_save makes it to the app: on screen when the pane
    shows this content's digest (the floor draws nothing else that changes)."""
    text = learner_text(kind, uid)
    d = digest(text)
    t0 = SAVERS[method](floor.sess.learner, text)
    row: dict = {"kind": kind, "method": method, "digest": d, "t_write": t0}
    problems = []
    if capture is not None:
        t_screen, _, looks = look_until(capture, lambda lines: any(d in x for x in lines), timeout)
        row.update(
            screen_ms=None if t_screen is None else round((t_screen - t0) * 1000, 2), looks=looks
        )
        if t_screen is None:
            problems.append("the pane never showed the new content")
    ev = floor.trace.wait("verdicts", d, timeout=timeout if capture is None else 5.0)
    row["trace_ms"] = None if ev is None else round((ev["t"] - t0) * 1000, 2)
    if ev is None:
        problems.append("no verdicts event for this content")
    row["problems"] = problems
    return row


def server_pid(socket: str) -> int:
    out = subprocess.run(
        ["tmux", "-L", socket, "display-message", "-p", "#{pid}"], capture_output=True, text=True
    )
    return int(out.stdout.strip() or 0)


def stop_windows(win: LoadWindow, floor_win: LoadWindow | None) -> dict:
    """The phase's load; the floor's CPU apart from the other processes'."""
    out = win.stop()
    if floor_win is not None:
        f = floor_win.stop()
        out["floor_cpu_ms"], out["floor_cpus"] = f["app_cpu_ms"], f["app_cpus"]
        out["others_cpus"] = round(max(0.0, out["others_cpus"] - f["app_cpus"]), 2)
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def bursts(sess, trace, n: int, capture, args, size: int = 5, spacing: float = 0.02) -> list[dict]:
    rows = []
    last_marks = None
    for b in range(n):
        prev = screen_marks(capture) if capture else last_marks
        # The last content must end on other marks than the screen shows now (so the pane can tell).
        last_kind = BROKEN[b % len(BROKEN)] if prev == "✓✓✓✓" else "correct"
        kinds = [random.choice(("correct",) + BROKEN) for _ in range(size - 1)] + [last_kind]
        digests = []
        t_first = None
        for k, kind in enumerate(kinds):
            text = learner_text(kind, f"burst-{b}-{k}-{random.random():.9f}")
            digests.append(digest(text))
            t = SAVERS[("atomic", "truncate")[k % 2]](sess.learner, text)
            t_first = t_first or t
            if k < size - 1:
                time.sleep(spacing)
        t_last = t
        row = {
            "kinds": kinds,
            "t_first": t_first,
            "t_last": t_last,
            "expected": VARIANTS[last_kind][1],
        }
        if capture is not None:
            t_screen, marks, looks = wait_screen(capture, prev, args.timeout)
            row.update(
                screen_ms=None if t_screen is None else round((t_screen - t_last) * 1000, 2),
                screen_marks=marks,
            )
        ev = trace.wait("verdicts", digests[-1], timeout=args.timeout)
        row["trace_ms"] = None if ev is None else round((ev["t"] - t_last) * 1000, 2)
        row["marks"] = None if ev is None else marks_for(ev["statuses"])
        time.sleep(0.5)  # would an older content's verdicts still come after the last one's?
        trace.poll()
        earlier = [
            e
            for e in trace.events
            if e.get("event") == "verdicts" and e.get("digest") in digests[:-1]
        ]
        row["earlier_contents_rendered"] = len({e["digest"] for e in earlier})
        row["stale_after_last"] = bool(ev) and any(e["t"] > ev["t"] for e in earlier)
        final = [e for e in trace.events if e.get("event") == "verdicts" and e["t"] >= t_first]
        row["last_event_is_last_content"] = bool(final) and final[-1].get("digest") == digests[-1]
        last_marks = row["marks"]
        rows.append(row)
        if args.verbose:
            print(
                f"  burst {b} {kinds} trace {row['trace_ms']} ms screen {row.get('screen_ms')} ms "
                f"earlier rendered {row['earlier_contents_rendered']} stale {row['stale_after_last']}",
                flush=True,
            )
        time.sleep(jitter(args.gap, args.jitter))
    return rows


# ------------------------------------------------------------------ start-up


def startup(sess, trace, args, solution: str | None = None) -> dict:
    """Launch and time the first screen and the first verdicts; leaves the app running."""
    if solution is not None:
        sess.learner.parent.mkdir(parents=True, exist_ok=True)
        sess.learner.write_text(solution, encoding="utf-8")
    sess.launch()
    out = {"t_launch": sess.t_launch, "with_solution": solution is not None}
    cap = ControlCapture(sess.tmux, sess.name)
    t_title = None
    t_marks = None
    expected = "✓✓✓✓" if solution is not None else None
    deadline = time.monotonic() + args.timeout
    try:
        while time.monotonic() < deadline:
            lines = cap.capture()
            now = time.time()
            if t_title is None and lines and "attn-tutor" in lines[0]:
                t_title = now
            if expected and t_marks is None and step_marks(lines) == expected:
                t_marks = now
            if t_title and (t_marks or not expected) and trace.find("verdicts"):
                break
            trace.poll()
            time.sleep(0.002)  # gentle: start-up is CPU-bound on both cores
    finally:
        cap.close()
    first_screen = trace.wait("first_screen", timeout=max(0.1, deadline - time.monotonic()))
    first_verdict = trace.wait("verdicts", timeout=max(0.1, deadline - time.monotonic()))
    ms = lambda t: None if t is None else round((t - sess.t_launch) * 1000, 1)  # noqa: E731
    out.update(
        first_screen_ms=ms(first_screen and first_screen["t"]),
        first_verdict_ms=ms(first_verdict and first_verdict["t"]),
        screen_title_ms=ms(t_title),
        screen_verdict_ms=ms(t_marks),
        first_marks=first_verdict and marks_for(first_verdict["statuses"]),
    )
    return out


# ------------------------------------------------------------------ the cold approach


def cold_runs(base: Path, n: int, args) -> dict:
    folder = base / "cold"
    folder.mkdir()
    test_file = folder / "test_selfchecks_lm3.py"
    shutil.copy(HERE / "cold_selfchecks_lm3.py", test_file)
    learner = folder / "lm3_l3.py"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    rows = []
    for i in range(n):
        kind = "correct" if i % 2 == 0 else BROKEN[(i // 2) % len(BROKEN)]
        t0 = SAVERS[("atomic", "truncate")[(i // 2) % 2]](learner, learner_text(kind, f"cold-{i}"))
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", test_file.name],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
        )
        ms = (time.time() - t0) * 1000
        tail = (
            proc.stdout.strip().splitlines()[-1:]
            if proc.stdout.strip()
            else [proc.stderr.strip()[-200:]]
        )
        rows.append(
            {
                "kind": kind,
                "ms": round(ms, 1),
                "rc": proc.returncode,
                "summary": tail[0] if tail else "",
            }
        )
        if args.verbose:
            print(
                f"  cold {i} {kind:13s} {ms:7.0f} ms rc={proc.returncode} {rows[-1]['summary']}",
                flush=True,
            )
        time.sleep(jitter(args.gap, args.jitter))
    torch_import = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], env=env, check=True)
        torch_import.append((time.perf_counter() - t) * 1000)
    wrong_rc = [r for r in rows if (r["rc"] == 0) != (r["kind"] == "correct")]
    return {
        "runs": rows,
        "ms": summary_ms([r["ms"] for r in rows]),
        "python_import_torch_ms": summary_ms(torch_import),
        "problems": [f"{r['kind']}: pytest exit {r['rc']}" for r in wrong_rc],
    }


# ------------------------------------------------------------------ report


def fmt(v, unit="", digits=0):
    if v is None:
        return "—"
    return f"{v:.{digits}f}{unit}"


def print_table(res: dict) -> None:
    def line(label, value, target="", verdict=""):
        print(f"  {label:<46} {value:>24}  {target:<11} {verdict}")

    def mark(ok):
        return "" if ok is None else ("ok" if ok else "MISSED")

    def three(s):
        return f"{fmt(s['p50'])} / {fmt(s['p95'])} / {fmt(s['max'])}"

    print()
    print(
        f"attn-tutor benchmarks   {res['when']}   {res['machine']['ncpu']} CPUs   python {res['machine']['python']}"
        f"   app run by {res['machine'].get('app_python', sys.executable)}"
    )
    la = res["load"]
    print(f"load average: start {la['start']['1m']:.2f}, end {la['end']['1m']:.2f}")
    for k, v in res["phase_load"].items():
        per = (
            f", app CPU {v['app_cpu_ms_per_save']:.0f} ms/save"
            if "app_cpu_ms_per_save" in v
            else ""
        )
        floor = f", floor {v['floor_cpus']:.2f}" if "floor_cpus" in v else ""
        if "floor_cpu_ms_per_save" in v:
            per += f", floor {v['floor_cpu_ms_per_save']:.0f}"
        print(
            f"  phase {k:<11} {v['seconds']:6.1f} s  load {v['load_start']['1m']:.2f}→{v['load_end']['1m']:.2f}  "
            f"CPUs busy: other processes {v['others_cpus']:.2f}, app {v['app_cpus']:.2f}{floor}, bench {v['bench_cpus']:.2f}{per}"
        )
    print()
    print(f"  {'measure':<46} {'p50 / p95 / max':>24}  {'target':<11}")
    t = res["targets_check"]
    titles = (
        ("trace", "save→verdict ms, app trace"),
        ("tmux", "save→verdict ms, tmux (control client)"),
        ("tmux-spawn", "save→verdict ms, tmux (capture-pane procs)"),
    )
    for key, title in titles:
        s = res["save_verdict"].get(key)
        if not s:
            continue
        if key == "trace":
            line(
                f"{title} n={s['n']}",
                three(s),
                "≤60 / ≤150",
                mark(t.get("save_p50") and t.get("save_p95")),
            )
            c = res["save_verdict"]["current"]
            line(f"  the current step's verdict only n={c['n']}", three(c))
        else:
            line(f"{title} n={s['n']}", three(s))
            line("  app trace, same saves", three(res["save_verdict"]["trace-in-" + key]))
            o = res["tmux_overhead"][key]
            line(
                "  one look at the pane / screen − trace, ms",
                f"{fmt(o['look_ms']['p50'], digits=2)} / {fmt(o['screen_minus_trace_ms']['p50'], digits=1)}",
            )
    for kind in ("correct", "syntax"):
        s = res["save_verdict"].get("trace:" + kind)
        if s and s["n"]:
            line(f"  trace, {kind} files only n={s['n']}", three(s))
    if "floor" in res:
        f, fr = res["floor"]["save_shown"], res["floor_ratio"]
        every = [t[k] for k in ("floor_trace", "floor_tmux") if k in t]
        line(f"floor app: save→shown ms, trace n={f['trace']['n']}", three(f["trace"]))
        if "tmux" in f:
            line(f"floor app: save→shown ms, tmux n={f['tmux']['n']}", three(f["tmux"]))
        line(
            "app p50 / floor p50, every step: trace; tmux",
            f"{fmt(fr['trace'], '×', 2)}; {fmt(fr['tmux'], '×', 2)}",
            "≤3×",
            mark(all(every) if every else None),
        )
        line(
            "app p50 / floor p50, the current step: trace",
            fmt(fr["current"], "×", 2) if fr["current"] else "— (no current-verdict event)",
            "≤2×",
            mark(t.get("floor_current")),
        )
    b = res["burst"]["trace"]
    line(f"burst of 5 saves 20 ms apart: last → verdict n={b['n']}", three(b))
    line(
        "  older verdicts shown after the last's",
        f"{res['burst']['stale_after_last']} of {res['burst']['n']} bursts",
    )
    c = res["cold"]["ms"]
    line(f"cold `python -m pytest -q` per save n={c['n']}", three(c))
    line("  `python -c 'import torch'` alone", fmt(res["cold"]["python_import_torch_ms"]["p50"]))
    line(
        "ratio cold p50 / app p50 (trace; tmux)",
        f"{fmt(res['ratio']['trace'], '×', 1)}; {fmt(res['ratio']['tmux'], '×', 1)}",
        "≥40×",
        mark(t.get("ratio")),
    )
    s0 = res["startup"]
    line(
        "first screen ms (trace), each launch",
        " ".join(fmt(r["first_screen_ms"]) for r in s0),
        "≤1000",
        mark(t.get("first_screen")),
    )
    line("  pane shows the title, ms", " ".join(fmt(r["screen_title_ms"]) for r in s0))
    line(
        "first verdict ms (trace), each launch",
        " ".join(fmt(r["first_verdict_ms"]) for r in s0),
        "≤4000",
        mark(t.get("first_verdict")),
    )
    line(
        "  pane shows them (existing solution), ms",
        " ".join(fmt(r["screen_verdict_ms"]) for r in s0[1:]),
    )
    m = res["memory"]
    line(
        "peak RSS (VmHWM) MB: UI", fmt(m["peak_mb"]["ui"], digits=1), "≤120", mark(t.get("ui_rss"))
    )
    line(
        "peak RSS MB: worker / judge / largest child",
        f"{fmt(m['peak_mb']['worker'], digits=1)} / {fmt(m['peak_mb']['judge'], digits=1)} / {fmt(m['peak_mb']['children'], digits=1)}",
    )
    line(
        "PSS MB of the whole tree when idle" + ("; floor app" if "floor_idle" in m else ""),
        fmt(m["idle"].get("total_pss_mb"), digits=1)
        + (f"; {fmt(m['floor_idle']['total_pss_mb'], digits=1)}" if "floor_idle" in m else ""),
        "≤250",
        mark(t.get("idle_pss")),
    )
    pl = res["phase_load"]
    for key in ("trace", "tmux"):
        if key in pl:
            line(
                f"CPU ms per save, {key} phase: app"
                + ("; floor" if "floor_cpu_ms_per_save" in pl[key] else ""),
                fmt(pl[key]["app_cpu_ms_per_save"])
                + (
                    f"; {fmt(pl[key]['floor_cpu_ms_per_save'])}"
                    if "floor_cpu_ms_per_save" in pl[key]  # not in a phase of no saves
                    else ""
                ),
                "≤80" if key == "trace" else "",
                mark(t.get("cpu_per_save")) if key == "trace" else "",
            )
    if res["problems"]:
        print("\nproblems:")
        for p in res["problems"][:20]:
            print("  -", p)
    print()


# ------------------------------------------------------------------ main


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--saves", type=int, default=40, help="saves measured via the trace (≥30)")
    p.add_argument(
        "--tmux-saves", type=int, default=40, help="saves measured via a tmux control client"
    )
    p.add_argument(
        "--spawn-saves",
        type=int,
        default=12,
        help="saves measured via `tmux capture-pane` processes",
    )
    p.add_argument("--bursts", type=int, default=6)
    p.add_argument("--cold", type=int, default=6, help="cold pytest runs")
    p.add_argument(
        "--startups", type=int, default=3, help="launches timed (the first in a new folder)"
    )
    p.add_argument("--gap", type=float, default=0.3, help="pause after each verdict, s")
    p.add_argument("--jitter", type=float, default=0.2, help="extra random pause, up to, s")
    p.add_argument("--timeout", type=float, default=20.0)
    p.add_argument(
        "--look-pause",
        type=float,
        default=0.0,
        help="s between two looks at the pane (default 0: as fast as possible; every look costs the "
        "tmux server CPU, ~200 ms per save at full speed here, which slows the app on 2 cores)",
    )
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--keep", action="store_true", help="keep the temporary folders")
    p.add_argument("--quick", action="store_true", help="fewer of everything (a smoke run)")
    p.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--root", type=Path, default=ROOT, help="the attn-tutor tree to run (default: this one)"
    )
    p.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter that runs the app, e.g. a venv's made as the README says (default: this "
        "one); the cold pytest runs always use this one",
    )
    p.add_argument(
        "--no-floor",
        action="store_true",
        help="no floor app (_floor_app.py) getting the same saves in turns with the app",
    )
    p.add_argument(
        "--step",
        help="the step on screen during the saves (default: the lesson's first, single-head); "
        "its verdict is 'the current step's'",
    )
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        args.saves, args.tmux_saves, args.spawn_saves, args.bursts, args.cold, args.startups = (
            10,
            6,
            4,
            2,
            2,
            2,
        )
    random.seed(args.seed)
    LOOK_PAUSE[0] = args.look_pause
    require_tools()

    compile_tree(args.root, args.python)
    base = Path(tempfile.mkdtemp(prefix="attn-bench-"))
    socket = f"attn-bench-{os.getpid()}"
    start_tmux_server(socket)
    res: dict = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "root": str(args.root),
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": {
            "ncpu": os.cpu_count(),
            "python": sys.version.split()[0],
            "uname": os.uname().release,
            "app_python": args.python,
        },
        "load": {"start": loadavg()},
        "phase_load": {},
        "problems": [],
    }
    sessions = []
    floor = None
    floor_socket = socket + "-floor"
    try:
        tmux_pid = server_pid(socket)

        # --- the main session: start-up, saves, bursts, memory
        # --step: the learner looks at another step than the first (`attn-tutor --step`).
        command = [args.python, "-m", "tutor", "--step", args.step] if args.step else None
        sess = AppSession(
            base / "app-0", socket, "app0", root=args.root, python=args.python, command=command
        )
        sessions.append(sess)
        trace = None
        sess.trace_path = sess.workdir / "trace.jsonl"
        trace = sess.trace()
        print("start-up (new folder) …", flush=True)
        res["startup"] = [startup(sess, trace, args)]
        sampler = MemorySampler(sess.ui_pid)
        sampler.start()
        own = lambda: sess.own_pids() + [tmux_pid]  # noqa: E731
        all_rows: dict[str, list] = {}
        if not args.no_floor:
            print("the floor app …", flush=True)
            floor = start_floor(base, floor_socket, args)
        floor_window = lambda: floor and LoadWindow(floor.own_pids)  # noqa: E731
        with_floor = " (and as many to the floor app, in turns)" if floor else ""

        print(f"{args.saves} saves, trace only{with_floor} …", flush=True)
        time.sleep(0.5)
        win, fwin = LoadWindow(own), floor_window()
        all_rows["trace"] = save_series(sess, trace, args.saves, "trace", None, args, floor)
        res["phase_load"]["trace"] = stop_windows(win, fwin)
        print(f"{args.bursts} bursts …", flush=True)
        win = LoadWindow(own)
        burst_rows = bursts(sess, trace, args.bursts, None, args)
        res["phase_load"]["burst"] = win.stop()

        print(f"{args.tmux_saves} saves, tmux control-mode looks{with_floor} …", flush=True)
        cap = ControlCapture(sess.tmux, sess.name)
        floor_cap = floor and ControlCapture(floor.sess.tmux, floor.sess.name)
        win, fwin = LoadWindow(own), floor_window()
        all_rows["tmux"] = save_series(
            sess, trace, args.tmux_saves, "tmux", cap, args, floor, floor_cap
        )
        res["phase_load"]["tmux"] = stop_windows(win, fwin)
        look_control = capture_cost_ms(cap)
        cap.close()
        if floor_cap:
            floor_cap.close()

        spawn = SpawnCapture(sess.tmux, sess.name)
        if args.spawn_saves:
            print(f"{args.spawn_saves} saves, tmux capture-pane processes …", flush=True)
            win = LoadWindow(own)
            all_rows["tmux-spawn"] = save_series(
                sess, trace, args.spawn_saves, "spawn", spawn, args
            )
            res["phase_load"]["tmux-spawn"] = win.stop()
        look_spawn = capture_cost_ms(spawn)

        time.sleep(1.0)
        sampler.sample()
        sampler.stop()
        idle = sampler.snapshot()
        res["memory"] = {
            "peak_mb": {k: round(v / 1024, 1) for k, v in sampler.peak_kb.items()},
            "idle": idle,
            "samples": sampler.samples,
            "judge_pids": sorted(sampler.judges),
            "worker_pids": sorted(sampler.workers),
            "children_seen": len(sampler.children_seen),
        }
        if floor:
            res["memory"]["floor_idle"] = MemorySampler(floor.sess.ui_pid).snapshot()
            floor.sess.quit()
        res["quit"] = [sess.quit()]

        # --- more launches: a folder that already holds a correct solution
        for k in range(1, args.startups):
            s2 = AppSession(
                base / f"app-{k}", socket, f"app{k}", root=args.root, python=args.python
            )
            sessions.append(s2)
            s2.trace_path = s2.workdir / "trace.jsonl"
            print(f"start-up {k + 1} (existing solution) …", flush=True)
            time.sleep(1.0)
            res["startup"].append(
                startup(s2, s2.trace(), args, solution=learner_text("correct", f"startup-{k}"))
            )
            s2.quit()

        print(f"{args.cold} cold pytest runs …", flush=True)
        win = LoadWindow(lambda: [])
        res["cold"] = cold_runs(base, args.cold, args)
        res["phase_load"]["cold"] = win.stop()
        res["problems"] += res["cold"]["problems"]

        # --- numbers
        res["saves"] = all_rows
        res["bursts"] = burst_rows
        sv = {"trace": summary_ms(r["trace_ms"] for r in all_rows["trace"])}
        overhead = {}
        for key, look in (("tmux", look_control), ("tmux-spawn", look_spawn)):
            rows = all_rows.get(key)
            if not rows:
                continue
            sv[key] = summary_ms(r.get("screen_ms") for r in rows)
            sv["trace-in-" + key] = summary_ms(r["trace_ms"] for r in rows)
            diff = [
                r["screen_ms"] - r["trace_ms"]
                for r in rows
                if r.get("screen_ms") is not None and r["trace_ms"] is not None
            ]
            overhead[key] = {
                "look_ms": look,
                "screen_minus_trace_ms": summary_ms(diff),
                "looks_per_save": summary_ms(r.get("looks") for r in rows),
            }
        sv["current"] = summary_ms(r["current_ms"] for r in all_rows["trace"])
        for kind in ("correct",) + BROKEN:
            sv["trace:" + kind] = summary_ms(
                r["trace_ms"] for r in all_rows["trace"] if r["kind"] == kind
            )
        for method in SAVERS:
            sv["trace:" + method] = summary_ms(
                r["trace_ms"] for r in all_rows["trace"] if r["method"] == method
            )
        res["save_verdict"] = sv
        for (
            key,
            rows,
        ) in (
            all_rows.items()
        ):  # CPU time of the app's processes (and tmux) per save, waits included
            res["phase_load"][key]["app_cpu_ms_per_save"] = round(
                res["phase_load"][key]["app_cpu_ms"] / max(1, len(rows)), 1
            )
        if floor:  # the same figures for the floor app's saves, and the app's p50 over the floor's
            fsv = {"trace": summary_ms(r["trace_ms"] for r in floor.rows["trace"])}
            if floor.rows.get("tmux"):
                fsv["tmux"] = summary_ms(r.get("screen_ms") for r in floor.rows["tmux"])
                fsv["trace-in-tmux"] = summary_ms(r["trace_ms"] for r in floor.rows["tmux"])
            for key, rows in floor.rows.items():
                res["phase_load"][key]["floor_cpu_ms_per_save"] = round(
                    res["phase_load"][key]["floor_cpu_ms"] / max(1, len(rows)), 1
                )
                res["problems"] += [
                    f"floor {key} save {r['i']} ({r['kind']}, {r['method']}): {x}"
                    for r in rows
                    for x in r["problems"]
                ]
            res["floor"] = {"save_shown": fsv, "saves": floor.rows}
            res["floor_ratio"] = {
                "current": ratio(sv["current"]["p50"], fsv["trace"]["p50"]),
                "trace": ratio(sv["trace"]["p50"], fsv["trace"]["p50"]),
                "tmux": ratio(sv.get("tmux", {}).get("p50"), fsv.get("tmux", {}).get("p50")),
            }
        res["tmux_overhead"] = overhead
        res["burst"] = {
            "trace": summary_ms(r["trace_ms"] for r in burst_rows),
            "n": len(burst_rows),
            "stale_after_last": sum(r["stale_after_last"] for r in burst_rows),
            "earlier_contents_rendered": [r["earlier_contents_rendered"] for r in burst_rows],
            "last_event_is_last_content": all(r["last_event_is_last_content"] for r in burst_rows),
        }
        cold_p50 = res["cold"]["ms"]["p50"]
        res["ratio"] = {
            "trace": cold_p50 / sv["trace"]["p50"] if cold_p50 and sv["trace"]["p50"] else None,
            "tmux": cold_p50 / sv["tmux"]["p50"]
            if cold_p50 and sv.get("tmux", {}).get("p50")
            else None,
        }
        for key, rows in all_rows.items():
            for r in rows:
                res["problems"] += [
                    f"{key} save {r['i']} ({r['kind']}, {r['method']}): {x}" for x in r["problems"]
                ]
        fs = [r["first_screen_ms"] for r in res["startup"]]
        fv = [r["first_verdict_ms"] for r in res["startup"]]
        res["targets"] = TARGETS
        res["targets_check"] = {
            "save_p50": sv["trace"]["p50"] is not None
            and sv["trace"]["p50"] <= TARGETS["save_p50_ms"],
            "save_p95": sv["trace"]["p95"] is not None
            and sv["trace"]["p95"] <= TARGETS["save_p95_ms"],
            "ratio": res["ratio"]["trace"] is not None
            and res["ratio"]["trace"] >= TARGETS["ratio_min"],
            "first_screen": all(x is not None and x <= TARGETS["first_screen_ms"] for x in fs),
            "first_verdict": all(x is not None and x <= TARGETS["first_verdict_ms"] for x in fv),
            "ui_rss": res["memory"]["peak_mb"]["ui"] <= TARGETS["ui_rss_mb"],
            "cpu_per_save": res["phase_load"]["trace"]["app_cpu_ms_per_save"]
            <= TARGETS["cpu_ms_per_save"],
            "idle_pss": res["memory"]["idle"]["total_pss_mb"] <= TARGETS["idle_pss_mb"],
        }
        for key, r in res.get("floor_ratio", {}).items():  # a figure the run could not make: none
            limit = TARGETS["floor_ratio_current" if key == "current" else "floor_ratio_every"]
            if r is not None:
                res["targets_check"]["floor_" + key] = r <= limit
    finally:
        for s in sessions:
            if s.ui_pid:
                s.quit(timeout=5)
        if floor and floor.sess.ui_pid:
            floor.sess.quit(timeout=5)
        kill_tmux_server(socket)
        kill_tmux_server(floor_socket)
        res["load"]["end"] = loadavg()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            res["workdir"] = str(base)

    print_table(res)
    if args.json:
        args.json.write_text(json.dumps(res, indent=1, ensure_ascii=False), encoding="utf-8")
        print(f"results: {args.json}")
    missed = [k for k, ok in res["targets_check"].items() if not ok]
    if missed:
        print("targets missed:", ", ".join(missed))
    return 1 if (missed and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
