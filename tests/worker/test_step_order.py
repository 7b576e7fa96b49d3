"""A run's checked steps go to their child in the order the request lists them: the app lists
the learner's step first, so its verdict comes first."""

from __future__ import annotations

from worker_kit import FILENAME, REFERENCE

LM3 = "lm3-l3"


def test_the_steps_run_and_report_in_the_requests_order(session_worker):
    for order in (
        ["multi-head", "single-head", "shapes", "leakage"],
        ["shapes", "leakage", "multi-head", "single-head"],
    ):
        results = session_worker.run_steps(LM3, FILENAME[LM3], REFERENCE[LM3], order)
        assert list(results) == order
        assert all(r.status == "pass" for r in results.values())


def test_a_step_listed_twice_or_unknown_runs_once_or_not_at_all(session_worker):
    order = ["shapes", "no-such-step", "single-head", "shapes"]
    results = session_worker.run_steps(LM3, FILENAME[LM3], REFERENCE[LM3], order)
    assert list(results) == ["shapes", "single-head"]
