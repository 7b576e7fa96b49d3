"""`attn-tutor check` on a hostile file exits 1 (failures), in bounded time, never hangs.

One file, three ways to hang or break a naive runner: an endless loop, a segfault, and
an attempt to stop the worker (SIGSTOP to the child's parent) before exiting.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from reliability_kit import ROOT, with_code

TIMEOUT = 2.0
HOSTILE = with_code("""
def causal_attention(x, Wq, Wk, Wv):
    while True:
        pass

def expected_shapes(B, T, H, hd):
    import ctypes
    return ctypes.string_at(0)

class CausalMultiHeadAttention(CausalMultiHeadAttention):
    def __init__(self, *args, **kwargs):
        import os, signal
        try:
            os.kill(os.getppid(), signal.SIGSTOP)
        except OSError:
            pass
        raise SystemExit(0)
""")


def test_check_exits_1_and_never_hangs(tmp_path):
    path = tmp_path / "lm3_l3.py"
    path.write_text(HOSTILE, encoding="utf-8")
    start = time.monotonic()
    # torch import (~3 s, more on a busy machine) + one run bounded by the step timeout.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tutor",
            "check",
            str(path),
            "--lesson",
            "lm3-l3",
            "--timeout",
            str(TIMEOUT),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=tmp_path,
        timeout=45,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "timed out" in out and "SIGSEGV" in out and "SystemExit" in out, out
    assert "0/4 checked steps passed" in out, out
    assert time.monotonic() - start < 45
