"""leftovers: what a killed worker left is removed by the next one, and nothing of a live one."""

import os

from tutor.engine.confine import leftovers


def dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_a_dead_workers_scratch_folders_go_and_live_ones_stay(tmp_path):
    dead = dead_pid()
    gone = tmp_path / f"attn-run-{leftovers.tag(dead)}-abc123"
    (gone / "sub").mkdir(parents=True)
    (gone / "sub" / "file").write_text("left by a learner's run")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "keep").write_text("not the tutor's")
    (gone / "link").symlink_to(outside, target_is_directory=True)
    mine = tmp_path / f"attn-run-{leftovers.tag()}-def456"  # this process's: alive
    parent = tmp_path / f"attn-run-{leftovers.tag(os.getppid())}-ghi789"  # alive too
    other_namespace = tmp_path / f"attn-run-1-{dead}-jkl012"
    old_style = tmp_path / "attn-run-mno345"
    unrelated = tmp_path / f"other-{leftovers.tag(dead)}"
    for folder in (mine, parent, other_namespace, old_style, unrelated):
        folder.mkdir()

    assert leftovers.sweep_scratch(str(tmp_path)) == [str(gone)]
    assert not gone.exists()
    assert (outside / "keep").read_text() == "not the tutor's"  # the link was not followed
    assert all(f.exists() for f in (mine, parent, other_namespace, old_style, unrelated))


def test_a_scratch_file_not_folder_is_left(tmp_path):
    stray = tmp_path / f"attn-run-{leftovers.tag(dead_pid())}-abc123"
    stray.write_text("x")
    assert leftovers.sweep_scratch(str(tmp_path)) == []
    assert stray.exists()


def test_a_dead_workers_cgroups_go_unless_busy(tmp_path):
    dead = dead_pid()
    gone = tmp_path / f"attn-tutor-{leftovers.tag(dead)}"
    (gone / "1").mkdir(parents=True)
    (gone / "2").mkdir()
    busy = tmp_path / f"attn-tutor-{leftovers.tag(dead_pid())}"
    (busy / "1").mkdir(parents=True)
    (busy / "1" / "cgroup.procs").write_text(
        "123\n"
    )  # a plain folder with a file: rmdir fails, as on a busy cgroup
    alive = tmp_path / f"attn-tutor-{leftovers.tag()}"
    alive.mkdir()

    assert leftovers.sweep_cgroups(str(tmp_path)) == [str(gone)]
    assert not gone.exists() and busy.exists() and alive.exists()
    assert leftovers.sweep_cgroups(None) == []
