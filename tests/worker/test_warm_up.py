"""A spare child runs each lesson's warm-up file (warmup.py: a solution's torch operations, wrong
on purpose) once before its job (sandbox._warm_up), so that the learner's run does not pay for
the fork's first touches. Nothing of that run may reach the learner's: no output, no module, no
exception, no change to torch's random state."""

from __future__ import annotations

import os
import sys
import textwrap

import torch

from tutor.engine import child as sandbox
from tutor.engine import protocol as messages
from tutor.engine.checks_loader import compiled_runs, load_checks, runs_for, warm_up_runs
from tutor.model.lesson import all_lessons

LESSONS = all_lessons()
CHECKS = load_checks(LESSONS)
INPUTS = {lesson_id: module.make_inputs() for lesson_id, module in CHECKS.items()}


def runs_of(source: str, lesson_id: str = "lm3-l3") -> list[tuple]:
    lesson = next(lesson for lesson in LESSONS if lesson.id == lesson_id)
    return [
        (
            lesson.id,
            lesson.file_name,
            source,
            compile(source, lesson.file_name, "exec"),
            [step.id for step in lesson.checked_steps],
        )
    ]


def warm_runs() -> list[tuple]:
    return compiled_runs(warm_up_runs(LESSONS))


def test_every_lesson_warms_up_on_its_warmup_file_and_checked_steps():
    runs = warm_runs()
    assert [run[0] for run in runs] == [lesson.id for lesson in LESSONS]
    for (lesson_id, file_name, source, _code, steps), lesson in zip(runs, LESSONS, strict=False):
        assert file_name == lesson.file_name
        assert lesson.warmup_path.is_file(), lesson.id  # every built-in lesson has one
        assert source == lesson.warmup_path.read_text(encoding="utf-8")
        assert source != lesson.reference_path.read_text(encoding="utf-8")
        assert steps == [step.id for step in lesson.checked_steps] and steps
        assert set(steps) <= set(CHECKS[lesson_id].STEPS)


def test_a_lesson_without_a_warmup_file_warms_up_on_its_starter(tmp_path):
    import shutil

    from tutor.model.lesson import load_lesson

    lesson = LESSONS[0]
    copy = tmp_path / lesson.id
    shutil.copytree(lesson.folder, copy, ignore=shutil.ignore_patterns("warmup.py"))
    ((lesson_id, _, source, _),) = warm_up_runs([load_lesson(copy)])
    assert lesson_id == lesson.id
    assert source == lesson.starter_path.read_text(encoding="utf-8")


def test_spares_warm_up_on_the_lesson_in_use_or_on_all_before_the_first_run():
    runs = warm_runs()
    assert runs_for(runs, None) == runs
    for lesson in LESSONS:
        assert [run[0] for run in runs_for(runs, lesson.id)] == [lesson.id]


def test_each_warmup_file_runs_every_step_it_warms_up_to_the_end():
    # A warm-up that fails half-way warms only half: each step's probe must run to the end
    # (its outputs wrong, which the judge says, not an exception in the child).
    for lesson_id, file_name, source, code, steps in warm_runs():
        for step in steps:
            message, _ = sandbox._run(
                {"source": source, "filename": file_name},
                step,
                code,
                CHECKS[lesson_id],
                INPUTS[lesson_id],
            )
            assert isinstance(message, messages.Outputs), (lesson_id, step, message)


def test_warm_up_leaves_no_output_module_or_random_state(capfd):
    source = textwrap.dedent("""
        import sys, torch
        print("printed at import")
        print("to stderr", file=sys.stderr)
        torch.manual_seed(1234)
        def causal_attention(x, Wq, Wk, Wv):
            print("printed in a call")
            torch.randn(100)
            raise SystemExit(3)
        """)
    torch.manual_seed(7)
    before = torch.get_rng_state()
    streams = sys.stdout, sys.stderr
    sandbox._warm_up(runs_of(source), CHECKS, INPUTS)
    assert (sys.stdout, sys.stderr) == streams
    assert torch.equal(torch.get_rng_state(), before)
    assert "learner" not in sys.modules
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_warm_up_leaves_no_source_in_linecache():
    """load_learner gives linecache each file's lines (torch.jit.script reads them there): after
    the warm-up the warm-up files' must be gone: a learner finds only its own file there."""
    import linecache

    linecache.clearcache()  # what the tests above ran through sandbox._run themselves
    sandbox._warm_up(warm_runs(), CHECKS, INPUTS)
    lesson = LESSONS[0]
    assert lesson.file_name not in linecache.cache
    kept = [
        name
        for name, entry in linecache.cache.items()
        if len(entry) == 4 and entry[2] and entry[2][0].startswith('"""Warm-up for')
    ]
    assert not kept


