"""The learner's files, on disk: created once, never overwritten, reset with a backup."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from tutor.workspace.files import (
    WORKSPACE_DIR,
    ensure_solution,
    reset,
    reset_function,
    solution_path,
    workspace_dir,
)

STARTER = '''\
"""Causal attention, by hand."""
import math

SCALE = True


def scores(q, k):
    # TODO: q @ k^T / sqrt(d)
    raise NotImplementedError


@staticmethod
def mask(t):
    raise NotImplementedError


class Head:
    def forward(self, x):
        raise NotImplementedError
'''

LEARNER = '''\
"""Causal attention, by hand."""
import math
import torch  # the learner added this

SCALE = True


def scores(q, k):
    # my attempt
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


@staticmethod
def mask(t):
    return torch.tril(torch.ones(t, t))   # trailing spaces kept


# a note between functions
class Head:
    def forward(self, x):
        return x
'''


@dataclass
class FakeLesson:
    file_name: str
    starter_path: Path


@pytest.fixture
def lesson(tmp_path: Path) -> FakeLesson:
    starter = tmp_path / "lessons" / "starter.py"
    starter.parent.mkdir()
    starter.write_text(STARTER)
    return FakeLesson("attention.py", starter)


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def test_paths(cwd: Path, lesson: FakeLesson):
    assert WORKSPACE_DIR == "attn-lab"
    assert workspace_dir(cwd) == cwd / "attn-lab"
    assert solution_path(cwd, lesson) == cwd / "attn-lab" / "attention.py"


def test_creates_from_starter(cwd: Path, lesson: FakeLesson):
    path, created = ensure_solution(cwd, lesson)
    assert created and path == cwd / "attn-lab" / "attention.py"
    assert path.read_text() == STARTER
    assert os.stat(path).st_mode & 0o777 == 0o644


def test_never_overwrites(cwd: Path, lesson: FakeLesson):
    path = solution_path(cwd, lesson)
    path.parent.mkdir()
    path.write_text("my work\n")
    assert ensure_solution(cwd, lesson) == (path, False)
    assert path.read_text() == "my work\n"
    # an empty file is still the learner's
    path.write_text("")
    assert ensure_solution(cwd, lesson) == (path, False)
    assert path.read_text() == ""


def test_never_follows_a_symlink_over_another_file(cwd: Path, lesson: FakeLesson, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text("keep\n")
    path = solution_path(cwd, lesson)
    path.parent.mkdir()
    path.symlink_to(elsewhere)
    assert ensure_solution(cwd, lesson) == (path, False)
    assert elsewhere.read_text() == "keep\n"


def test_reset_backs_up_then_restores_starter(cwd: Path, lesson: FakeLesson):
    path, _ = ensure_solution(cwd, lesson)
    path.write_text(LEARNER)
    path.chmod(0o640)
    when = datetime(2025, 3, 4, 5, 6, 7)
    kept = reset(path, lesson.starter_path, now=when)
    assert kept == cwd / "attn-lab" / ".attn-tutor" / "backups" / "attention.20250304-050607.py"
    assert kept.read_text() == LEARNER
    assert path.read_text() == STARTER
    assert os.stat(path).st_mode & 0o777 == 0o640  # the learner's permissions stay
    # twice in the same second: a second, distinct backup
    path.write_text("second try\n")
    again = reset(path, lesson.starter_path, now=when)
    assert again != kept and again.read_text() == "second try\n" and kept.read_text() == LEARNER
    assert again.name.startswith("attention.20250304-050607") and again.suffix == ".py"
    assert [p.name for p in path.parent.iterdir() if not p.name.startswith(".")] == ["attention.py"]


def test_reset_of_a_missing_file_just_creates_it(cwd: Path, lesson: FakeLesson):
    path = solution_path(cwd, lesson)
    path.parent.mkdir()
    assert reset(path, lesson.starter_path) is None
    assert path.read_text() == STARTER


def test_reset_function_replaces_only_the_named_one(cwd: Path, lesson: FakeLesson):
    path, _ = ensure_solution(cwd, lesson)
    path.write_text(LEARNER)
    kept = reset_function(path, lesson.starter_path, ["scores"])
    assert kept.read_text() == LEARNER
    expected = LEARNER.replace(
        "    # my attempt\n    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n",
        "    # TODO: q @ k^T / sqrt(d)\n    raise NotImplementedError\n",
    )
    assert expected != LEARNER
    assert path.read_bytes() == expected.encode()


def test_reset_function_with_decorator_and_class(cwd: Path, lesson: FakeLesson):
    path, _ = ensure_solution(cwd, lesson)
    path.write_text(LEARNER)
    reset_function(path, lesson.starter_path, ["mask", "Head"])
    text = path.read_text()
    assert "return torch.tril" not in text and "return x" not in text
    assert text.count("@staticmethod") == 1
    assert "# a note between functions\nclass Head:" in text  # the comment above is the learner's
    assert "    # my attempt\n" in text and "import torch  # the learner added this\n" in text


def test_reset_function_keeps_crlf_and_missing_final_newline(cwd: Path, lesson: FakeLesson):
    path, _ = ensure_solution(cwd, lesson)
    learner = LEARNER.rstrip("\n").replace("\n", "\r\n")
    path.write_bytes(learner.encode())
    reset_function(path, lesson.starter_path, ["Head"])
    raw = path.read_bytes()
    assert raw.endswith(b"raise NotImplementedError") and b"\n" not in raw.replace(b"\r\n", b"")
    assert raw.startswith(learner.split("class Head")[0].encode())


def test_reset_function_puts_back_a_deleted_function(cwd: Path, lesson: FakeLesson):
    path, _ = ensure_solution(cwd, lesson)
    without = LEARNER.split("\n\n@staticmethod")[0] + "\n"
    path.write_text(without)
    reset_function(path, lesson.starter_path, ["mask"])
    text = path.read_text()
    assert text.startswith(without) and text.endswith(
        "def mask(t):\n    raise NotImplementedError\n"
    )


def test_unparsable_file_raises_and_is_untouched(cwd: Path, lesson: FakeLesson):
    path, _ = ensure_solution(cwd, lesson)
    broken = LEARNER.replace("def scores(q, k):", "def scores(q, k)")
    path.write_text(broken)
    with pytest.raises(ValueError):
        reset_function(path, lesson.starter_path, ["scores"])
    assert path.read_text() == broken
    assert not (path.parent / ".attn-tutor" / "backups").exists()


def test_unknown_name_raises_and_is_untouched(cwd: Path, lesson: FakeLesson):
    path, _ = ensure_solution(cwd, lesson)
    path.write_text(LEARNER)
    with pytest.raises(ValueError):
        reset_function(path, lesson.starter_path, ["scores", "nope"])
    assert path.read_text() == LEARNER


def test_one_line_def_and_duplicate_definitions(cwd: Path, lesson: FakeLesson):
    path, _ = ensure_solution(cwd, lesson)
    learner = "def scores(q, k): return 1; x = 2\nY = 1\ndef scores(q, k): return 3\nZ = 2\n"
    path.write_text(learner)
    reset_function(path, lesson.starter_path, ["scores"])
    assert path.read_text() == (
        "def scores(q, k): return 1; x = 2\nY = 1\n"  # the shadowed first one is left alone
        "def scores(q, k):\n    # TODO: q @ k^T / sqrt(d)\n    raise NotImplementedError\nZ = 2\n"
    )


def test_invalid_utf8_raises_and_is_untouched(cwd: Path, lesson: FakeLesson):
    path, _ = ensure_solution(cwd, lesson)
    path.write_bytes(b"x = '\xff'\n")
    with pytest.raises(ValueError):
        reset_function(path, lesson.starter_path, ["scores"])
    assert path.read_bytes() == b"x = '\xff'\n"
