"""The vocabulary of what a step shows under its text: plain data a lesson's judge builds (through
tutor.kit) and the UI draws (tutor.render.visuals) without knowing the lesson.

A view is a list of items, each a dict with a "kind". Every text is a message reference
({"key": ..., "params": {...}}, rendered in the reader's language) or a plain string shown as
it is (numbers, code). Pure: no torch, no Textual; the items cross the process boundary as JSON.
"""

from __future__ import annotations

KINDS = ("heading", "note", "table", "heatmap", "row", "waiting")
CELL_KINDS = ("bar",)  # a table cell may be a bar: {"kind": "bar", "value": v, "top": max, "style": "green"}


def text(key: str, **params) -> dict:
    """A message reference (the same shape as kit.msg)."""
    return {"key": key, "params": params}


def heading(title) -> dict:
    return {"kind": "heading", "text": title}


def note(body) -> dict:
    """A paragraph of Markdown (inline code, bold, math in Unicode)."""
    return {"kind": "note", "text": body}


def waiting(body) -> dict:
    """A dim line in place of something not computed yet (the learner's function is missing)."""
    return {"kind": "waiting", "text": body}


def bar(value: float | None, top: float, style: str = "green") -> dict:
    """A table cell drawn as a bar of value/top, beside or instead of the number."""
    return {"kind": "bar", "value": value, "top": top, "style": style}


def table(columns: list, rows: list[list], align: list[str] | None = None) -> dict:
    """columns: header texts; rows: cells (text, number, None for "—", or a bar);
    align: "left" or "right" per column (numbers right by default)."""
    return {"kind": "table", "columns": list(columns), "rows": [list(r) for r in rows],
            "align": list(align) if align else None}


def heatmap(matrix: list[list[float | None]], title, reference: list | None = None) -> dict:
    """A T×T matrix (None for NaN) on the weights' 0–1 scale; with reference, drawn as a difference."""
    return {"kind": "heatmap", "matrix": matrix, "title": title, "reference": reference}


def row(*items: dict) -> dict:
    """Items side by side when the screen is wide enough, else one under the other."""
    return {"kind": "row", "items": list(items)}


def is_item(value) -> bool:
    return isinstance(value, dict) and value.get("kind") in KINDS


def weights(label, learner: list | None, reference: list) -> dict:
    """One entry of a step's weights panel (`w`, `h`, `d` in the app): the learner's matrix, or
    None when it could not be had, beside the reference's. A step's entries go in
    verdict.visuals["heatmaps"], in order (one per head, say)."""
    return {"label": label, "learner": learner, "reference": reference}
