"""Is torch's library already in the page cache? Then its import reads no disk.

The worker waits for the app's first screen before importing torch only when the import would
read from disk (supervisor.main): with a cold cache the two compete for it, and the first screen
was 0.2 s later. With a warm cache they compete only for CPU, which a second core absorbs.
"""

from __future__ import annotations

import ctypes
import importlib.util
import mmap
import os
from pathlib import Path

# torch's import touches about half of libtorch_cpu.so's pages (59 % resident after a run
# here); a cold cache holds next to none of them.
WARM_SHARE = 0.2


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    return libc


def resident_share(path: Path) -> float | None:
    """The share of the file's pages in the page cache (mincore(2)); None when unknown."""
    try:
        libc = _libc()
        fd = os.open(path, os.O_RDONLY)
    except (OSError, AttributeError):  # no libc mincore (not Linux/BSD), no file
        return None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return None
        # Mapping reads nothing: mincore only looks at which pages the cache holds.
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    finally:
        os.close(fd)
    if addr in (None, ctypes.c_void_p(-1).value):
        return None
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = ctypes.create_string_buffer(pages)
    try:
        if libc.mincore(addr, size, vec) != 0:
            return None
    finally:
        libc.munmap(addr, size)
    # Only the low bit of each byte is defined.
    return sum(vec.raw.translate(bytes([b & 1 for b in range(256)]))) / pages


def torch_is_cached() -> bool:
    """True when torch's main library is mostly in the page cache; False when unknown."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return False
    lib = Path(spec.origin).parent / "lib"
    for name in ("libtorch_cpu.so", "libtorch_cpu.dylib"):
        share = resident_share(lib / name)
        if share is not None:
            return share >= WARM_SHARE
    return False
