"""own_folder.forget_modules: a step's imports of the student's own files are forgotten, and
nothing else is, even when the learner's code took names out of sys.modules."""

from __future__ import annotations

import sys
import types

import pytest

from tutor.engine import own_folder


def _module(name: str, file: str | None) -> types.ModuleType:
    module = types.ModuleType(name)
    if file is not None:
        module.__file__ = file
    return module


@pytest.fixture
def modules(monkeypatch):
    """sys.modules as a step in a child leaves it: the names before, then the step's imports."""
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    return sys.modules


def test_the_students_files_imported_since_are_forgotten(modules, tmp_path):
    folder = str(tmp_path / "ann")
    before = _module("before_helpers", f"{folder}/before_helpers.py")  # there already
    modules["before_helpers"] = before
    since = own_folder.newest_module()
    modules["helpers"] = _module("helpers", f"{folder}/helpers.py")
    modules["deep.tally"] = _module("deep.tally", f"{folder}/deep/tally.py")
    modules["stdlib_like"] = _module("stdlib_like", "/usr/lib/python3/stdlib_like.py")
    modules["builtin_like"] = _module("builtin_like", None)
    modules["ann_sibling"] = _module("ann_sibling", f"{folder}-other/x.py")  # not inside
    own_folder.forget_modules(folder, since)
    assert "helpers" not in modules and "deep.tally" not in modules
    assert {"stdlib_like", "builtin_like", "ann_sibling", "before_helpers"} <= set(modules)


def test_a_mark_the_learner_removed_means_every_name_is_looked_at(modules, tmp_path):
    folder = str(tmp_path / "bob")
    modules["mark"] = _module("mark", None)
    since = own_folder.newest_module()
    del modules["mark"]
    modules["helpers"] = _module("helpers", f"{folder}/helpers.py")
    own_folder.forget_modules(folder, since)
    assert "helpers" not in modules
    assert "os" in modules and "pytest" in modules


def test_without_a_folder_nothing_is_forgotten(modules, tmp_path):
    since = own_folder.newest_module()
    modules["helpers"] = _module("helpers", f"{tmp_path}/helpers.py")
    own_folder.forget_modules(None, since)
    assert "helpers" in modules
