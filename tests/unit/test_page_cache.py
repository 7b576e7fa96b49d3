"""page_cache tells a file the page cache holds from one it does not (mincore(2))."""

from __future__ import annotations

import os
import sys

import pytest

from tutor.engine.page_cache import resident_share, torch_is_cached

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="mincore and fadvise as on Linux")


def test_a_file_just_written_is_in_the_cache(tmp_path):
    path = tmp_path / "warm.bin"
    path.write_bytes(os.urandom(1 << 20))
    assert resident_share(path) == pytest.approx(1.0)


def test_a_file_dropped_from_the_cache_is_not(tmp_path):
    path = tmp_path / "cold.bin"
    path.write_bytes(os.urandom(4 << 20))
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # dirty pages cannot be dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    share = resident_share(path)
    if share == pytest.approx(1.0):
        pytest.skip("this file system keeps its pages (tmpfs)")
    assert share is not None and share < 0.1


def test_unknown_is_none(tmp_path):
    assert resident_share(tmp_path / "absent") is None
    (tmp_path / "empty").write_bytes(b"")
    assert resident_share(tmp_path / "empty") is None


def test_torch_is_cached_once_imported():
    import torch  # noqa: F401  (its pages are now in the cache)

    assert torch_is_cached()
