"""What the tests in this folder share for reading a pseudo-terminal."""

import os
import select
import time


def read_for(fd: int, seconds: float) -> bytes:
    """Everything the terminal shows within `seconds`, or until it closes."""
    out, end = b"", time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    return out
