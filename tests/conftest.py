"""For every test: an empty temporary folder as the cwd, and no language from the shell.

The tutor reads `attn-lab/` (a remembered language, a lesson, the learner's file) from the
folder it starts in, and LC_ALL / LC_MESSAGES / LANG: a tutor run in the checkout (the README's
run command) or a Chinese shell must not change what a test sees. Tests that need a workspace
or a language make their own.
"""

from __future__ import annotations

import pytest


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
