"""A cost experiment, measured in the child and drawn by the judge: settings from the app
(int_settings), lengths doubling (doubling), timed runs within a budget (timed, timed_rows),
FLOP counts of attention (attention_flops), and the cells of a table narrow enough for the
app's text column (52 cells at 80×24: human, ms_text, time_bar, TIME_BAR), the table
itself (timing_table) and the notes under it (timing_remarks)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from tutor.kit.judge_tools import msg
from tutor.model.view_items import Item, bar, note, table

# Cells of a time's bar: two bars and their figures fit beside four other columns at 80×24.
TIME_BAR = 3

Measured = dict[int, tuple[Any, Any]]  # length -> (time of the fast way, time of the slow way)


def int_settings(defaults: dict[str, int], params: dict | None, top: int = 4096) -> dict[str, int]:
    """defaults, with each that params sets to an int in 1..top: what the app sends is the
    learner's choice, but a probe must not run on a bool, a negative or a huge size."""
    s = dict(defaults)
    for key, value in (params or {}).items():
        if key in s and isinstance(value, int) and not isinstance(value, bool) and 0 < value <= top:
            s[key] = value
    return s


def doubling(start: int, stop: int, most: int = 8) -> list[int]:
    """start, 2·start, … up to stop, at most `most` of them: a cost's growth reads on a
    doubling scale (linear doubles, quadratic quadruples)."""
    out: list[int] = []
    n = start
    while n <= stop and len(out) < most:
        out.append(n)
        n *= 2
    return out


def timed(fn: Callable[[], Any]) -> float:
    """Milliseconds fn takes, once (the wall clock: what the learner waits)."""
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def timed_rows(
    lengths: Sequence[int],
    measure: Callable[[int, int], list | None],
    *,
    budget: float,
    too_big: Callable[[int], bool],
) -> list[list]:
    """[n, *measure(i, n)] for each length in turn, until budget seconds have gone, a length
    is too_big to run at all, or measure returns None (it could not run): the rows left out
    are drawn with the formula alone (blank_lengths)."""
    rows: list[list] = []
    deadline = time.monotonic() + budget
    for i, n in enumerate(lengths):
        if time.monotonic() > deadline or too_big(n):
            break
        got = measure(i, n)
        if got is None:
            break
        rows.append([n, *got])
    return rows


def attention_flops(queries: int, keys: int, d: int) -> int:
    """FLOPs (multiply-adds × 2) of one attention pass of width d: four d×d projections of the
    queries (8·d²·queries; keys and values of the new tokens only) and the scores and weighted
    sum of each query over `keys` keys (4·queries·keys·d). A KV cache's step is (1, t, d); the
    full pass again is (t, t, d)."""
    return 8 * d * d * queries + 4 * queries * keys * d


def human(n: float) -> str:
    """A count in few characters: 1.5 G, 812.0 M, 3.2 k, 12."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f}"


def ms_text(ms: float | None) -> str:
    """A measured time beside its bar, about three digits: 0.42, 3.14, 27.5, 812 ("": none)."""
    if ms is None:
        return ""
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def time_bar(ms: Any, top: float, style: str) -> Item:
    """A table cell: the time as a bar of TIME_BAR cells against top, its figure after it
    (rounded to 0.01 ms); anything but a number is drawn "—" (not measured)."""
    ms = round(ms, 2) if isinstance(ms, (int, float)) else None
    return bar(ms, top, style, TIME_BAR, label=ms_text(ms))


def longest_time(measured: Measured) -> float:
    """The largest time measured (1.0 when none): the bars' common scale."""
    times = [x for pair in measured.values() for x in pair if isinstance(x, (int, float))]
    return max(times or [1.0])


def blank_lengths(lengths: Sequence[int], measured: Measured) -> list[int]:
    """The lengths of the table without a time for the slow way: not measured (out of time,
    too big), or the slow way failed there. A note says why, since the table cannot."""
    return [n for n in lengths if measured.get(n, (None, None))[1] is None]


def slower_lengths(measured: Measured) -> list[int]:
    """The lengths where the fast way measured slower than the slow one: noise (a note says
    so), since the FLOPs say which costs more."""
    return [
        n
        for n, (fast, slow) in sorted(measured.items())
        if isinstance(fast, (int, float)) and isinstance(slow, (int, float)) and fast > slow
    ]


def measured_of(rows: list[list]) -> Measured:
    """timed_rows' [n, fast, slow] rows (as the judge gets them) as {n: (fast, slow)}."""
    return {int(n): (fast, slow) for n, fast, slow in rows}


def timing_table(
    columns: list, lengths: Sequence[int], measured: Measured, formulas: Callable[[int], list]
) -> Item:
    """A cost experiment's table: per length, formulas(n)'s cells (right-aligned), then the
    fast and the slow way's times as bars against the longest (green, red), each figure after
    its bar (left-aligned: the bars start at one edge). columns: the formulas' headers, then
    the two times'. Four short formula cells and the two bars fit 52 columns."""
    top = longest_time(measured)
    rows = [
        [
            *formulas(n),
            *(
                time_bar(ms, top, style)
                for ms, style in zip(measured.get(n, (None, None)), ("green", "red"), strict=True)
            ),
        ]
        for n in lengths
    ]
    return table(columns, rows, ["right"] * (len(columns) - 2) + ["left"] * 2)


def timing_remarks(
    lengths: Sequence[int],
    measured: Measured,
    *,
    name: str,
    too_big: Callable[[int], bool],
    budget: float,
) -> list[Item]:
    """What a timing_table cannot say itself, as notes (engine texts visual.timing_*, {name}
    the lengths' name in the table): why the lengths without a time for the slow way have none
    (the first of them too_big to run at these settings, or the budget seconds ran out), and
    that times are noise where the fast way measured slower (the formulas say which costs
    more). None while nothing is measured: the table then waits for the code it times."""
    if not measured:
        return []
    out = []
    blank = blank_lengths(lengths, measured)
    if blank:
        if too_big(blank[0]):
            out.append(note(msg("visual.timing_too_big", name=name, n=blank)))
        else:
            out.append(note(msg("visual.timing_out_of_time", name=name, n=blank, s=budget)))
    slower = slower_lengths(measured)
    if slower:
        out.append(note(msg("visual.timing_noisy", name=name, n=slower)))
    return out
