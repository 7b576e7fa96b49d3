"""A timing experiment, as a property: two ways of computing the same thing (a fast one and a
slow one: generation with a KV cache and without) timed at lengths doubling, within a time
budget, in the child (probe_timings); drawn by the judge as a table of formulas and times with
the notes that say what the table cannot (timing_view). decoding_flops gives the FLOPs of
generating T tokens with a state and without. Built on cost_table's pieces."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tutor.kit.cost_table import (
    attention_flops,
    measured_of,
    timed,
    timed_rows,
    timing_remarks,
    timing_table,
)
from tutor.kit.probe_tools import ProbeContext
from tutor.model.view_items import Item, heading, note, waiting


def probe_timings(
    ctx: ProbeContext,
    lengths: Sequence[int],
    build: Callable[[int], Any],
    data: Callable[[int], tuple],
    ways: Sequence[Callable[..., Any]],
    *,
    budget: float,
    too_big: Callable[[int], bool],
) -> list[list]:
    """timed_rows over lengths: at each n, obj = build(n) in a call of its own (the first
    primary; a build that raised ends the rows), args = data(n), then each of ways(obj, *args)
    timed in a call of its own (None where it raised): rows [n, time of each way]."""

    def measure(i: int, n: int) -> list | None:
        made = ctx.call(lambda: build(n), primary=i == 0)
        if "error" in made:
            return None
        obj, args = made["value"], data(n)
        return [
            ctx.call(lambda way=way: timed(lambda: way(obj, *args))).get("value") for way in ways
        ]

    return timed_rows(lengths, measure, budget=budget, too_big=too_big)


def decoding_flops(T: int, d: int) -> tuple[int, int]:
    """FLOPs of generating T tokens of width d (attention_flops): with a state, step t projects
    one token and attends over the t so far; without, step t runs the full pass over t tokens."""
    steps = range(1, T + 1)
    return (
        sum(attention_flops(1, t, d) for t in steps),
        sum(attention_flops(t, t, d) for t in steps),
    )


def timing_view(
    title: Any,
    settings: Any,
    columns: list,
    lengths: Sequence[int],
    rows: list[list],
    formulas: Callable[[int], list],
    *,
    name: str,
    too_big: Callable[[int], bool],
    budget: float,
    waiting_text: Any,
    after: Any,
) -> list[Item]:
    """The view of probe_timings' rows: the title, a note of the settings, the timing_table
    (columns: formulas' headers, then the two ways'), a waiting line while nothing is measured,
    timing_remarks (name: the lengths' name), then a closing note (after)."""
    measured = measured_of(rows)
    view = [heading(title), note(settings), timing_table(columns, lengths, measured, formulas)]
    if not measured:
        view.append(waiting(waiting_text))
    view += timing_remarks(lengths, measured, name=name, too_big=too_big, budget=budget)
    view.append(note(after))
    return view
