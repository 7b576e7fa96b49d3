"""Hostile and buggy learner code: every case gives the affected steps a clear status and
message within the step timeout + 1 s, the other steps are still judged, and the worker
takes the next run (the session worker is shared: a case that broke it fails the next).

Each file is the reference solution plus the case's code, so the steps it does not touch
must pass. A line marked `# <-` is the one the verdict must point at.
"""

from __future__ import annotations

import textwrap

import pytest
from reliability_kit import (
    CHECKED,
    RECORD,
    STEP_TIMEOUT,
    at_import,
    first_message,
    summary,
    with_code,
)

from tutor.engine.client import check_file
from tutor.model.lesson import get_lesson
from tutor.text.i18n import local_key

ALL = CHECKED["lm3-l3"]
CA = ["single-head", "leakage"]  # the steps that call causal_attention
SHAPES = ["shapes"]  # the step that calls expected_shapes


class Exp:
    def __init__(self, status, key=None, steps=ALL, check=None, params=None, marked_line=False):
        self.status, self.key, self.steps, self.check = status, key, steps, check
        self.params = params or {}
        self.marked_line = marked_line  # the failure's frames (or caret) name the `# <-` line


def case(case_id, source, *exps, lesson="lm3-l3"):
    return pytest.param(lesson, source, exps, id=case_id)


def fn_shapes(body: str) -> str:
    return with_code("def expected_shapes(B, T, H, hd):\n" + body)


def fn_ca(body: str) -> str:
    return with_code("def causal_attention(x, Wq, Wk, Wv):\n" + body)


