"""Horizontal bars in eighths of a cell, for tables of numbers (a view's bar cells)."""

from __future__ import annotations

BAR_WIDTH = 20
_EIGHTHS = " ▏▎▍▌▋▊▉"  # partial blocks: a small value still shows a sliver


def bar(value: float, vmax: float, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of `width` cells at most, in eighths of a cell."""
    if vmax <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / vmax * width * 8))
    full, part = divmod(min(eighths, width * 8), 8)
    return "█" * full + (_EIGHTHS[part] if part else "")
