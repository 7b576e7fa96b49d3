"""Kept runs (client.EngineClient(keep=True), `attn-tutor grade`): runs side by side in one worker,
none superseding another, each reported under its own gen; a hang among them costs only its
own run. And a worker started with a seed (ATTN_TUTOR_SEED) draws every check's inputs from it.
A worker of its own here: the session worker's runs must stay one at a time.
"""

from __future__ import annotations

import threading
import time

import pytest
import torch
from worker_kit import CHECKED_STEPS, FILENAME, REFERENCE, learner_file

from tutor.engine.checks_loader import load_checks, seed_inputs
from tutor.engine.client import EngineClient
from tutor.engine.protocol import Done, Stats, StatsRequest, StepVerdict
from tutor.model.lesson import all_lessons

LEAK = {
    "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    weights = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
    return weights @ v, weights
"""
}


class Kept:
    def __init__(self, timeout: float = 15.0, seed: int = 0):
        self.lock = threading.Lock()
        self.results: dict[int, dict] = {}
        self.done: dict[int, float] = {}  # gen -> when its Done came
        self.stats: list[Stats] = []
        self.any = threading.Condition(self.lock)
        self.worker = EngineClient(self.on_event, timeout=timeout, keep=True, seed=seed)

    def on_event(self, event) -> None:
        with self.any:
            if isinstance(event, StepVerdict):
                self.results.setdefault(event.gen, {})[event.result.id] = event.result
            elif isinstance(event, Done):
                self.done[event.gen] = time.monotonic()
            elif isinstance(event, Stats):
                self.stats.append(event)
            self.any.notify_all()

    def wait(self, gens, limit: float = 120) -> None:
        with self.any:
            assert self.any.wait_for(lambda: all(g in self.done for g in gens), limit), (
                gens,
                self.done,
            )

    def __enter__(self):
        self.worker.start()
        assert self.worker.ready.wait(60)
        return self

    def __exit__(self, *exc):
        self.worker.close()


def test_kept_runs_all_report_each_under_its_own_gen():
    wrong = learner_file("lm3-l3", LEAK)
    sources = [REFERENCE["lm3-l3"], wrong] * 4
    steps = list(CHECKED_STEPS["lm3-l3"])
    with Kept() as k:
        gens = [
            k.worker.submit("lm3-l3", FILENAME["lm3-l3"], s, steps) for s in sources
        ]  # all at once
        k.wait(gens)
        for gen, source in zip(gens, sources, strict=False):
            got = k.results[gen]
            assert set(got) == set(steps)
            if source is wrong:
                assert got["leakage"].status == "fail" and got["multi-head"].status == "pass"
            else:
                assert all(r.status == "pass" for r in got.values()), {
                    s: r.status for s, r in got.items()
                }
        # Nothing left behind: no job, and only the judge and spares as children.
        k.worker._send(StatsRequest())
        with k.any:
            assert k.any.wait_for(lambda: k.stats, 10)
        assert k.stats[-1].jobs == 0


def test_a_hang_among_kept_runs_costs_only_its_own_run():
    hang = REFERENCE["lm3-l3"] + "\nwhile True:\n    pass\n"
    steps = list(CHECKED_STEPS["lm3-l3"])
    with Kept(timeout=3.0) as k:
        start = time.monotonic()
        g_hang = k.worker.submit("lm3-l3", FILENAME["lm3-l3"], hang, steps)
        others = [
            k.worker.submit("lm3-l3", FILENAME["lm3-l3"], REFERENCE["lm3-l3"], steps)
            for _ in range(3)
        ]
        k.wait(others + [g_hang])
        assert all(k.done[g] - start < 3.0 for g in others), {g: k.done[g] - start for g in others}
        assert all(k.results[g][s].status == "pass" for g in others for s in steps)
        assert {r.status for r in k.results[g_hang].values()} == {"timeout"}


def test_a_kept_run_is_not_superseded_by_a_newer_one():
    steps = list(CHECKED_STEPS["lab-02"])
    with Kept() as k:
        first = k.worker.submit("lab-02", FILENAME["lab-02"], REFERENCE["lab-02"], steps)
        second = k.worker.submit("lab-02", FILENAME["lab-02"], REFERENCE["lab-02"], steps)
        k.wait([first, second])
        assert set(k.results[first]) == set(k.results[second]) == set(steps)


@pytest.mark.parametrize("lesson", [lesson.id for lesson in all_lessons()])
def test_seed_0_is_the_lessons_own_inputs_and_another_draws_new_ones(lesson):
    (module,) = load_checks([each for each in all_lessons() if each.id == lesson]).values()
    flat = lambda tree: [t for t in _tensors(tree)]  # noqa: E731
    own, zero, seven = (
        flat(module.make_inputs()),
        flat(module.make_inputs(seed=0)),
        flat(module.make_inputs(seed=7)),
    )
    assert len(own) == len(zero) == len(seven)
    assert all(torch.equal(a, b) for a, b in zip(own, zero, strict=False))
    assert all(a.shape == b.shape for a, b in zip(own, seven, strict=False))
    assert not all(torch.equal(a, b) for a, b in zip(own, seven, strict=False))
    again = flat(module.make_inputs(seed=7))
    assert all(
        torch.equal(a, b) for a, b in zip(seven, again, strict=False)
    )  # the same seed, the same inputs
    seeded = {lesson: module}
    seed_inputs(seeded, 7)
    assert all(
        torch.equal(a, b) for a, b in zip(seven, flat(seeded[lesson].make_inputs()), strict=False)
    )


def _tensors(tree):
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, dict):
        for key in sorted(tree):
            yield from _tensors(tree[key])
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _tensors(item)


SAYS_X = {
    "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    print(f"x0={float(x.flatten()[0])!r}")
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[-2]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights
"""
}


