"""`check` and `grade` run without views (ctx.views and jctx.views False): the probes and
judges skip what only feeds the heatmaps, leakage maps and shape trace. The verdicts must be
the very same. Every learner file the worker tests build, and each lesson's starter and
reference, is judged both ways and compared check by check, as `check --json` words it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import test_correct_styles
import test_kv_cache
import test_trainable_layer
from worker_kit import LESSONS, REFERENCE, STARTER, learner_file, shared_run

from tutor.model.mistakes import mistake_source, read_mistakes
from tutor.model.records import is_generic, is_message, local
from tutor.text.verdict_text import check_text

KV, LM3 = test_kv_cache.KV, test_trainable_layer.LM3


def _corpus() -> list[tuple[str, str, str]]:
    """(id, lesson, source) of every file."""
    files = []
    for lesson in LESSONS:
        files += [
            (f"{lesson.id}-reference", lesson.id, REFERENCE[lesson.id]),
            (f"{lesson.id}-starter", lesson.id, STARTER[lesson.id]),
        ]
    for lesson in LESSONS:
        mistakes, _ = read_mistakes(lesson.folder / "mistakes.toml")
        for m in mistakes:
            source = mistake_source(m, REFERENCE[lesson.id], lesson.folder)
            files.append((f"{lesson.id}:{m.id}", lesson.id, source))
    for params in test_kv_cache.CORRECT:
        replace, header, _ = params.values
        files.append((params.id, KV, learner_file(KV, replace, header)))
    for name, replace in test_trainable_layer.CORRECT.items():
        files.append((name, LM3, learner_file(LM3, replace)))
    for params in test_correct_styles.STYLES:
        lesson, replace, header = params.values
        files.append((params.id, lesson, learner_file(lesson, replace, header)))
    return files


CORPUS = _corpus()


def timed_out(results) -> bool:
    return any(r.status == "timeout" for r in results.values())


BEHAVIOUR = {
    "likely.behaves_as",
    "likely.behaves_as_one",
    "likely.behaves_as_two",
    "likely.behaviour_differs",
}


def _likely(check):
    likely = check.message.params.get("likely") if check.message else None
    return likely if is_message(likely) else None


def _from_behaviour(results) -> set[tuple[str, str]]:
    return {
        (sid, c.id)
        for sid, r in results.items()
        for c in r.checks
        if (likely := _likely(c)) and local(likely["key"]) in BEHAVIOUR
    }


def _unwaited(check):
    """The check without its diagnosis, where that is generic or from behaviour."""
    likely = _likely(check)
    if likely is None or not (local(likely["key"]) in BEHAVIOUR or is_generic(likely)):
        return check
    params = {k: v for k, v in check.message.params.items() if k != "likely"}
    return replace(check, message=replace(check.message, params=params))


def said(results, unwaited: set[tuple[str, str]] = frozenset()) -> dict:
    """As `check --json` words it. unwaited: the checks whose diagnosis one side took from
    behaviour: the app never waits for the lesson's mutants (engine/behaviour.py), so its verdict
    may give the generic diagnosis there, or the other way round; all else must be equal."""
    return {
        sid: (
            r.status,
            r.failure and r.failure.kind,
            [
                (
                    c.id,
                    c.status,
                    check_text(_unwaited(c) if (sid, c.id) in unwaited else c, "en", cli=True),
                )
                for c in r.checks
            ],
        )
        for sid, r in results.items()
    }


def test_the_corpus_is_the_worker_tests_files():
    assert len(CORPUS) > 200
    assert {lesson for _, lesson, _ in CORPUS} == {lesson.id for lesson in LESSONS}


@pytest.mark.parametrize(
    "lesson, source", [pytest.param(each, s, id=i, marks=shared_run(i)) for i, each, s in CORPUS]
)
def test_the_same_verdicts_without_views(run, run_unwatched, run_unhurried, lesson, source):
    with_views, without = run(lesson, source), run_unwatched(lesson, source)
    if timed_out(with_views) or timed_out(without):  # the machine's doing, not the views'
        with_views, without = (
            run_unhurried(lesson, source, True),
            run_unhurried(lesson, source, False),
        )
    unwaited = _from_behaviour(without) | _from_behaviour(with_views)
    assert said(without, unwaited) == said(with_views, unwaited)
    assert not any(r.visuals.get("heatmaps") for r in without.values())


def test_without_views_the_probes_skip_the_views_calls(run, run_unwatched):
    """The leakage map and the shape trace are what views cost: gone without views."""
    with_views, without = run(LM3, REFERENCE[LM3]), run_unwatched(LM3, REFERENCE[LM3])
    assert with_views["multi-head"].visuals.get("view") and with_views["multi-head"].visuals.get(
        "heatmaps"
    )
    assert not without["multi-head"].visuals
    assert not without["single-head"].visuals and not without["leakage"].visuals