CASES = [
    # --------------------------------------------------------- endless loops and sleeps
    case(
        "import-loop",
        at_import("while True: pass  # <-"),
        Exp("timeout", "failure.timeout", marked_line=True),
    ),
    case(
        "import-sleep",
        at_import("import time\ntime.sleep(1000)  # <-"),
        Exp("timeout", "failure.timeout", marked_line=True),
    ),
    case(
        "function-loop-and-sleep",
        with_code("""
        def expected_shapes(B, T, H, hd):
            while True: pass  # <-

        def causal_attention(x, Wq, Wk, Wv):
            import time
            time.sleep(1000)  # <-
        """),
        Exp("timeout", "failure.timeout", SHAPES + CA, marked_line=True),
        Exp("pass", steps=["multi-head"]),
    ),
    # --------------------------------------------------------- exits
    case(
        "import-sys-exit",
        at_import("import sys\nsys.exit()  # <-"),
        Exp("error", "failure.system_exit", marked_line=True),
    ),
    case(
        "import-raise-systemexit",
        at_import("raise SystemExit(2)  # <-"),
        Exp("error", "failure.system_exit", marked_line=True),
    ),
    case(
        "import-os-exit",
        at_import("import os\nos._exit(3)"),
        Exp("error", "failure.exit", params={"code": 3}),
    ),
    case(
        "function-sys-exit",
        fn_shapes("    import sys\n    sys.exit(1)  # <-"),
        Exp("error", "failure.system_exit", SHAPES, marked_line=True),
        Exp("pass", steps=CA + ["multi-head"]),
    ),
    case(
        "function-raise-systemexit",
        fn_shapes("    raise SystemExit  # <-"),
        Exp("error", "failure.system_exit", SHAPES, marked_line=True),
        Exp("pass", steps=CA + ["multi-head"]),
    ),
    case(
        "function-os-exit",
        fn_shapes("    import os\n    os._exit(3)"),
        Exp("error", "failure.exit", SHAPES, params={"code": 3}),
        Exp("pass", steps=CA + ["multi-head"]),
    ),
    case(
        "exit-from-a-method",
        with_code("""
        class CausalMultiHeadAttention(CausalMultiHeadAttention):
            def forward(self, x):
                raise SystemExit("bye")  # <-
        """),
        Exp("error", "failure.system_exit", ["multi-head"], marked_line=True),
        Exp("pass", steps=CA + SHAPES),
    ),
    # --------------------------------------------------------- crashes
    case(
        "function-segfault",
        fn_shapes("    import ctypes\n    ctypes.string_at(0)  # <-"),
        Exp("error", "failure.crash", SHAPES, params={"signal": "SIGSEGV"}, marked_line=True),
        Exp("pass", steps=CA + ["multi-head"]),
    ),
    case(
        "import-segfault",
        at_import("import ctypes\nctypes.string_at(0)  # <-"),
        Exp("error", "failure.crash", params={"signal": "SIGSEGV"}, marked_line=True),
    ),
    case(
        "function-abort",
        fn_ca("    import os\n    os.abort()  # <-"),
        Exp("error", "failure.crash", CA, params={"signal": "SIGABRT"}, marked_line=True),
        Exp("pass", steps=["multi-head", "shapes"]),
    ),
    # --------------------------------------------------------- recursion
    case(
        "function-recursion",
        fn_shapes("    return expected_shapes(B, T, H, hd)  # <-"),
        Exp("error", "failure.recursion", SHAPES, marked_line=True),
        Exp("pass", steps=CA + ["multi-head"]),
    ),
    case(
        "forward-calls-self",
        with_code("""
        class CausalMultiHeadAttention(CausalMultiHeadAttention):
            def forward(self, x):
                return self(x)  # <-
        """),
        Exp("error", "failure.recursion", ["multi-head"], marked_line=True),
        Exp("pass", steps=CA + SHAPES),
    ),
    # The child's main stack may grow to 256 MiB: a raised limit still ends in RecursionError.
    case(
        "recursion-limit-raised",
        with_code("""
        import sys
        sys.setrecursionlimit(30_000)  # past what an 8 MiB stack holds for __getattr__

        class Endless:
            def __getattr__(self, name):
                return self.more  # <-

        def expected_shapes(B, T, H, hd):
            return Endless().shapes
        """),
        Exp("error", "failure.recursion", SHAPES, marked_line=True),
        Exp("pass", steps=CA + ["multi-head"]),
    ),
    # Past the C stack it is a crash: reported as the recursion it is, from faulthandler's report.
    case(
        "stack-overflow",
        with_code("""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_STACK, (8 << 20, resource.getrlimit(resource.RLIMIT_STACK)[1]))
        sys.setrecursionlimit(10**6)

        class Endless:
            def __getattr__(self, name):
                return self.more  # <-

        def expected_shapes(B, T, H, hd):
            return Endless().shapes
        """),
        Exp("error", "failure.recursion", SHAPES, marked_line=True),
        Exp("pass", steps=CA + ["multi-head"]),
    ),
    # --------------------------------------------------------- input
    # At import time it is the file's error, said as such (not "causal_attention raised …").
    case(
        "import-input",
        at_import("answer = input('name? ')  # <-"),
        Exp("error", "failure.file_exception", params={"kind": "EOFError"}, marked_line=True),
    ),
    case(
        "function-reads-stdin",
        fn_shapes("    import sys\n    return sys.stdin.read()"),
        Exp("fail", "check.shapes_not_dict", SHAPES),
        Exp("pass", steps=CA + ["multi-head"]),
    ),
    # --------------------------------------------------------- syntax and empty files
    case(
        "syntax-error",
        at_import("def broken(:  # <-\n    pass"),
        Exp("error", "failure.syntax", marked_line=True),
    ),
    case(
        "indentation-error",
        at_import("def f():\nreturn 1  # <-"),
        Exp("error", "failure.syntax", params={"kind": "IndentationError"}, marked_line=True),
    ),
    case(
        "tab-error",
        at_import("def f():\n        x = 1\n\treturn x  # <-"),
        Exp("error", "failure.syntax", params={"kind": "TabError"}, marked_line=True),
    ),
    case("null-byte", at_import("x = 1\x00"), Exp("error")),
    case("empty-file", "", Exp("fail", "check.missing")),
    case("only-comments", "# nothing yet\n", Exp("fail", "check.missing")),
    case(
        "missing-function",
        with_code("del expected_shapes"),
        Exp("fail", "check.missing", SHAPES),
        Exp("pass", steps=CA + ["multi-head"]),
    ),
    case(
        "not-callable",
        with_code("causal_attention = 42"),
        Exp("fail", "check.missing", CA),
        Exp("pass", steps=["multi-head", "shapes"]),
    ),
]