def test_a_seeded_worker_judges_on_its_seeds_inputs():
    """The child calls the learner's code on seed 7's inputs (it prints the first value it got),
    and the judge judges on the same ones (the correct file passes)."""
    (module,) = load_checks([lesson for lesson in all_lessons() if lesson.id == "lm3-l3"]).values()
    first = {
        seed: float(module.make_inputs(seed=seed)["single"]["cases"][0]["args"][0].flatten()[0])
        for seed in (0, 7)
    }
    assert first[0] != first[7]
    with Kept(seed=7) as k:
        gens = [
            k.worker.submit(
                lesson, FILENAME[lesson], REFERENCE[lesson], list(CHECKED_STEPS[lesson])
            )
            for lesson in ("lm3-l3", "lab-02")
        ]
        says = k.worker.submit(
            "lm3-l3", FILENAME["lm3-l3"], learner_file("lm3-l3", SAYS_X), ["single-head"]
        )
        k.wait(gens + [says])
        step = k.results[says]["single-head"]
        assert step.status == "pass" and step.output.startswith(f"x0={first[7]!r}"), step.output[
            :200
        ]
        for gen in gens:
            assert all(r.status == "pass" for r in k.results[gen].values()), {
                s: (r.status, [c.id for c in r.checks if c.status != "pass"])
                for s, r in k.results[gen].items()
            }


def test_a_kept_run_that_hangs_at_import_costs_one_time_limit():
    """Every step would import the file again and hang there: the later steps are said at once,
    each as a timeout, with no child of their own; the whole run takes one limit, not two."""
    hang = REFERENCE["lm3-l3"] + "\nwhile True:\n    pass\n"
    steps = list(CHECKED_STEPS["lm3-l3"])
    with Kept(timeout=2.0) as k:
        start = time.monotonic()
        gen = k.worker.submit("lm3-l3", FILENAME["lm3-l3"], hang, steps)
        k.wait([gen])
        took = k.done[gen] - start
        got = k.results[gen]
        assert {r.status for r in got.values()} == {"timeout"} and set(got) == set(steps)
        assert all(
            r.failure.frames and r.failure.frames[0].function == "<module>" for r in got.values()
        )
        assert 2.0 <= took < 3.5, took


def test_a_kept_run_that_hangs_in_a_function_still_runs_its_other_steps():
    """Only a hang at import is said for the later steps: a hang in causal_attention leaves the
    multi-head step (which does not call it) to pass on its own."""
    hang_fn = {
        "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    while True:
        pass
"""
    }
    steps = list(CHECKED_STEPS["lm3-l3"])
    with Kept(timeout=2.0) as k:
        gen = k.worker.submit("lm3-l3", FILENAME["lm3-l3"], learner_file("lm3-l3", hang_fn), steps)
        k.wait([gen])
        got = k.results[gen]
        assert got["single-head"].status == "timeout"
        assert got["multi-head"].status == "pass" and got["shapes"].status == "pass"


def test_a_kept_run_whose_file_does_not_load_is_said_once_for_all_steps(monkeypatch):
    """A memory bomb at import ends in a MemoryError after seconds of touching pages: the first
    step's verdict (the file does not load) is every step's, without importing it again."""
    # A smaller budget, so that the bomb meets its MemoryError well before the time limit on a
    # loaded machine (the suite runs in parallel): at 2 GiB it timed out there once.
    monkeypatch.setenv("ATTN_TUTOR_MEMORY_MB", "512")
    bomb = REFERENCE["lm3-l3"] + "\nhog = []\nwhile True:\n    hog.append(bytearray(50 << 20))\n"
    steps = list(CHECKED_STEPS["lm3-l3"])
    with Kept(timeout=15.0) as k:
        gen = k.worker.submit("lm3-l3", FILENAME["lm3-l3"], bomb, steps)
        k.wait([gen])
        got = k.results[gen]
        assert set(got) == set(steps)
        messages = {(r.status, r.checks[0].id, r.checks[0].message.key) for r in got.values()}
        assert len(messages) == 1 and next(iter(messages))[1] == "file-loads", messages
        # The steps after the first were not run: no time of their own.
        assert all(ms < 50 for ms in sorted(r.ms for r in got.values())[: len(steps) - 1]), [
            r.ms for r in got.values()
        ]
        k.worker._send(StatsRequest())
        with k.any:
            assert k.any.wait_for(lambda: k.stats, 10)
        assert k.stats[-1].jobs == 0
