"""Cleanup removes any tree a learner's child can make, and a sweep never stops a start
(tutor/engine/confine/remove_tree.py, leftovers.py). Real folders on disk."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess

import pytest

from tutor.engine.confine import leftovers
from tutor.engine.confine.remove_tree import remove_tree


def deep(root, depth: int, name: str = "d") -> None:
    """A chain `depth` folders deep, made fd-relative (its path is longer than PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("leaf", os.O_WRONLY | os.O_CREAT, dir_fd=fd), "w") as f:
            f.write("bottom")
    finally:
        os.close(fd)


@pytest.fixture(autouse=True)
def _no_deep_tree_left(tmp_path):
    """A tree these tests make and the code under test fails to remove would stay in pytest's
    temporary folders, whose own cleanup (shutil.rmtree) dies on it in a later run."""
    yield
    subprocess.run(["rm", "-rf", "--one-file-system", str(tmp_path)], check=False)


def dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_a_tree_deeper_than_the_recursion_limit_is_removed(tmp_path):
    root = tmp_path / "scratch"
    root.mkdir()
    deep(root, 3500, name="x\ny")  # names with a newline too
    assert remove_tree(str(root)) and not root.exists()


def test_depth_costs_no_file_descriptors(tmp_path):
    root = tmp_path / "scratch"
    root.mkdir()
    deep(root, 400)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
    try:
        assert remove_tree(str(root))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert not root.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root passes any mode")
def test_modes_the_child_set_do_not_keep_it(tmp_path):
    root = tmp_path / "scratch"
    for i, mode in enumerate((0o000, 0o500, 0o100, 0o300)):
        sub = root / f"m{i}" / "inner"
        sub.mkdir(parents=True)
        (sub / "f").write_text("x")
        (sub / "f").chmod(0o000)
        sub.chmod(mode)
        (root / f"m{i}").chmod(mode)
    assert remove_tree(str(root)) and not root.exists()


def test_modes_as_any_user(tmp_path):
    root = tmp_path / "scratch"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("x")
    (root / "a" / "b").chmod(0o000)
    (root / "a").chmod(0o500)
    assert remove_tree(str(root)) and not root.exists()


def test_wide_trees_and_links_out_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "keep").write_text("not the tutor's")
    root = tmp_path / "scratch"
    root.mkdir()
    for i in range(3000):
        (root / f"f{i}").write_text("")
    for i in range(300):
        (root / f"d{i}").mkdir()
        (root / f"d{i}" / "link").symlink_to(outside, target_is_directory=True)
    (root / "top").symlink_to(outside)
    (root / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(root / "fifo")
    assert remove_tree(str(root)) and not root.exists()
    assert (outside / "keep").read_text() == "not the tutor's" and (outside / "sub").is_dir()


def test_a_link_given_as_the_folder_is_removed_not_entered(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    link = tmp_path / "scratch"
    link.symlink_to(outside, target_is_directory=True)
    assert remove_tree(str(link)) and not os.path.lexists(link)
    assert (outside / "keep").exists()


def test_a_sweep_removes_a_deep_tree_and_never_raises(tmp_path, monkeypatch, capsys):
    gone = tmp_path / f"attn-run-{leftovers.tag(dead_pid())}-abc123"
    gone.mkdir()
    deep(gone, 3000)
    assert leftovers.sweep_scratch(str(tmp_path)) == [str(gone)]
    assert not gone.exists()

    stuck = tmp_path / f"attn-run-{leftovers.tag(dead_pid())}-def456"
    stuck.mkdir()

    def broken(path, *a):
        raise RecursionError("a bug of ours")

    monkeypatch.setattr(leftovers, "remove_tree", broken)
    assert leftovers.sweep_scratch(str(tmp_path)) == []  # said, not raised
    assert "RecursionError" in capsys.readouterr().err
    monkeypatch.setattr(shutil, "rmtree", broken)  # and no path of the sweep uses it
    monkeypatch.undo()
    assert leftovers.sweep_scratch(str(tmp_path)) == [str(stuck)]
