"""pids_cgroup.Bound keeps emptied folders for the next children instead of removing and
making one per child. Plain folders stand in for cgroupfs here: the kernel's own files
(cgroup.procs) are written by the test."""

from __future__ import annotations

import os
from pathlib import Path

from tutor.engine.confine import pids_cgroup
from tutor.engine.confine.pids_cgroup import LIMIT, POOL, Bound


def emptied(folder: str, pids: str = "") -> None:
    with open(os.path.join(folder, "cgroup.procs"), "w") as f:
        f.write(pids)


def test_an_emptied_folder_is_bounded_again_for_the_next_child(tmp_path):
    bound = Bound(str(tmp_path))
    first = bound.make("1")
    assert Path(first, "pids.max").read_text() == str(LIMIT)
    bound.adopt(first, 101)
    emptied(first)
    with open(os.path.join(first, "pids.max"), "w") as f:
        f.write("max")  # what a run without Landlock could have done to its own folder
    bound.remove(101)
    again = bound.make("2")
    assert again == first and not os.path.exists(os.path.join(bound.root, "2"))
    assert Path(again, "pids.max").read_text() == str(LIMIT)


def test_a_folder_still_holding_a_task_is_not_reused(tmp_path):
    bound = Bound(str(tmp_path))
    folder = bound.make("1")
    bound.adopt(folder, 101)
    emptied(folder, "4242\n")  # an orphan of the run, not yet killed
    bound.remove(101)
    assert folder in bound.left and not bound.free
    assert bound.make("2") != folder


def test_the_pool_is_bounded(tmp_path):
    bound = Bound(str(tmp_path))
    folders = [bound.make(str(i)) for i in range(POOL + 2)]
    for pid, folder in enumerate(folders):
        bound.adopt(folder, pid)
        emptied(folder)
        bound.remove(pid)
    assert len(bound.free) == POOL
    assert (
        len(bound.left) == 2
    )  # plain folders with files in them: rmdir fails, as for a busy cgroup


def test_no_pool_without_cgroup_procs(tmp_path, monkeypatch):
    bound = Bound(str(tmp_path))
    folder = bound.make("1")
    bound.adopt(folder, 7)
    bound.remove(7)  # cgroup.procs cannot be read: not known to be empty
    assert not bound.free and folder in bound.left
    assert pids_cgroup.POOL >= 1
