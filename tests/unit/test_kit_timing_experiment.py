"""The kit's timing experiment (tutor.kit.timing_experiment): two ways timed at doubling
lengths within a budget in the child, drawn as a table with its notes; and the FLOPs of
generating with a state and without."""

from __future__ import annotations

import types

from tutor.kit import attention_flops, decoding_flops, msg, probe_timings, timing_view
from tutor.kit.probe_tools import ProbeContext


def context() -> ProbeContext:
    return ProbeContext(types.ModuleType("learner"), "learner.py", "", None)


def test_each_length_gets_a_time_for_each_way():
    rows = probe_timings(
        context(),
        [4, 8, 16],
        lambda n: [0] * n,
        lambda n: (n,),
        [lambda obj, n: sum(obj), lambda obj, n: sorted(obj * n)],
        budget=5.0,
        too_big=lambda n: n > 8,
    )
    assert [r[0] for r in rows] == [4, 8]  # 16 is too big: drawn by formula alone
    assert all(isinstance(ms, float) and ms >= 0 for r in rows for ms in r[1:])


def test_a_build_that_raises_ends_the_rows_and_a_way_that_raises_has_no_time():
    def build(n):
        if n > 4:
            raise ValueError("too long")
        return n

    def broken(obj, n):
        raise RuntimeError("no")

    ways = [lambda obj, n: obj, broken]
    rows = probe_timings(
        context(), [4, 8], build, lambda n: (n,), ways, budget=5.0, too_big=lambda n: False
    )
    assert len(rows) == 1 and rows[0][2] is None


def test_decoding_flops_with_a_state_grow_linearly_per_token_without_quadratically():
    cached, full = decoding_flops(3, 8)
    assert cached == sum(attention_flops(1, t, 8) for t in (1, 2, 3))
    assert full == sum(attention_flops(t, t, 8) for t in (1, 2, 3))
    assert full > cached


def test_the_view_waits_while_nothing_is_measured_and_notes_what_was_not():
    def view(rows):
        return timing_view(
            msg("t"),
            msg("s"),
            [msg("a"), msg("b"), msg("c")],
            [4, 8],
            rows,
            lambda n: [str(n)],
            name="T",
            too_big=lambda n: n > 4,
            budget=1.0,
            waiting_text=msg("w"),
            after=msg("after"),
        )

    kinds = [item["kind"] for item in view([])]
    assert "waiting" in kinds
    items = view([[4, 0.1, 0.2]])
    assert "waiting" not in [item["kind"] for item in items]
    notes = [item for item in items if item["kind"] == "note"]
    assert any(n["text"]["key"] == "visual.timing_too_big" for n in notes)
