"""The kit's cost experiment (tutor.kit.cost_table): the app's settings kept in range, lengths
doubling, runs timed within a budget, attention's FLOPs, and cells narrow enough for the app's
52-column text: a six-column table of them fits, in both languages' widths of figures."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from tutor.cli.dev_experiments import COLUMN
from tutor.kit import (
    TIME_BAR,
    attention_flops,
    blank_lengths,
    doubling,
    human,
    int_settings,
    longest_time,
    measured_of,
    ms_text,
    slower_lengths,
    time_bar,
    timed,
    timed_rows,
    timing_remarks,
    timing_table,
)
from tutor.model.view_items import bar, table
from tutor.render.views import Context, draw_item


def test_int_settings_takes_only_sizes_in_range():
    defaults = {"heads": 4, "batch": 1}
    assert int_settings(defaults, None) == defaults
    assert int_settings(defaults, {"heads": 8, "batch": 2}) == {"heads": 8, "batch": 2}
    for bad in (True, 0, -3, 5000, 2.0, "8"):
        assert int_settings(defaults, {"heads": bad}) == defaults
    assert int_settings(defaults, {"other": 3}) == defaults
    assert int_settings(defaults, {"heads": 20}, top=16) == defaults


def test_doubling():
    assert doubling(16, 128) == [16, 32, 64, 128]
    assert doubling(16, 100) == [16, 32, 64]
    assert doubling(16, 10) == []
    assert len(doubling(1, 10**9)) == 8 and doubling(1, 10**9, most=3) == [1, 2, 4]


def test_timed_rows_stop_at_the_first_too_big_or_failed_length():
    assert timed_rows([1, 2, 4], lambda i, n: [n * 10], budget=5, too_big=lambda n: n > 2) == [
        [1, 10],
        [2, 20],
    ]
    rows = timed_rows([1, 2, 4], lambda i, n: None if i == 1 else [i], budget=5, too_big=bool)
    assert rows == []  # every length too big
    rows = timed_rows(
        [1, 2, 4], lambda i, n: None if i == 1 else [i], budget=5, too_big=lambda n: False
    )
    assert rows == [[1, 0]]
    assert timed_rows([1, 2], lambda i, n: [1], budget=-1, too_big=lambda n: False) == []
    assert timed(lambda: None) >= 0.0


def test_attention_flops_cached_against_recomputing():
    d = 64
    assert attention_flops(1, 1, d) == 8 * d * d + 4 * d
    cached = sum(attention_flops(1, t, d) for t in range(1, 33))
    full = sum(attention_flops(t, t, d) for t in range(1, 33))
    assert full > 10 * cached


@pytest.mark.parametrize(
    ("n", "text"), [(12, "12"), (3_200, "3.2 k"), (812e6, "812.0 M"), (1.5e9, "1.5 G")]
)
def test_human(n, text):
    assert human(n) == text


@pytest.mark.parametrize(
    ("ms", "text"),
    [(None, ""), (0.4213, "0.42"), (3.14159, "3.14"), (27.54, "27.5"), (812.4, "812")],
)
def test_ms_text(ms, text):
    assert ms_text(ms) == text


def test_time_bar_rounds_and_draws_what_was_not_measured_as_a_dash():
    assert time_bar(1.23456, 10.0, "green") == {
        "kind": "bar",
        "value": 1.23,
        "top": 10.0,
        "style": "green",
        "width": TIME_BAR,
        "label": "1.23",
    }
    assert time_bar("?", 10.0, "red")["value"] is None


def test_the_table_helpers_over_what_was_measured():
    measured = {16: (1.0, 3.0), 32: (5.0, 4.0), 64: (2.0, None)}
    assert longest_time(measured) == 5.0 and longest_time({}) == 1.0
    assert slower_lengths(measured) == [32]
    assert blank_lengths([16, 32, 64, 128], measured) == [64, 128]


def width(item, lang: str) -> int:
    console = Console(width=COLUMN, file=io.StringIO(), color_system=None)
    unbounded = console.options.update_width(10 * COLUMN)
    drawn = [
        d for d in draw_item(item, Context(lang, revealed=lambda q: True)) if isinstance(d, Table)
    ]
    return Measurement.get(console, unbounded, drawn[0]).minimum


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_six_column_cost_table_fits_the_text_column(lang):
    top = 812.4
    rows = [
        [str(T), f"{T * 0.016:.3f}", human(T * 3.1e6), human(T * T * 9.9e6)]
        + [time_bar(0.42 * T, top, "green"), time_bar(812.4, top, "red")]
        for T in (16, 128, 2048)
    ]
    item = table(["T", "MB", "FLOPs", "FLOPs", "ms", "ms"], rows, ["right"] * 4 + ["left"] * 2)
    assert width(item, lang) <= COLUMN


def test_the_measure_sees_a_table_too_wide():
    wide = [["2048", "16.777", "1.5 G", "812.0 M", bar(1.0, 1.0, "green", 20, label="812")] * 2]
    assert width(table(["T"] * 10, wide), "en") > COLUMN


def test_timing_table_rows_and_alignment():
    measured = measured_of([[16, 1.0, 4.0], [32, 2.0, None]])
    assert measured == {16: (1.0, 4.0), 32: (2.0, None)}
    item = timing_table(["n", "f", "fast", "slow"], [16, 32, 64], measured, lambda n: [str(n), "x"])
    assert item["align"] == ["right", "right", "left", "left"]
    assert [r[:2] for r in item["rows"]] == [["16", "x"], ["32", "x"], ["64", "x"]]
    assert item["rows"][0][2] == time_bar(1.0, 4.0, "green")
    assert item["rows"][0][3] == time_bar(4.0, 4.0, "red")
    assert item["rows"][2][2]["value"] is None and item["rows"][1][3]["value"] is None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_timing_table_of_four_formulas_fits(lang):
    measured = {16: (0.42, 812.4), 2048: (99.9, 812.4)}
    item = timing_table(
        ["T", "MB", "FLOPs", "FLOPs", "ms", "ms"],
        [16, 128, 2048],
        measured,
        lambda n: [str(n), f"{n * 0.016:.3f}", human(n * 3.1e6), human(n * n * 9.9e6)],
    )
    assert width(item, lang) <= COLUMN


def test_timing_remarks_say_why_rows_are_blank_and_when_times_are_noise():
    def said(measured, too_big=lambda n: False):
        notes = timing_remarks([16, 32, 64], measured, name="T", too_big=too_big, budget=1.5)
        assert all(item["kind"] == "note" for item in notes)
        return [(i["text"]["key"], i["text"]["params"]) for i in notes]

    assert said({}) == []  # nothing measured: the table waits, no note
    right = {16: (1.0, 3.0), 32: (2.0, 9.0), 64: (3.0, 30.0)}
    assert said(right) == []
    # T = 16 inverted, T = 32 in order, T = 64 not reached: the budget ran out, or too big.
    measured = {16: (3.0, 1.0), 32: (1.0, 4.0)}
    assert said(measured) == [
        ("visual.timing_out_of_time", {"name": "T", "n": [64], "s": 1.5}),
        ("visual.timing_noisy", {"name": "T", "n": [16]}),
    ]
    assert said(measured, too_big=lambda n: n > 32)[0] == (
        "visual.timing_too_big",
        {"name": "T", "n": [64]},
    )
    # The slow way failed at a length: blank too, said as out of time unless too big.
    assert said({16: (1.0, None), 32: (1.0, 2.0), 64: (1.0, 2.0)})[0][1]["n"] == [16]