def marked_lines(source: str) -> set[int]:
    return {i for i, line in enumerate(source.splitlines(), 1) if line.rstrip().endswith("# <-")}


def check_run(run, source, exps):
    results = run.results
    assert set(results) == set(CHECKED["lm3-l3"]), summary(results)
    for exp in exps:
        for step in exp.steps:
            r = results[step]
            assert r.status == exp.status, f"{step}: {exp.status} expected\n{summary(results)}"
            if exp.key:
                msg = first_message(r)
                assert msg is not None and local_key(msg.key) == exp.key, (
                    f"{step}: {exp.key} expected\n{summary(results)}"
                )
                for k, v in exp.params.items():
                    assert msg.params.get(k) == v, f"{step}: {k}={v!r} expected\n{summary(results)}"
            if exp.marked_line:
                lines = {f.line for f in r.failure.frames} if r.failure else set()
                assert lines & marked_lines(source), (
                    f"{step}: no marked line in {lines}\n{summary(results)}"
                )
            # Nothing may be left waiting past the deadline.
            assert run.arrived[step] <= STEP_TIMEOUT + 1.0, (
                f"{step} came after {run.arrived[step]:.2f} s"
            )


@pytest.mark.parametrize("lesson, source, exps", CASES)
def test_hostile_case(live, tmp_path, lesson, source, exps):
    path = tmp_path / "lm3_l3.py"
    path.write_text(source, encoding="utf-8")
    run = live.run(lesson, path.read_text(encoding="utf-8"), filename=str(path))
    check_run(run, source, exps)


def test_syntax_error_has_a_caret(live, tmp_path):
    source = at_import("x = (1 +\ny = 2  # <-")
    run = live.run("lm3-l3", source, filename=str(tmp_path / "lm3_l3.py"))
    for r in run.results.values():
        assert r.status == "error" and first_message(r).key == "failure.syntax", summary(
            run.results
        )
        assert "^" in r.failure.caret and f"{r.failure.frames[0].line:>4} |" in r.failure.caret


INTERRUPTING_TIMER = at_import(
    """
import signal as _signal
def _interrupt(signum, frame):
    raise KeyboardInterrupt  # <-
_signal.signal(_signal.SIGALRM, _interrupt)
_signal.setitimer(_signal.ITIMER_REAL, 0.005, 0.005)
"""
)


def test_a_timer_whose_handler_raises_is_the_learners_in_every_step(live):
    # The handler fires in the harness's code too (between the probe and the frame): each
    # step must still say the learner's code raised, never "the tutor could not judge" nor
    # "ended early", and the worker must take the next file (in `grade`, another student's).
    for _ in range(3):
        run = live.run("lm3-l3", INTERRUPTING_TIMER)
        for r in run.results.values():
            key = first_message(r).key if r.status != "pass" else None
            assert key in (None, "failure.exception", "check.raised") or r.status == "fail", (
                summary(run.results)
            )
            assert key not in ("failure.exit", "failure.harness", "failure.harness_cli")
    run = live.run("lm3-l3", with_code(""))
    assert all(r.status == "pass" for r in run.results.values()), summary(run.results)


def test_worker_still_works_after_the_cases(live):
    run = live.run("lm3-l3", with_code(""))
    assert all(r.status == "pass" for r in run.results.values()), summary(run.results)


# ------------------------------------------------------------------ processes left behind

