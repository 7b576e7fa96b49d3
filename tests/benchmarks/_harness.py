"""Shared pieces of the benchmarks: learner files, editor-like saves, the app in tmux,
its trace, the screen, the process tree and its memory, machine load.

Stdlib only (the benchmarks must run where the app runs). Linux only (/proc, tmux).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
REFERENCE = (ROOT / "reference" / "lm3_l3.py").read_text(encoding="utf-8")
STARTER = (ROOT / "lessons" / "lm3-l3" / "starter.py").read_text(encoding="utf-8")
LEARNER_NAME = "lm3_l3.py"
CHECKED = ("single-head", "leakage", "multi-head", "shapes")  # in the step list's order

# What the step list shows in its left column (tutor/text/verdict_text.py MARKS, tutor/app/app.py SPINNER).
FINAL_MARKS = {"✓": "pass", "✗": "fail|error", "○": "todo", "⧗": "timeout"}
STATUS_MARK = {"pass": "✓", "fail": "✗", "error": "✗", "todo": "○", "timeout": "⧗"}
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
STEP_LINE_FIRST = set(FINAL_MARKS) | set(SPINNER) | {"…", "·"}


# ------------------------------------------------------------------ learner files


def _sub(text: str, old: str, new: str) -> str:
    if old not in text:
        raise RuntimeError(
            f"benchmark variant: {old!r} is no longer in reference/lm3_l3.py; update _harness.VARIANTS"
        )
    return text.replace(old, new, 1)


# name -> (function of the reference text, the step-list marks it must end with)
VARIANTS = {
    "correct": (lambda s: s, "✓✓✓✓"),
    "no_mask": (
        lambda s: _sub(
            s,
            'torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)',
            "torch.softmax(scores, dim=-1)",
        ),
        "✗✗✓✓",
    ),
    "mha_no_mask": (
        lambda s: _sub(
            s, 'scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))', "scores = scores"
        ),
        "✓✓✗✓",
    ),
    "shapes_wrong": (lambda s: _sub(s, '"scores": (B, H, T, T),', '"scores": (B, T, T),'), "✓✓✓✗"),
    "syntax": (lambda s: s + "\ndef unfinished(:\n", "✗✗✗✗"),
    "todo": (
        lambda s: _sub(
            s,
            "    q, k, v = x @ Wq, x @ Wk, x @ Wv\n    scores = q @ k.transpose(-2, -1)",
            "    raise NotImplementedError('single-head causal attention')\n"
            "    q, k, v = x @ Wq, x @ Wk, x @ Wv\n    scores = q @ k.transpose(-2, -1)",
        ),
        "○○✓✓",
    ),
}
BROKEN = ("no_mask", "mha_no_mask", "shapes_wrong", "syntax", "todo")


def learner_text(kind: str, uid: str, prints: int = 0) -> str:
    """A distinct content per save (the app ignores a save that changes nothing); with prints,
    every function prints that many bytes a call (see with_prints)."""
    make, _ = VARIANTS[kind]
    text = make(REFERENCE)
    return (with_prints(text, prints) if prints else text) + f"\n# benchmark save {uid}\n"


# A one-line def of a function or method (the syntax variant's `def unfinished(:` is not one).
_DEF = re.compile(r"^( *)def \w+\(.*\).*:[ \t]*$", re.M)


def with_prints(text: str, nbytes: int) -> str:
    """`print("x" * nbytes)` first in every function: output as debugging prints make it."""
    return _DEF.sub(lambda m: f'{m.group(0)}\n{m.group(1)}    print("x" * {nbytes})', text)


def digest(text: str) -> str:  # the same as tutor.app.trace.digest
    return hashlib.sha256(text.encode("utf-8", errors="surrogateescape")).hexdigest()[:16]


def marks_for(statuses: dict) -> str:
    return "".join(STATUS_MARK.get(statuses.get(s, "?"), "?") for s in CHECKED)


# ------------------------------------------------------------------ saves, the way editors make them


def save_atomic(path: Path, text: str) -> float:
    """vim / JetBrains / most editors: write a temp file, rename it over the old one."""
    tmp = path.with_name(f".{path.name}.bench-{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return time.time()


def save_in_place(path: Path, text: str) -> float:
    """VS Code / nano: truncate, then write."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return time.time()


