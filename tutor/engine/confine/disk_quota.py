"""How much a child may write: per file (RLIMIT_FSIZE, set in the child: a write past it fails
with EFBIG) and in all (its scratch folder, which the worker measures while the child runs and
kills the child past the bound). Without the total, many files under the per-file bound would
fill the disk; with /tmp on a tmpfs, they would be memory no RSS shows.

Standard library only, no torch: the worker, the child and the messages read it.
"""

from __future__ import annotations

import os
import stat

FILE_ENV = "ATTN_TUTOR_FILE_MB"  # the largest file a child may write, MiB
SCRATCH_ENV = "ATTN_TUTOR_SCRATCH_MB"  # all its scratch folder may hold, MiB
ENTRIES_ENV = "ATTN_TUTOR_SCRATCH_FILES"  # how many files and folders it may hold
DEFAULT_FILE_MB = 256
DEFAULT_SCRATCH_MB = 512
# Entries past which a folder counts as full whatever their size: inodes are disk too, and
# the walk that measures it stays short (~10 ms for 10,000 entries here).
DEFAULT_ENTRIES = 10_000
BLOCK = 512  # st_blocks' unit


def _mb(name: str, default: int, environ=None) -> int:
    raw = (environ if environ is not None else os.environ).get(name, "")
    try:
        return max(int(raw), 1) if raw else default
    except ValueError:
        return default


def file_bytes(environ=None) -> int:
    return _mb(FILE_ENV, DEFAULT_FILE_MB, environ) << 20


def scratch_bytes(environ=None) -> int:
    return _mb(SCRATCH_ENV, DEFAULT_SCRATCH_MB, environ) << 20


def max_entries(environ=None) -> int:
    return _mb(ENTRIES_ENV, DEFAULT_ENTRIES, environ)


def over(folder: str, limit: int, most: int = DEFAULT_ENTRIES) -> bool:
    """Does the folder hold more than limit bytes (allocated: a sparse file counts what it
    uses), or more than `most` entries? Stops as soon as it does. Never raises: a
    folder that vanishes or cannot be read counts what was seen."""
    used, entries = 0, 0
    stack = [folder]
    while stack:
        try:
            scan = os.scandir(stack.pop())
        except OSError:
            continue
        with scan:
            for entry in scan:
                entries += 1
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                used += st.st_blocks * BLOCK
                if used > limit or entries > most:
                    return True
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
    return False
