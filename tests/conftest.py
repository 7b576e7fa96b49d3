"""For every test: an empty temporary folder as the cwd, no language from the shell, and a
cache folder of the run's own.

The tutor reads `attn-lab/` (a remembered language, a lesson, the learner's file) from the
folder it starts in, and LC_ALL / LC_MESSAGES / LANG: a tutor run in the checkout (the README's
run command) or a Chinese shell must not change what a test sees. Tests that need a workspace
or a language make their own.
"""

from __future__ import annotations

import os

import pytest


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


@pytest.fixture(autouse=True)
def _no_workspace_or_locale_from_outside(tmp_path_factory, monkeypatch):
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    for var in ("LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")  # English, and UTF-8 for the CLI's subprocesses


def pytest_collection_modifyitems(config, items):
    """Everything outside tests/unit starts real processes (the worker, the app, a terminal):
    the `slow` tier. tests/unit marks its own few slow tests."""
    unit = config.rootpath / "tests" / "unit"
    for item in items:
        if not item.path.is_relative_to(unit):
            item.add_marker(pytest.mark.slow)
