"""The mutants' outputs kept on disk (engine/mutant_cache.py): a judge started later, `check`
run again, a new app, gets the diagnosis from behaviour at once, without running them again."""

from __future__ import annotations

import os
import shutil

import pytest
import torch
from test_behaviour_background import FILL, LESSON, STEP, _likely, _payload
from worker_kit import REFERENCE

from tutor.engine import mutant_cache
from tutor.engine.checks_loader import load_checks
from tutor.engine.judge import Judge
from tutor.model.lesson import all_lessons


def _judge(root) -> Judge:
    torch.set_num_threads(1)
    return Judge(load_checks([x for x in all_lessons() if x.id == LESSON]), cache_root=root)


SOURCE = REFERENCE[LESSON].replace(*FILL)


def test_a_later_judge_reads_the_mutants_from_disk(tmp_path):
    first = _judge(tmp_path)
    said = first.verdict(LESSON, STEP, _payload(first, SOURCE), SOURCE, wait=True)
    assert _likely(said) == "likely.behaves_as"
    kept = list(tmp_path.rglob("*.bin"))
    assert len(kept) > 10, kept  # the reference and the step's mutants

    later = _judge(tmp_path)
    again = later.verdict(LESSON, STEP, _payload(later, SOURCE), SOURCE, wait=False)
    assert _likely(again) == "likely.behaves_as"  # at once: the app's first save
    assert not later.behaviour._running and not later.behaviour._queued


def test_a_broken_file_is_run_again(tmp_path):
    first = _judge(tmp_path)
    first.verdict(LESSON, STEP, _payload(first, SOURCE), SOURCE, wait=True)
    for path in tmp_path.rglob("*.bin"):
        path.write_bytes(b"\x00garbage")
    later = _judge(tmp_path)
    again = later.verdict(LESSON, STEP, _payload(later, SOURCE), SOURCE, wait=True)
    assert _likely(again) == "likely.behaves_as"
    assert all(p.read_bytes() != b"\x00garbage" for p in tmp_path.rglob("*.bin"))


def test_a_cache_that_cannot_be_written_costs_only_the_cache(tmp_path):
    root = tmp_path / "cache"
    root.write_text("a file where the folder would be")
    judge = _judge(root)
    said = judge.verdict(LESSON, STEP, _payload(judge, SOURCE), SOURCE, wait=True)
    assert _likely(said) == "likely.behaves_as"


def test_a_lesson_changed_is_a_new_version(tmp_path):
    lesson = next(x for x in all_lessons() if x.id == LESSON)
    folder = tmp_path / "lesson"
    shutil.copytree(lesson.folder, folder)
    before = mutant_cache.fingerprint(folder, REFERENCE[LESSON])
    assert before == mutant_cache.fingerprint(folder, REFERENCE[LESSON])
    (folder / "mistakes.toml").write_text((folder / "mistakes.toml").read_text() + "\n# edited\n")
    assert mutant_cache.fingerprint(folder, REFERENCE[LESSON]) != before
    assert mutant_cache.fingerprint(folder, REFERENCE[LESSON] + "\n") != before


@pytest.mark.parametrize("versions", [2, 5])
def test_prune_keeps_the_newest_versions(tmp_path, versions):
    for i in range(versions):
        (tmp_path / f"v{i}").mkdir()
        os.utime(tmp_path / f"v{i}", (1000 + i, 1000 + i))
    mutant_cache.prune(tmp_path, keep=3)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [f"v{i}" for i in range(max(0, versions - 3), versions)]


def test_other_inputs_are_other_files(tmp_path):
    """A `grade --seed` judge makes other inputs: the mutants' outputs on the lab's never stand
    in for them."""
    first = _judge(tmp_path)
    first.verdict(LESSON, STEP, _payload(first, SOURCE), SOURCE, wait=True)
    kept = {p.name for p in tmp_path.rglob("*.bin")}
    seeded = _judge(tmp_path)
    seeded._inputs[LESSON] = seeded.modules[LESSON].make_inputs(seed=7)
    said = seeded.verdict(LESSON, STEP, _payload(seeded, SOURCE), SOURCE, wait=True)
    assert _likely(said) == "likely.behaves_as"
    assert len({p.name for p in tmp_path.rglob("*.bin")} - kept) == len(kept)
