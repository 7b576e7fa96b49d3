"""The kit's score memory: the formula's rows (scores quadratic in T, q/k/v linear), the settings
a run falls back to, and the measure of the largest (…, T, T) tensor a layer really builds,
which says a layer that never stores the scores (or stores them twice over) as it is."""

from __future__ import annotations

import torch

from tutor.kit import (
    SquareTensors,
    chosen_settings,
    measure_score_memory,
    memory_growth,
    memory_rows,
    memory_table,
    seq_lens,
)


class Ctx:
    """A probe context's call, without a child: the value, or the error."""

    def call(self, fn, *args):
        try:
            return {"value": fn(*args)}
        except Exception as e:  # noqa: BLE001 - as the child reports it
            return {"error": {"detail": str(e)}}


class Scores(torch.nn.Module):
    """Builds a (B, H, T, T) score tensor per call, as attention does."""

    def __init__(self, heads: int) -> None:
        super().__init__()
        self.heads = heads

    def forward(self, x):
        B, T, d = x.shape
        q = x.view(B, T, self.heads, d // self.heads).transpose(1, 2)
        return torch.softmax(q @ q.transpose(2, 3), dim=-1) @ q


class Linear(torch.nn.Module):
    """Never builds anything (…, T, T): nothing to measure."""

    def forward(self, x):
        return x * 2


def test_rows_grow_quadratically_for_scores_and_linearly_for_qkv():
    rows = memory_rows(seq_lens(64, 256), heads=2, batch=3, bytes_per=2, d_out=8)
    assert [r["T"] for r in rows] == [64, 128, 256]
    assert rows[0]["scores"] == 3 * 2 * 64 * 64 and rows[0]["bytes"] == rows[0]["scores"] * 2
    assert memory_growth(rows) == {"t1": 64, "t2": 256, "scores": "16", "qkv": "4"}


def test_a_stale_setting_falls_back_to_its_default():
    defaults = {"dtype": "float32", "heads": 12}
    got = chosen_settings(
        defaults, {"dtype": "int7", "heads": 4, "other": 1}, {"dtype": ("float32",)}
    )
    assert got == {"dtype": "float32", "heads": 4}


def test_the_largest_square_tensor_is_what_the_layer_built():
    with SquareTensors(5) as seen:
        Scores(2)(torch.randn(3, 5, 8))
    assert seen.bytes == 3 * 2 * 5 * 5 * 4


def test_measure_stops_at_the_limit_and_says_none_where_no_scores_came():
    how = dict(width=8, batch=1, dtype=torch.float16, limit=2 * 32 * 32, budget=10.0)
    got = measure_score_memory(
        Ctx(), lambda T: Scores(2), [16, 32, 64], count=lambda T: 2 * T * T, **how
    )
    assert got == {16: 2 * 16 * 16 * 2, 32: 2 * 32 * 32 * 2}
    none = measure_score_memory(Ctx(), lambda T: Linear(), [16], count=lambda T: 0, **how)
    assert none == {16: None}


def test_a_layer_that_raises_leaves_the_column_short():
    def broken(T):
        raise ValueError("no")

    got = measure_score_memory(
        Ctx(),
        broken,
        [16],
        width=8,
        batch=1,
        dtype=torch.float32,
        count=lambda T: 0,
        limit=10,
        budget=1.0,
    )
    assert got == {}


def test_the_table_marks_unmeasured_rows():
    rows = memory_rows([64, 128])
    item = memory_table(rows, {64: 2_000_000}, ["T", "s", "mb", "qkv", "r", "m", ""])
    assert [r[5] for r in item["rows"]] == ["2.0", "—"]


def test_the_view_shows_the_formula_and_what_was_measured_in_the_engines_words():
    from tutor.kit import memory_view, msg
    from tutor.kit.score_memory import MEMORY_COLUMNS
    from tutor.text.i18n import engine_catalog

    for lang in ("en", "zh"):
        assert {*MEMORY_COLUMNS, "visual.memory_measured_note"} <= set(engine_catalog(lang))
    settings = {"range": (64, 256), "heads": 2, "batch": 3, "dtype": "float16"}
    view = memory_view(settings, {64: 49_152}, layer="MyLayer", d_out=8)
    assert [item["kind"] for item in view] == ["heading", "keys", "table", "note", "note"]
    table = view[2]
    assert table["columns"][0] == msg("visual.memory_T")
    assert [r[0] for r in table["rows"]] == ["64", "128", "256"]
    assert table["rows"][0][5] == "0.0" and table["rows"][1][5] == "—"
    assert view[-1]["text"] == msg(
        "visual.memory_measured_note", layer="MyLayer", d_out=8, heads=2, batch=3, dtype="float16"
    )
