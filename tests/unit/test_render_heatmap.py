"""The heatmap renderer, without an app: text assertions at several colour systems."""

from __future__ import annotations

import io
import math
import random

import pytest
from rich.cells import cell_len
from rich.console import Console

from tutor.render.heatmap import SHADES, fmt_value, heatmap, shade_glyph, viridis

COLOR_SYSTEMS = [None, "standard", "256", "truecolor"]


def causal(T: int, seed: int = 7) -> list[list[float]]:
    rnd = random.Random(seed)
    rows = []
    for i in range(T):
        e = [math.exp(rnd.gauss(0, 1)) for _ in range(i + 1)]
        z = sum(e)
        rows.append([x / z for x in e] + [0.0] * (T - i - 1))
    return rows


def render(renderable, width=76, color_system="truecolor") -> list[str]:
    console = Console(
        width=width,
        record=True,
        color_system=color_system,
        force_terminal=color_system is not None,
        file=io.StringIO(),
    )
    console.print(renderable)
    return console.export_text(styles=False).rstrip("\n").split("\n")


def grid(lines: list[str], T: int) -> list[str]:
    """The T grid rows of a small (values) heatmap: lines starting with a row index."""
    rows = [text for text in lines if text[:3].strip().isdigit() and len(text.split()) > 1]
    return rows[-T:]


@pytest.mark.parametrize("color_system", COLOR_SYSTEMS)
def test_small_grid_prints_values_and_marks_future(color_system):
    m = causal(6)
    lines = render(heatmap(m, title="head 0"), 76, color_system)
    rows = grid(lines, 6)
    assert len(rows) == 6
    assert rows[0].split()[1].rstrip(SHADES) == "1.0"  # the first token attends only to itself
    assert fmt_value(m[5][2]) in rows[5]
    assert rows[0].count("·") == 5 and rows[4].count("·") == 1 and "·" not in rows[5]
    assert "head 0" in lines[0]


@pytest.mark.parametrize("color_system", COLOR_SYSTEMS)
def test_future_weight_is_flagged(color_system):
    m = causal(6)
    m[2][4] = 0.3
    rows = grid(render(heatmap(m), 76, color_system), 6)
    assert "!.30" in rows[2]
    assert sum(r.count("!") for r in rows) == 1


def test_tiny_future_weight_is_not_a_leak():
    m = causal(6)
    m[2][4] = 1e-9
    assert "!" not in "\n".join(grid(render(heatmap(m)), 6))


@pytest.mark.parametrize("color_system", COLOR_SYSTEMS)
def test_nan_is_flagged(color_system):
    m = causal(6)
    m[4][1] = float("nan")
    text = "\n".join(render(heatmap(m), 76, color_system))
    assert "NaN" in text
    dense = causal(40)
    dense[30][3] = float("nan")
    assert "?" in "\n".join(render(heatmap(dense), 76, None))


def test_diff_mode_shows_signed_values():
    ref = causal(6)
    mine = [row[:] for row in ref]
    mine[3][0] += 0.12
    mine[3][1] -= 0.12
    lines = render(heatmap(mine, reference=ref, mode="diff"))
    rows = grid(lines, 6)
    assert "+.12" in rows[3] and "-.12" in rows[3]
    assert "-0.12" in lines[-2] and "+0.12" in lines[-2]  # symmetric range on the scale


def test_reference_mode_draws_the_reference():
    ref = causal(6)
    rows = grid(render(heatmap([[0.0] * 6] * 6, reference=ref, mode="reference")), 6)
    assert fmt_value(ref[3][1]) in rows[3]


@pytest.mark.parametrize("color_system", COLOR_SYSTEMS)
@pytest.mark.parametrize("T", [40, 64])
def test_dense_mode_fits_width(T, color_system):
    lines = render(heatmap(causal(T), title=f"T = {T}"), 76, color_system)
    assert all(cell_len(text) <= 76 for text in lines)
    assert "·" in "\n".join(lines)  # the masked future is still marked
    if color_system in (None, "standard"):
        # No colour to carry the value: shade glyphs do, one line per query.
        assert any(ch in "\n".join(lines) for ch in "░▒▓█")
        assert len(lines) >= T