SAVERS = {"atomic": save_atomic, "truncate": save_in_place}


# ------------------------------------------------------------------ numbers


def pct(values, p: float) -> float | None:
    """Nearest-rank percentile (no interpolation: p95 of 40 values is the 38th)."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    k = max(0, min(len(vals) - 1, int(-(-p * len(vals) // 100)) - 1))
    return vals[k]


def summary_ms(values) -> dict:
    vals = [v for v in values if v is not None]
    if not vals:
        return {"n": 0, "p50": None, "p95": None, "max": None, "min": None, "mean": None}
    return {
        "n": len(vals),
        "p50": round(pct(vals, 50), 1),
        "p95": round(pct(vals, 95), 1),
        "max": round(max(vals), 1),
        "min": round(min(vals), 1),
        "mean": round(statistics.fmean(vals), 1),
    }


# ------------------------------------------------------------------ machine load


def loadavg() -> dict:
    with open("/proc/loadavg") as f:
        a, b, c, running, _ = f.read().split()
    return {"1m": float(a), "5m": float(b), "15m": float(c), "running": running, "t": time.time()}


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies over all CPUs."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    total = sum(fields[:8])
    return total - idle, total


def proc_cpu_jiffies(pid: int, children: bool = False) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    value = int(rest[11]) + int(rest[12])  # utime stime
    if children:
        value += int(rest[13]) + int(rest[14])  # cutime cstime (reaped children)
    return value


class LoadWindow:
    """CPU busy share of the machine over a window: ours (the app's process tree, and this
    benchmark with its own children) and the rest (other helpers' tests)."""

    def __init__(self, own_pids_fn):
        self.own_pids_fn = own_pids_fn
        self.tck = os.sysconf("SC_CLK_TCK")
        self.start()

    def _app(self) -> int:
        return sum(proc_cpu_jiffies(p, children=True) for p in self.own_pids_fn())

    def _bench(self) -> int:
        t = os.times()
        return int((t.user + t.system + t.children_user + t.children_system) * self.tck)

    def start(self) -> None:
        self.busy0, self.total0 = cpu_jiffies()
        self.app0, self.bench0 = self._app(), self._bench()
        self.load0 = loadavg()
        self.t0 = time.time()

    def stop(self) -> dict:
        busy, total = cpu_jiffies()
        app = max(0, self._app() - self.app0)
        bench = max(0, self._bench() - self.bench0)
        dt = max(1, total - self.total0)
        ncpu = os.cpu_count() or 1
        return {
            "seconds": round(time.time() - self.t0, 1),
            "load_start": self.load0,
            "load_end": loadavg(),
            "busy_cpus": round((busy - self.busy0) / dt * ncpu, 2),
            "app_cpus": round(app / dt * ncpu, 2),
            "bench_cpus": round(bench / dt * ncpu, 2),
            "others_cpus": round(max(0, (busy - self.busy0) - app - bench) / dt * ncpu, 2),
            "app_cpu_ms": round(app * 1000 / self.tck),
            "ncpu": ncpu,
        }


# ------------------------------------------------------------------ processes and memory


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def children_of(pid: int) -> list[int]:
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        text = _read(f"/proc/{pid}/task/{tid}/children")
        if text:
            out += [int(x) for x in text.split()]
    return out


def cmdline(pid: int) -> str:
    text = _read(f"/proc/{pid}/cmdline") or ""
    return text.replace("\0", " ").strip()


def status_kb(pid: int) -> dict:
    text = _read(f"/proc/{pid}/status") or ""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(value.split()[0])
    return out


def pss_kb(pid: int) -> int | None:
    text = _read(f"/proc/{pid}/smaps_rollup")
    if not text:
        return None
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return None


def start_time(pid: int) -> int:
    text = _read(f"/proc/{pid}/stat")
    if not text:
        return 1 << 62
    return int(text.rsplit(")", 1)[1].split()[19])


def alive(pid: int) -> bool:
    text = _read(f"/proc/{pid}/stat")
    return bool(text) and text.rsplit(")", 1)[1].split()[0] != "Z"


def process_tree(ui_pid: int) -> dict:
    """{'ui': pid, 'worker': pid|None, 'judge': pid|None, 'children': [pids]} under the UI."""
    tree = {"ui": ui_pid, "worker": None, "judge": None, "children": [], "other": []}
    for pid in children_of(ui_pid):
        if "tutor.engine.supervisor" in cmdline(pid) or "_probe_worker" in cmdline(pid):
            tree["worker"] = pid
        else:
            tree["other"].append(pid)
    if tree["worker"]:
        kids = children_of(tree["worker"])
        # The judge is forked first, when the worker starts, and lives as long as it does;
        # the spare children are forked later and replaced after every run.
        kids.sort(key=lambda p: (start_time(p), p))
        if kids:
            tree["judge"] = kids[0]
            stack = list(kids[1:])
            while stack:
                p = stack.pop()
                tree["children"].append(p)
                stack += children_of(p)
            stack = children_of(kids[0])  # anything the judge started itself
            while stack:
                p = stack.pop()
                tree["other"].append(p)
                stack += children_of(p)
    return tree


class MemorySampler(threading.Thread):
    """Peak VmHWM per role over the whole run, sampled every `interval` s."""

    def __init__(self, ui_pid: int, interval: float = 0.1):
        super().__init__(daemon=True, name="bench-memory")
        self.ui_pid = ui_pid
        self.interval = interval
        self.peak_kb = {"ui": 0, "worker": 0, "judge": 0, "children": 0}
        self.judges: set[int] = set()
        self.workers: set[int] = set()
        self.children_seen: set[int] = set()
        self.samples = 0
        self._stop = threading.Event()
        self.last_tree: dict | None = None

    def sample(self) -> None:
        tree = process_tree(self.ui_pid)
        self.last_tree = tree
        for role in ("ui", "worker", "judge"):
            pid = tree[role]
            if pid:
                hwm = status_kb(pid).get("VmHWM", 0)
                self.peak_kb[role] = max(self.peak_kb[role], hwm)
        if tree["worker"]:
            self.workers.add(tree["worker"])
        if tree["judge"]:
            self.judges.add(tree["judge"])
        for pid in tree["children"]:
            self.children_seen.add(pid)
            self.peak_kb["children"] = max(self.peak_kb["children"], status_kb(pid).get("VmHWM", 0))
        self.samples += 1

    def run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sample()
            except Exception:  # a process ended mid-read
                pass

    def stop(self) -> None:
        self._stop.set()

    def snapshot(self) -> dict:
        """Now: RSS and PSS per role (PSS splits the pages the forks share with the worker)."""
        tree = process_tree(self.ui_pid)
        out = {"tree": tree}
        total_pss = 0
        for role in ("ui", "worker", "judge"):
            pid = tree[role]
            if pid:
                st = status_kb(pid)
                pss = pss_kb(pid) or 0
                total_pss += pss
                out[role] = {
                    "pid": pid,
                    "rss_mb": round(st.get("VmRSS", 0) / 1024, 1),
                    "hwm_mb": round(st.get("VmHWM", 0) / 1024, 1),
                    "pss_mb": round(pss / 1024, 1),
                }
        kids = []
        for pid in tree["children"]:
            st = status_kb(pid)
            pss = pss_kb(pid) or 0
            total_pss += pss
            kids.append(
                {
                    "pid": pid,
                    "rss_mb": round(st.get("VmRSS", 0) / 1024, 1),
                    "pss_mb": round(pss / 1024, 1),
                }
            )
        out["children"] = kids
        out["total_pss_mb"] = round(total_pss / 1024, 1)
        return out


# ------------------------------------------------------------------ the trace file


class TraceTail:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.offset = 0
        self.partial = b""
        self.events: list[dict] = []

    def poll(self) -> list[dict]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        if not data:
            return []
        self.offset += len(data)
        data = self.partial + data
        *lines, self.partial = data.split(b"\n")
        new = []
        for line in lines:
            if line.strip():
                try:
                    new.append(json.loads(line))
                except ValueError:
                    continue
        self.events += new
        return new

    def find(self, event: str, digest_: str | None = None, after: float = 0.0) -> dict | None:
        for ev in self.events:
            if (
                ev.get("event") == event
                and ev["t"] >= after
                and (digest_ is None or ev.get("digest") == digest_)
            ):
                return ev
        return None

    def wait(
        self,
        event: str,
        digest_: str | None = None,
        after: float = 0.0,
        timeout: float = 30.0,
        sleep: float = 0.001,
    ) -> dict | None:
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            ev = self.find(event, digest_, after)
            if ev is not None or time.monotonic() > deadline:
                return ev
            time.sleep(sleep)


# ------------------------------------------------------------------ the screen


def step_marks(lines: list[str]) -> str | None:
    """The checked steps' marks from the step list (left column), e.g. '✓✗✓✓'."""
    marks = []
    for line in lines[1:]:
        if line and line[0] in STEP_LINE_FIRST:
            marks.append(line[0])
    checked = [m for m in marks if m != "·"][: len(CHECKED)]
    if len(checked) < len(CHECKED):
        return None
    return "".join(checked)


def settled(marks: str | None) -> bool:
    return marks is not None and all(m in FINAL_MARKS for m in marks)


class SpawnCapture:
    """`tmux capture-pane -p`, one process per look."""

    name = "spawn"

    def __init__(self, tmux: list[str], target: str):
        self.cmd = [*tmux, "capture-pane", "-p", "-t", target]

    def capture(self) -> list[str]:
        return (
            subprocess.run(self.cmd, capture_output=True, check=False)
            .stdout.decode("utf-8", "replace")
            .splitlines()
        )

    def close(self) -> None:
        pass


class ControlCapture:
    """The same `capture-pane -p`, sent through one tmux control-mode client (`tmux -C`):
    no process start per look, so it can look every fraction of a millisecond."""

    name = "control"

    def __init__(self, tmux: list[str], target: str):
        self.target = target
        self.proc = subprocess.Popen(
            [*tmux, "-C", "attach-session", "-t", target],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        self.buf = b""
        self.cmd = f"capture-pane -p -t {target}\n".encode()
        # No %output notifications (we never read them), then skip whatever came first.
        self.command("refresh-client -f no-output")
        self.command("display-message -p attn-bench-sync", until=b"attn-bench-sync")

    def _line(self) -> bytes:
        while b"\n" not in self.buf:
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError("tmux control client ended")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def _block(self) -> list[bytes]:
        while True:  # skip notifications (%output …) until a command's block
            line = self._line()
            if line.startswith(b"%begin"):
                break
        out = []
        while True:
            line = self._line()
            if line.startswith(b"%end") or line.startswith(b"%error"):
                return out
            out.append(line)

    def command(self, cmd: str, until: bytes | None = None) -> list[bytes]:
        self.proc.stdin.write(cmd.encode() + b"\n")
        while True:
            out = self._block()
            if until is None or any(until in line for line in out):
                return out

    def capture(self) -> list[str]:
        self.proc.stdin.write(self.cmd)
        return [x.decode("utf-8", "replace") for x in self._block()]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def capture_cost_ms(cap, n: int = 40) -> dict:
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        cap.capture()
        ts.append((time.perf_counter() - t) * 1000)
    return {"p50": round(pct(ts, 50), 3), "p95": round(pct(ts, 95), 3)}


# ------------------------------------------------------------------ the app in tmux


@dataclass
class AppSession:
    """One `python -m tutor` in a detached tmux session on our own tmux server socket."""

    workdir: Path
    socket: str
    name: str
    command: list[str] | None = None  # default: [python, "-m", "tutor"]
    env: dict = field(default_factory=dict)
    root: Path = ROOT  # the copy of attn-tutor to run (--root)
    python: str = (
        sys.executable
    )  # the interpreter that runs it (--python); the worker uses the same
    ui_pid: int | None = None
    t_launch: float = 0.0
    trace_path: Path | None = None

    @property
    def tmux(self) -> list[str]:
        return ["tmux", "-L", self.socket]

    @property
    def learner(self) -> Path:
        return self.workdir / "attn-lab" / LEARNER_NAME

    def launch(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.trace_path = self.workdir / "trace.jsonl"
        env = {
            "ATTN_TUTOR_TRACE": str(self.trace_path),
            "PYTHONPATH": str(self.root),
            "ATTN_BENCH_ROOT": str(self.root),
            **self.env,
        }
        cmd = self.command or [self.python, "-m", "tutor"]
        shell = "cd {} && {} exec {}".format(
            shlex.quote(str(self.workdir)),
            " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()),
            " ".join(shlex.quote(c) for c in cmd),
        )
        self.t_launch = time.time()
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-x", "80", "-y", "24", "-s", self.name, shell],
            check=True,
        )
        out = subprocess.run(
            [*self.tmux, "display-message", "-p", "-t", self.name, "#{pane_pid}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        self.ui_pid = int(out)

    def trace(self) -> TraceTail:
        return TraceTail(self.trace_path)

    def tree(self) -> dict:
        return process_tree(self.ui_pid)

    def own_pids(self) -> list[int]:
        if not self.ui_pid or not alive(self.ui_pid):
            return []
        t = self.tree()
        return [p for p in (t["ui"], t["worker"], t["judge"], *t["children"], *t["other"]) if p]

    def quit(self, timeout: float = 15.0) -> dict:
        """Press q; wait for the UI and its worker to end; kill (by pid) what stays."""
        pids = self.own_pids()
        t0 = time.time()
        subprocess.run(
            [*self.tmux, "send-keys", "-t", self.name, "q"], check=False, capture_output=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(alive(p) for p in pids):
            time.sleep(0.02)
        left = [p for p in pids if alive(p)]
        for p in left:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        subprocess.run(
            [*self.tmux, "kill-session", "-t", self.name], check=False, capture_output=True
        )
        return {"quit_s": round(time.time() - t0, 3), "killed": left}


def compile_tree(root: Path, python: str) -> None:
    """Byte-compile the app as `pip install` does. This machine sets PYTHONDONTWRITEBYTECODE=1,
    so without it every launch of a checkout compiles each module edited since (tens of ms of
    start-up that an installed copy does not pay)."""
    subprocess.run(
        [python, "-m", "compileall", "-q", str(root / "tutor"), str(root / "lessons")],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def kill_tmux_server(socket: str) -> None:
    subprocess.run(["tmux", "-L", socket, "kill-server"], check=False, capture_output=True)
    path = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / socket
    try:
        path.unlink()  # the server leaves its socket file behind
    except OSError:
        pass


def start_tmux_server(socket: str) -> None:
    """Start our own tmux server first, so no launch we time pays for the server's start."""
    subprocess.run(
        [
            "tmux",
            "-L",
            socket,
            "new-session",
            "-d",
            "-s",
            "keepalive",
            "-x",
            "80",
            "-y",
            "24",
            "sleep 86400",
        ],
        check=True,
    )


def require_tools() -> None:
    if not shutil.which("tmux"):
        sys.exit("the benchmarks need tmux")
    if not Path("/proc/self/status").exists():
        sys.exit("the benchmarks need Linux /proc")


def jitter(base: float, spread: float) -> float:
    return base + random.uniform(0, spread)