PROCESS_CASES = {
    "thread": """
        import threading, time
        def _loop():
            while True:  # alive for ever, but not holding the GIL: a busy loop made this case timing-bound
                time.sleep(0.01)
        threading.Thread(target=_loop, daemon=False).start()
        """,
    "fork": """
        import os, time
        if _forked() == 0:
            time.sleep(1000)
        """,
    "fork-in-function": """
        _original = expected_shapes
        def expected_shapes(B, T, H, hd):
            import os, time
            if _forked() == 0:
                time.sleep(1000)
            return _original(B, T, H, hd)
        """,
    "popen": """
        import subprocess
        _p = subprocess.Popen(["sleep", MARKER])
        _record(_p.pid)
        """,
    "daemon": """
        import os, time
        _r, _w = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if _forked() == 0:
                time.sleep(1000)
            os.write(_w, b".")
            os._exit(0)
        os.read(_r, 1)
        """,
    "fork-and-flood-the-pipes": """
        import os, sys, time
        if _forked() == 0:
            _line = b"grandchild output" + _record_line()  # each line: the flood keeps only a tail
            while True:
                os.write(1, _line)
        """,
}


@pytest.mark.parametrize("kind", list(PROCESS_CASES))
def test_processes_are_killed_with_the_run(live, tmp_path, kind):
    import random

    from reliability_kit import recorded, recorded_alive, wait_until, with_cmdline

    marker = f"{1000 + random.random():.9f}"
    source = with_code(RECORD + f"MARKER = {marker!r}\n" + textwrap.dedent(PROCESS_CASES[kind]))
    run = live.run("lm3-l3", source)
    assert all(r.status == "pass" for r in run.results.values()), summary(run.results)
    assert all(t <= STEP_TIMEOUT + 1.0 for t in run.arrived.values()), run.arrived
    records = recorded(r.output for r in run.results.values())
    if kind != "thread":
        assert records, f"the learner's process never started: {summary(run.results)}"
    # Killed with its child; orphans that left the group come to the worker (a subreaper) and die.
    assert wait_until(lambda: not recorded_alive(records) and not with_cmdline(marker), 2), (
        f"still running: {recorded_alive(records)} {with_cmdline(marker)}"
    )


# ------------------------------------------------------------------ floods of output

FLOODS = {
    "print-at-import": ("i = 0\nwhile True:\n    print('flood line', i)\n    i += 1", ALL),
    "print-in-function": (
        """
        _original = expected_shapes
        def expected_shapes(B, T, H, hd):
            for i in range(3_000_000):
                print('flood line', i)
            return _original(B, T, H, hd)
        """,
        SHAPES,
    ),
    "os-write-to-fd-1-and-2": (
        """
        import os
        for i in range(100_000):
            os.write(1, b"out %d\\n" % i)
            os.write(2, b"err %d\\n" % i)
        print("flood line end")
        """,
        ALL,
    ),
}


@pytest.mark.parametrize("kind", list(FLOODS))
def test_output_floods_are_bounded(live, kind):
    code, flooded = FLOODS[kind]
    run = live.run("lm3-l3", with_code(code))
    for step in flooded:
        r = run.results[step]
        # A flood either finishes (its verdict) or hits the deadline; either way the tail is shown.
        assert r.status in ("pass", "timeout"), summary(run.results)
        assert run.arrived[step] <= STEP_TIMEOUT + 1.0
        assert len(r.output) < 4200, len(r.output)
        assert r.output_dropped > 0 and ("flood line" in r.output or "out " in r.output), r.output[
            -300:
        ]
    for step in set(ALL) - set(flooded):
        assert run.results[step].status == "pass", summary(run.results)
    # Still responsive: the next run is judged at once.
    again = live.run("lm3-l3", with_code(""))
    assert all(r.status == "pass" for r in again.results.values()), summary(again.results)
    assert max(again.arrived.values()) < STEP_TIMEOUT, again.arrived


# ------------------------------------------------------------------ files the client cannot decode


def test_invalid_utf8_is_reported_per_step_without_running(tmp_path):
    path = tmp_path / "lm3_l3.py"
    path.write_bytes(b"import torch\n\nx = '\xff\xfe'\n")
    results = check_file(get_lesson("lm3-l3"), path, path.read_bytes())
    assert [r.id for r in results] == ALL
    for r in results:
        assert r.status == "error" and first_message(r).key == "failure.encoding"
        assert first_message(r).params == {"line": 3, "byte": "0xff"}