def test_dense_mode_glyphs_follow_values():
    m = causal(40)
    m[20] = [0.0] * 41
    m[20][:21] = [0.0] * 20 + [1.0]  # query 20 attends only to itself
    lines = render(heatmap(m), 76, None)
    row = next(text for text in lines if text.startswith("20 "))
    cells = row[3:]
    assert cells[20] == "█" and set(cells[:20]) == {" "} and set(cells[21:].strip()) == {"·"}


def test_halves_use_half_the_lines_in_colour():
    lines = render(heatmap(causal(40)), 76, "truecolor")
    assert "▀" in "\n".join(lines)
    assert len(lines) < 40


@pytest.mark.parametrize("width", [30, 50, 76, 120])
@pytest.mark.parametrize("T", [1, 6, 12, 20, 64, 100])
def test_no_line_wider_than_console(T, width):
    lines = render(heatmap(causal(T), title="Causal attention weights — head 0"), width)
    assert all(cell_len(text) <= width for text in lines), max(lines, key=cell_len)


def test_chinese_labels_present_and_aligned():
    lines = render(
        heatmap(
            causal(6),
            axis_labels=("键位置 →", "查询位置 ↓"),
            legend={"learner": "你的权重", "masked": "被遮住的未来"},
        ),
        50,
    )
    text = "\n".join(lines)
    assert (
        "键位置 →" in text
        and "查询位置 ↓" in text
        and "你的权重" in text
        and "被遮住的未来" in text
    )
    assert all(cell_len(text) <= 50 for text in lines)


def test_default_labels_present():
    text = "\n".join(render(heatmap(causal(6))))
    assert "key position →" in text and "query position ↓" in text


def test_colour_hint_overrides_console():
    # A Textual app under NO_COLOR still has a truecolor console: the hint says so.
    lines = render(heatmap(causal(40), color_system_hint="none"), 76, "truecolor")
    assert "▀" not in "\n".join(lines)
    assert any(ch in "\n".join(lines) for ch in "░▒▓█")


def test_shade_glyph_and_viridis():
    assert shade_glyph(0.0, 1.0) == " "
    assert shade_glyph(0.01, 1.0) == "░"
    assert shade_glyph(0.6, 1.0) == "▓"
    assert shade_glyph(1.0, 1.0) == "█"
    assert shade_glyph(float("nan"), 1.0) == "?"
    assert viridis(0.0) == (68, 1, 84) and viridis(1.0) == (253, 231, 37)
    assert viridis(-3) == viridis(0) and viridis(7) == viridis(1)


def test_fmt_value():
    assert [fmt_value(v) for v in (0.37, 1.0, 0.0, 0.004, -0.05, 12.3)] == [
        ".37",
        "1.0",
        ".00",
        ".00",
        "-.05",
        "12",
    ]
    assert fmt_value(0.12, signed=True) == "+.12"
    assert fmt_value(float("nan")) == "NaN" and fmt_value(float("-inf")) == "-inf"


def test_bad_input():
    with pytest.raises(ValueError):
        heatmap(causal(3), mode="diff")
    with pytest.raises(ValueError):
        heatmap(causal(3), reference=causal(4), mode="diff")
    with pytest.raises(ValueError):
        heatmap(causal(3), mode="sideways")
    # Ragged rows and None do not crash the UI: they show as NaN.
    assert "NaN" in "\n".join(render(heatmap([[1.0], [0.5, None, 0.1]])))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_leakage_map_reads_without_colour_at_80_columns(lang):
    from tutor.text.i18n import t

    leaky = causal(6)
    leaky[2][4] = 0.3  # output 2 moved when token 4 changed: a leak
    title = t("lm3-l3.visual.leak_map", lang)
    lines = render(heatmap(leaky, title=title), 78, None)
    assert lines[0].strip() == title  # the title on one line
    from rich.cells import cell_len

    assert max(cell_len(line) for line in lines) <= 78
    row = grid(lines, 6)[2]
    assert "0.3" in row or ".30" in row  # the leaking cell shows its value, not the masked pattern


def test_yours_and_the_reference_share_one_scale():
    ref = causal(6)
    mine = [[v / 2 for v in row] for row in ref]  # every weight half the reference's
    mine_lines = render(heatmap(mine, reference=ref, mode="learner"))
    ref_lines = render(heatmap(mine, reference=ref, mode="reference"))
    scale = lambda lines: next(text for text in lines if "▁" in text or "░" in text).split()  # noqa: E731
    assert scale(mine_lines)[0] == scale(ref_lines)[0] == "0.00"
    assert scale(mine_lines)[-3] == scale(ref_lines)[-3] == "1.00"  # the larger maximum, for both


