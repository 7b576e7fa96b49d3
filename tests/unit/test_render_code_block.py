"""The solution screen's code wraps under its own indentation, never from the left edge."""

from __future__ import annotations

import pytest
from rich.cells import cell_len
from rich.console import Console

from tutor.render.code_block import HANG, CodeBlock

LONG = (
    "class Attention:\n"
    "    def forward(self, x):\n"
    "        scores = torch.matmul(queries, keys.transpose(-2, -1)) / math.sqrt(d)  # 缩放点积\n"
    "        return scores\n"
)


def rows(code: str, lang: str, width: int) -> list[str]:
    console = Console(width=width, color_system=None, legacy_windows=False)
    with console.capture() as cap:
        console.print(CodeBlock(code, lang), soft_wrap=False)
    return cap.get().rstrip("\n").split("\n")


@pytest.mark.parametrize("width", [24, 40, 61])
def test_a_long_line_goes_on_under_its_indentation_and_nothing_is_lost(width):
    out = rows(LONG, "python", width)
    assert all(cell_len(r) <= width for r in out)
    start = out.index(next(r for r in out if r.lstrip().startswith("scores")))
    end = out.index("        return scores")
    continued = out[start + 1 : end]
    assert continued, "the line did not wrap"
    hang = min(8 + HANG, width // 2)
    assert all(r.startswith(" " * hang) and r[hang] != " " for r in continued)
    joined = " ".join(r.strip() for r in out[start:end])
    assert joined.replace(" ", "") == LONG.split("\n")[2].replace(" ", "")


def test_a_diff_line_keeps_its_marker_apart_from_its_indentation():
    diff = "-        w = torch.softmax(scores.masked_fill(mask, float('-inf')), dim=-1)\n"
    out = rows(diff, "diff", 40)
    assert out[0].startswith("-        w =")
    assert all(r.startswith(" " * (9 + HANG)) for r in out[1:]) and len(out) > 1


def test_code_that_fits_is_drawn_as_it_is():
    code = "def f(x):\n    return x\n\n\nprint(f(1))"
    assert rows(code, "python", 40) == code.split("\n")
