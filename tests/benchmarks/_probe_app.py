"""`python -m tutor` with the probes of _probe.py (for profile_breakdown.py)."""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(
    1, os.environ.get("ATTN_BENCH_ROOT") or str(HERE.parents[1])
)  # --root: another copy of the app

import _probe  # noqa: E402

_probe.emit("ui_start")
_probe.install_ui()
_probe.emit("ui_imported")

from tutor.cli.main import entry  # noqa: E402

entry()
