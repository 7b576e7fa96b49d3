"""The memory experiment: attention scores grow with the square of T.

Numbers as in the lab's loop: scores = batch·heads·T², MB = scores·bytes/1e6
(decimal megabytes, printed with one decimal, as `{:8.1f}` did).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from rich.table import Table
from rich.text import Text

BAR_WIDTH = 20
_EIGHTHS = " ▏▎▍▌▋▊▉"  # partial blocks: a small T still shows a sliver
DEFAULT_LABELS = {"T": "T", "scores": "scores per layer", "mb": "MB",
                  "qkv": "q,k,v MB", "ratio": "÷", "measured": "measured MB", "bar": "growth"}


def memory_rows(seq_lens: Iterable[int], heads: int = 12, batch: int = 1,
                bytes_per: int = 4, d_out: int = 768) -> list[dict]:
    """One dict per T: {"T", "scores", "bytes", "mb", "qkv_mb", "ratio"} (mb floats).

    q, k and v are (batch, T, d_out) each: linear in T, and independent of the
    number of heads, which only splits d_out.
    """
    rows = []
    for t in seq_lens:
        scores = batch * heads * t * t
        qkv = 3 * batch * t * d_out * bytes_per
        rows.append({"T": t, "scores": scores, "bytes": scores * bytes_per,
                     "mb": scores * bytes_per / 1e6, "qkv_mb": qkv / 1e6,
                     "ratio": scores * bytes_per / qkv})
    return rows


def bar(value: float, vmax: float, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of `width` cells at most, in eighths of a cell."""
    if vmax <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / vmax * width * 8))
    full, part = divmod(min(eighths, width * 8), 8)
    return "█" * full + (_EIGHTHS[part] if part else "")


def memory_table(rows: list[dict], labels: Mapping[str, str],
                 measured: Mapping[int, int] | None = None, bar_width: int = BAR_WIDTH,
                 with_qkv: bool = False) -> Table:
    """Rich table of `memory_rows` output. `labels` holds the localised column
    headers ("T", "scores", "mb", "measured", "bar"); `measured` maps T to
    bytes measured in the worker (shown in MB) and adds a column when given."""
    names = {**DEFAULT_LABELS, **labels}
    table = Table(box=None, pad_edge=False, header_style="bold", collapse_padding=True)
    table.add_column(names["T"], justify="right")
    table.add_column(names["scores"], justify="right")
    table.add_column(names["mb"], justify="right")
    if with_qkv:
        table.add_column(names["qkv"], justify="right")
        table.add_column(names["ratio"], justify="right")
    if measured is not None:
        table.add_column(names["measured"], justify="right")
    table.add_column(names["bar"], justify="left", no_wrap=True)
    top = max((r["mb"] for r in rows), default=0.0)
    for r in rows:
        cells = [str(r["T"]), f"{r['scores']:,}", f"{r['mb']:.1f}"]
        if with_qkv:
            cells += [f"{r['qkv_mb']:.1f}", f"{r['ratio']:.1f}×"]
        if measured is not None:
            got = measured.get(r["T"])
            cells.append("—" if got is None else f"{got / 1e6:.1f}")
        cells.append(Text(bar(r["mb"], top, bar_width), style="cyan"))
        table.add_row(*cells)
    return table
