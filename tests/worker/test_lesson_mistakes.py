"""Every lesson's known mistakes (lessons/<id>/mistakes.toml), run through the real worker: each
must give, step by step, what it says (the step it fails, the check, the diagnosis' keys), and
every other checked step must pass. A lesson added to lessons/ gets this proof with no line
here; `attn-tutor dev check` runs the same mistakes for a course's own lesson.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from worker_kit import CHECKED_STEPS, LESSONS, REFERENCE, shared_run, summary

from tutor import toml
from tutor.model.mistakes import mistake_source, read_mistakes, unmet

MISTAKES = {lesson.id: read_mistakes(lesson.folder / "mistakes.toml") for lesson in LESSONS}
FOLDER = {lesson.id: lesson.folder for lesson in LESSONS}


def _cases():
    for lesson, (mistakes, _) in MISTAKES.items():
        for m in mistakes:
            key = f"{lesson}:{m.id}"
            yield pytest.param(lesson, m, id=key, marks=shared_run(key))


CASES = list(_cases())


def test_every_mistakes_file_reads_whole():
    assert {lesson: problems for lesson, (_, problems) in MISTAKES.items()} == {
        lesson: [] for lesson in MISTAKES
    }


def test_each_built_in_lesson_has_its_mistakes():
    """Issue 26: at least 25 per lesson, every checked step failed by some of them."""
    for lesson in ("lm3-l3", "lab-02", "kv-cache"):
        mistakes = MISTAKES[lesson][0]
        assert len(mistakes) >= 25, lesson
        assert {s for m in mistakes for s in m.steps} == set(CHECKED_STEPS[lesson]), lesson


def test_ids_are_unique_and_each_source_differs_from_the_reference():
    for lesson, (mistakes, _) in MISTAKES.items():
        assert len({m.id for m in mistakes}) == len(mistakes), lesson
        sources = [mistake_source(m, REFERENCE[lesson], FOLDER[lesson]) for m in mistakes]
        assert REFERENCE[lesson] not in sources, lesson
        assert len(set(sources)) == len(sources), f"{lesson}: two mistakes are the same file"


@pytest.mark.parametrize("lesson, mistake", CASES)
def test_a_known_mistake_gives_what_it_says(run_unwatched, run_unhurried, lesson, mistake):
    """As `dev check` and `check` run it: the judge waits for the diagnosis from behaviour
    (the app's first verdict may not have it yet)."""
    source = mistake_source(mistake, REFERENCE[lesson], FOLDER[lesson])
    results = run_unwatched(lesson, source)
    if any(r.status == "timeout" for r in results.values()):  # a busy machine's, not the file's
        results = run_unhurried(lesson, source, False)
    problems = unmet(results, CHECKED_STEPS[lesson], mistake.expect)
    assert not problems, "\n".join(problems) + "\n" + summary(results)


@pytest.mark.parametrize("lesson", [lesson.id for lesson in LESSONS])
def test_every_check_is_the_one_some_mistake_fails(run, lesson):
    """Issue 26: deleting or weakening any check of a lesson makes a known mistake give other
    than it says, so dev check fails. A check no mistake names as the one its step fails could
    go unseen; the lesson must then say why no mistake can reach it ([unproven])."""
    reference = run(lesson, REFERENCE[lesson])
    mistakes = MISTAKES[lesson][0]
    named = {f"{s}/{e.check}" for m in mistakes for s, e in m.expect.items() if e.check}
    said = toml.loads((FOLDER[lesson] / "mistakes.toml").read_text("utf-8")).get("unproven", {})
    checks = {f"{r.id}/{c.id}" for r in reference.values() for c in r.checks}
    assert checks - named - set(said) == set(), "checks no mistake proves"
    assert set(said) <= checks, "[unproven] names a check the lesson does not have"
    assert not set(said) & named, "[unproven] names a check a mistake proves"


def test_a_check_taken_away_leaves_its_mistakes_unmet(run):
    """What deleting a check does, on real results: the mistakes that name it no longer give what
    they say (each one's step now passes that check), whatever the other checks do."""
    lesson = "lab-02"
    for m in MISTAKES[lesson][0][:12]:
        results = run(lesson, mistake_source(m, REFERENCE[lesson], FOLDER[lesson]))
        for step, e in m.expect.items():
            if e.check is None:
                continue
            r = results[step]
            gone = [c for c in r.checks if c.id != e.check]
            without = {**results, step: replace(r, checks=gone)}
            assert unmet(without, CHECKED_STEPS[lesson], m.expect), (m.id, step, e.check)
