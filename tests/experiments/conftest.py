"""The experiment tests share one check worker per test process (experiment_kit.SHARED)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "worker")]  # experiment_kit, and its worker_kit

from experiment_kit import SHARED  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _shared_worker():
    yield
    SHARED.close()
