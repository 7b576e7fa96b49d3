"""Timestamps for the benchmarks: set ATTN_TUTOR_TRACE=FILE and the app appends one JSON line
per event (first screen; the current step's verdict, then every step's, on screen for a given
file content). Off by default."""

from __future__ import annotations

import json
import os
import time
from typing import Any

_PATH = os.environ.get("ATTN_TUTOR_TRACE")


def digest(text: str) -> str:
    import hashlib  # only with a trace on, and not before the first screen (~3 ms)

    return hashlib.sha256(text.encode("utf-8", errors="surrogateescape")).hexdigest()[:16]


def trace(event: str, **fields: Any) -> None:
    if not _PATH:
        return
    line = json.dumps({"event": event, "t": time.time(), **fields})
    with open(_PATH, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def enabled() -> bool:
    return bool(_PATH)
