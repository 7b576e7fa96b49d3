"""Real check workers for the reliability tests (see reliability_kit.LiveWorker).

Starting a worker costs a torch import (~2.5 s), so the tests share them:
- `live`: the default memory limit and a short step timeout, so cases that must time
  out cost little; every case still has to report within that timeout + 1 s;
- `memory_live`: a smaller memory limit (ATTN_TUTOR_MEMORY_MB) and a longer timeout,
  so a memory bomb that grows as fast as this machine can fault pages in reaches the
  limit well before the deadline: the memory message, not the timeout one, is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reliability_kit import MEMORY_MB, MEMORY_TIMEOUT, STEP_TIMEOUT, LiveWorker  # noqa: E402


@pytest.fixture(scope="session")
def workers():
    """Both workers, started together: their torch imports overlap on the two cores."""
    made = {
        "live": LiveWorker(STEP_TIMEOUT),
        "memory": LiveWorker(MEMORY_TIMEOUT, env={"ATTN_TUTOR_MEMORY_MB": str(MEMORY_MB)}),
    }
    try:
        for lw in made.values():
            lw.start(wait=False)
        for lw in made.values():
            lw.wait_ready()
        yield made
    finally:
        for lw in made.values():
            lw.close()


def _for_the_session(lw: LiveWorker):
    lw.start()
    try:
        yield lw
    finally:
        lw.close()


@pytest.fixture(scope="session")
def batch_live():
    """A `grade` worker: it runs the reference itself before forking its children."""
    yield from _for_the_session(LiveWorker(STEP_TIMEOUT, batch=True))


@pytest.fixture(scope="session")
def no_landlock():
    """A worker whose children have no Landlock: what the fence alone must hold (macOS, old kernels)."""
    yield from _for_the_session(LiveWorker(STEP_TIMEOUT, env={"ATTN_TUTOR_DISABLE": "landlock"}))


@pytest.fixture(scope="session")
def live(workers):
    return workers["live"]


@pytest.fixture(scope="session")
def memory_live(workers):
    return workers["memory"]