def test_a_failing_warm_up_is_not_the_learners_failure():
    # A reference that cannot even be imported (say, a newer torch broke it) only costs speed.
    sandbox._warm_up(runs_of("raise KeyboardInterrupt\n"), CHECKS, INPUTS)
    sandbox._warm_up(runs_of("x = 1\n"), {}, INPUTS)  # no checks for the lesson: a KeyError inside
    assert "learner" not in sys.modules


def test_a_job_that_comes_stops_the_warm_up(monkeypatch):
    ran = []
    real_run = sandbox._run
    monkeypatch.setattr(
        sandbox, "_run", lambda job, step, *args: ran.append(step) or real_run(job, step, *args)
    )
    runs = warm_runs()
    read_end, write_end = os.pipe()
    try:
        sandbox._warm_up(runs, CHECKS, INPUTS, read_end)
        assert len(ran) == sum(len(run[4]) for run in runs)  # nothing waiting: every step
        ran.clear()
        os.write(write_end, b"{}")
        sandbox._warm_up(runs, CHECKS, INPUTS, read_end)
        assert ran == []
    finally:
        os.close(read_end)
        os.close(write_end)


def _first_run(first_lesson: str | None) -> dict[str, str]:
    """An lm3-l3 run through a worker whose client named `first_lesson` as the one it opens."""
    from worker_kit import reference_statuses

    from tutor.engine.client import EngineClient

    client = EngineClient(None, timeout=15.0, lesson=first_lesson)
    client.start()
    try:
        assert client.ready.wait(60)
        return reference_statuses(client, "lm3-l3")
    finally:
        client.close()


def test_spares_warmed_on_another_lesson_or_an_unknown_one_still_judge_right():
    # The client's first lesson only picks the spares' warm-up: a run of another lesson, or a
    # name no lesson has, is judged as ever.
    for first in ("lab-02", "no-such-lesson"):
        results = _first_run(first)
        assert results and set(results.values()) == {"pass"}, (first, results)


def zygote_state(batch: bool = False) -> dict:
    return {
        "batch": batch,
        "warm": warm_runs(),
        "queue": [],
        "warmed": set(),
        "modules": CHECKS,
        "inputs": INPUTS,
    }


def test_the_apps_zygote_warms_a_lesson_step_by_step_then_its_spares_skip_theirs():
    from tutor.engine import zygote

    state = zygote_state()
    lab = next(lesson for lesson in LESSONS if lesson.id == "lab-02")
    steps = [step.id for step in lab.checked_steps]
    assert [run[0] for run in zygote.spare_warm_up(state, "lab-02")] == ["lab-02"]
    zygote._queue_warm_up(state, "lab-02")
    zygote._queue_warm_up(state, "lab-02")  # a second spare of the same lesson: queued once
    assert [(run[0], step) for run, step in state["queue"]] == [("lab-02", s) for s in steps]
    rng = torch.get_rng_state()
    while len(state["queue"]) > 1:
        zygote._warm_one(state)
        assert "lab-02" not in state["warmed"]  # a spare forked half-way warms up by itself
        assert zygote.spare_warm_up(state, "lab-02")
    zygote._warm_one(state)
    assert state["warmed"] == {"lab-02"} and not state["queue"]
    assert zygote.spare_warm_up(state, "lab-02") == []
    assert [run[0] for run in zygote.spare_warm_up(state, "lm3-l3")] == ["lm3-l3"]
    assert torch.equal(torch.get_rng_state(), rng)
    assert "learner" not in sys.modules


def test_grades_zygote_warms_up_at_its_setup_not_in_idle_time():
    from tutor.engine import zygote

    state = zygote_state(batch=True)
    zygote._queue_warm_up(state, "lab-02")
    assert state["queue"] == [] and zygote.spare_warm_up(state, "lab-02") == []
    state = zygote_state()
    zygote._queue_warm_up(state, None)  # no lesson known yet: spares warm up on every lesson
    assert state["queue"] == [] and zygote.spare_warm_up(state, None) == state["warm"]