@pytest.mark.parametrize("color_system", [None, "standard"])
def test_without_full_colour_a_glyph_carries_each_value(color_system):
    m = causal(6)
    rows = grid(render(heatmap(m), 76, color_system), 6)
    assert rows[0].split()[1] == "1.0█"  # the largest weight, the fullest glyph
    cells = rows[5].split()[1:]
    assert all(c[-1] in SHADES[1:] for c in cells)


def test_the_difference_view_lines_up_signed_values():
    ref = causal(6)
    mine = [row[:] for row in ref]
    mine[5][0] += 0.12
    mine[5][1] -= 0.05
    row = grid(render(heatmap(mine, reference=ref, mode="diff"), 76, "truecolor"), 6)[5]
    cells = [row[3 + 6 * j : 3 + 6 * (j + 1)] for j in range(6)]
    assert [c.index(".") for c in cells] == [cells[0].index(".")] * 6  # the points in one column
    assert "+.12" in cells[0] and "-.05" in cells[1]


def test_the_legend_shows_a_non_finite_cell_as_the_cells_do():
    m = causal(6)
    m[4][1] = float("inf")
    text = "\n".join(render(heatmap(m), 76, "truecolor"))
    assert " inf  not a number, or infinite" in text and " ? " not in text


@pytest.mark.parametrize("width", [80, 60, 40])
def test_the_legend_keys_wrap_between_keys_never_cut(width):
    """Masked cells, a leak and a NaN: the keys go on as few lines as fit, each whole (at 80
    columns, in the app's pane, "not a number, or infinite" was cut at the edge)."""
    m = causal(6)
    m[1][4] = 0.3  # a weight on the future
    m[4][1] = float("nan")
    lines = render(heatmap(m, title="t"), width, None)
    text = "\n".join(lines)
    for words in (
        "weights (yours)",
        "masked future",
        "future weight ≠ 0",
        "not a number, or infinite",
    ):
        assert words in text, (width, text)
    assert max(cell_len(line) for line in lines) <= width
    one_line = " ·  masked future    !  future weight ≠ 0    ?  not a number, or infinite"
    if cell_len(one_line) <= width:  # fits: one line, as before
        assert any("masked future" in line and "infinite" in line for line in lines), text


def windowed(T: int, w: int) -> tuple[list[list[float]], list[list[bool]]]:
    """Weights of a sliding window of w keys (the query and the w - 1 before it), and its
    hidden cells: the future and everything before the window."""
    hidden = [[j > i or j <= i - w for j in range(T)] for i in range(T)]
    rows = []
    for i in range(T):
        seen = [j for j in range(T) if not hidden[i][j]]
        rows.append([1 / len(seen) if j in seen else 0.0 for j in range(T)])
    return rows, hidden


@pytest.mark.parametrize("color_system", COLOR_SYSTEMS)
def test_a_lessons_hidden_region_is_drawn_masked_and_a_weight_there_as_a_leak(color_system):
    """A window lesson's map: the cells before the window are masked as the future is, and a
    weight given to one is a leak, not an ordinary value; without `hidden`, a causal map would
    draw those cells as .00 and the weight as a value."""
    m, hidden = windowed(6, 2)
    rows = grid(render(heatmap(m, hidden=hidden), 76, color_system), 6)
    assert rows[5].count("·") == 4  # keys 0-3 are outside query 5's window
    assert rows[0].count("·") == 5 and "!" not in "".join(rows)
    m[5][0] = 0.25  # query 5 attends to key 0, outside its window
    leaked = grid(render(heatmap(m, hidden=hidden), 76, color_system), 6)
    assert "!" in leaked[5] and leaked[5].count("·") == 3
    plain = grid(render(heatmap(m), 76, color_system), 6)  # as a causal map: not hidden
    assert "!" not in plain[5] and "·" not in plain[5]


def test_a_hidden_matrix_of_another_shape_falls_back_to_the_causal_future():
    m = causal(4)
    rows = grid(render(heatmap(m, hidden=[[True]]), 76), 4)
    assert [r.count("·") for r in rows] == [3, 2, 1, 0]
