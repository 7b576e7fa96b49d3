"""`check` and `grade` run without views (ctx.views and jctx.views False): the probes and
judges skip what only feeds the heatmaps, leakage maps and shape trace. The verdicts must be
the very same. Every learner file the worker tests build, and each lesson's starter and
reference, is judged both ways and compared check by check, as `check --json` words it.
"""

from __future__ import annotations

import pytest
import test_correct_styles
import test_kv_cache
import test_trainable_layer
from worker_kit import LESSONS, REFERENCE, STARTER, SessionWorker, learner_file

from tutor.model.mistakes import mistake_source, read_mistakes
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


@pytest.fixture(scope="module")
def run_without_views():
    worker = SessionWorker(views=False)
    worker.start()
    try:
        yield worker.run
    finally:
        worker.close()


def timed_out(results) -> bool:
    return any(r.status == "timeout" for r in results.values())


def said(results) -> dict:
    return {
        sid: (
            r.status,
            r.failure and r.failure.kind,
            [(c.id, c.status, check_text(c, "en", cli=True)) for c in r.checks],
        )
        for sid, r in results.items()
    }


def test_the_corpus_is_the_worker_tests_files():
    assert len(CORPUS) > 200
    assert {lesson for _, lesson, _ in CORPUS} == {lesson.id for lesson in LESSONS}


@pytest.mark.parametrize("lesson, source", [pytest.param(each, s, id=i) for i, each, s in CORPUS])
def test_the_same_verdicts_without_views(run, run_without_views, run_unhurried, lesson, source):
    with_views, without = run(lesson, source), run_without_views(lesson, source)
    if timed_out(with_views) or timed_out(without):  # the machine's doing, not the views'
        with_views, without = (
            run_unhurried(lesson, source, True),
            run_unhurried(lesson, source, False),
        )
    assert said(without) == said(with_views)
    assert not any(r.visuals.get("heatmaps") for r in without.values())


def test_without_views_the_probes_skip_the_views_calls(run, run_without_views):
    """The leakage map and the shape trace are what views cost: gone without views."""
    with_views, without = run(LM3, REFERENCE[LM3]), run_without_views(LM3, REFERENCE[LM3])
    assert with_views["multi-head"].visuals.get("view") and with_views["multi-head"].visuals.get(
        "heatmaps"
    )
    assert not without["multi-head"].visuals
    assert not without["single-head"].visuals and not without["leakage"].visuals
