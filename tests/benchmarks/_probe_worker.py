"""`python -m tutor.engine.supervisor` with the probes of _probe.py (started by _probe_app.py)."""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[0] = str(HERE)  # not this folder's parent's modules by accident
sys.path.insert(
    1, os.environ.get("ATTN_BENCH_ROOT") or str(HERE.parents[1])
)  # --root: another copy of the app

import _probe  # noqa: E402

_probe.emit("w_start")
import tutor.engine.supervisor as worker  # noqa: E402

_probe.install_worker(worker)  # imports torch (through the sandbox)
_probe.emit("w_torch")
worker.main()
