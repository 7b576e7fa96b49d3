"""For every test: an empty temporary folder as the cwd, no language from the shell, and a
cache folder of the run's own.

The tutor reads `attn-lab/` (a remembered language, a lesson, the learner's file) from the
folder it starts in, and LC_ALL / LC_MESSAGES / LANG: a tutor run in the checkout (the README's
run command) or a Chinese shell must not change what a test sees. Tests that need a workspace
or a language make their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Before anything imports torch: its thread pool reads this once. Two xdist processes on two
# cores, each with torch's default of one thread a core, wait on each other's threads; the
# worker's processes already run with one (client.EngineClient.start).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

from tutor.engine.client import WORKER_SCRIPT_ENV

TOOLS = Path(__file__).parent / "tools"
WARM_SOCKET_ENV = "ATTN_TUTOR_WARM_SOCKET"  # worker_standin.py reads it
# Tests of process trees, parents, pids and kills: their workers start as in use, each
# importing torch. Every other test gets its workers forked from one warm process
# (tests/tools/warm_workers.py): the same worker from its main on, without the import.
REAL_WORKER_START = (
    "terminal",
    "grade/test_grade.py",
    "grade/test_interrupted.py",
    "reliability/test_check_exits.py",
    "reliability/test_check_worker_death.py",
    "reliability/test_child_memory.py",
    "reliability/test_confinement.py",
    "reliability/test_hostile_class.py",
    "reliability/test_hostile_code.py",
    "reliability/test_idle_worker.py",
    "reliability/test_integrity.py",
    "reliability/test_judge_death.py",
    "reliability/test_leftovers_after_kill.py",
    "reliability/test_soak.py",
    "reliability/test_zygote.py",
)


@pytest.fixture(scope="session", autouse=True)
def _run_cache(tmp_path_factory):
    """One cache folder for the whole run, shared by xdist's workers (their base folders are
    siblings): the lesson's mutants' outputs are computed once per run, never in the home.
    Session-wide and set before any other session fixture starts a worker."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if base.name.startswith("popen-gw") else base
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(root / "xdg-cache")
    # Module- and session-scoped fixtures run before the per-test cwd below: they too must not
    # start the CLI in the checkout, where the README's run command leaves attn-lab/ (with a
    # language chosen there: a grade fixture wrote its report in Chinese).
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("session-cwd"))
    yield
    os.chdir(cwd)
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(scope="session", autouse=True)
def _warm_workers(_run_cache, tmp_path_factory):
    """This test process's warm-worker server (tests/tools/warm_workers.py)."""
    path = tmp_path_factory.mktemp("warm") / "socket"
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(TOOLS.parents[1]), env.get("PYTHONPATH")])
    )
    server = subprocess.Popen(
        [sys.executable, str(TOOLS / "warm_workers.py"), str(path)],
        stdout=subprocess.PIPE,
        env=env,
    )
    assert server.stdout is not None
    if server.stdout.readline().strip() == b"ready":
        os.environ[WARM_SOCKET_ENV] = str(path)
    yield
    os.environ.pop(WARM_SOCKET_ENV, None)
    server.kill()
    server.wait()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before any fixture of the test is made (a module's worker too): which start it gets."""
    tests = Path(__file__).parent
    real = any(item.path.is_relative_to(tests / part) for part in REAL_WORKER_START)
    if real:
        os.environ.pop(WORKER_SCRIPT_ENV, None)
    else:
        os.environ[WORKER_SCRIPT_ENV] = str(TOOLS / "worker_standin.py")


@pytest.fixture(autouse=True)
def _no_workspace_or_locale_from_outside(tmp_path_factory, monkeypatch):
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    for var in ("LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")  # English, and UTF-8 for the CLI's subprocesses


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one process more than the cores. About a fifth of the suite's time is spent
    waiting (Textual's pilot, tmux, workers starting): on 2 cores 3 processes keep them busy."""
    return min((os.cpu_count() or 1) + 1, 4)


# Folders whose tests mostly wait (Textual's pilot, a terminal in tmux): each runs in one xdist
# process while the other keeps the cores busy. Spread over both, they wait side by side.
WAITING = ("app", "terminal")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Everything outside tests/unit starts real processes (the worker, the app, a terminal):
    the `slow` tier. tests/unit marks its own few slow tests."""
    tests = config.rootpath / "tests"
    for item in items:
        if not item.path.is_relative_to(tests / "unit"):
            item.add_marker(pytest.mark.slow)
        waiting = [f for f in WAITING if item.path.is_relative_to(tests / f)]
        if waiting and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(f"waiting-{waiting[0]}"))
