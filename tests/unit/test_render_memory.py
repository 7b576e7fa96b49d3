"""The attention-score memory table: the lab's numbers, localised headers."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console

from tutor.render.memory import bar, memory_rows, memory_table

LENS = (64, 128, 256, 512, 1024)


def render(table, width=76) -> list[str]:
    console = Console(width=width, record=True, color_system=None, file=open("/dev/null", "w"))
    console.print(table)
    return console.export_text(styles=False).rstrip("\n").split("\n")


def test_numbers_match_the_lab():
    rows = {r["T"]: r for r in memory_rows(LENS)}
    assert rows[64]["scores"] == 49_152 and f"{rows[64]['mb']:8.1f}".strip() == "0.2"
    assert rows[1024]["scores"] == 12_582_912 and f"{rows[1024]['mb']:8.1f}".strip() == "50.3"
    assert rows[1024]["bytes"] == 12_582_912 * 4


def test_parameters_scale():
    (r,) = memory_rows([100], heads=2, batch=3, bytes_per=2)
    assert r["scores"] == 3 * 2 * 100 * 100 and r["bytes"] == 2 * r["scores"]


def test_table_text_and_labels():
    labels = {"T": "T", "scores": "每层分数", "mb": "MB", "measured": "实测", "bar": "增长"}
    lines = render(memory_table(memory_rows(LENS), labels, measured={1024: 50_331_648}))
    text = "\n".join(lines)
    for header in ("每层分数", "MB", "实测", "增长"):
        assert header in lines[0]
    assert "49,152" in text and "12,582,912" in text and "50.3" in text and "—" in text
    row_1024 = next(l for l in lines if l.strip().startswith("1024"))
    assert row_1024.count("50.3") == 2 and "█" * 20 in row_1024
    assert all(cell_len(l) <= 76 for l in lines)


def test_no_measured_column_unless_given():
    lines = render(memory_table(memory_rows(LENS), {"measured": "measured"}))
    assert "measured" not in lines[0]


def test_bar_grows_and_never_vanishes():
    assert bar(50.3, 50.3) == "█" * 20
    assert bar(0.2, 50.3) == "▏"  # tiny but visible
    assert bar(0, 50.3) == ""
    assert len(bar(12.6, 50.3)) < len(bar(50.3, 50.3))
