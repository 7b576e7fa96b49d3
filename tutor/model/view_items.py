"""The vocabulary of what a step shows under its text: plain data a lesson's judge builds (through
tutor.kit) and the UI draws (tutor.render.views) without knowing the lesson.

A step's judge puts a view in `verdict.visuals["view"]`: a list of items, each a dict with a
"kind". Every text is a message reference ({"key": ..., "params": {...}}, rendered in the
reader's language) or a plain string shown as it is (numbers, code). Pure: no torch, no
Textual; the items cross the process boundary as JSON.

Items:
- heading(text): a bold line; note(text): a paragraph of Markdown; waiting(text): a dim line in
  place of something not computed yet.
- table(columns, rows, align): cells are text, numbers, None ("—") or bar(value, top, style, width).
- heatmap(matrix, title, reference, hidden): a T×T matrix of weights (None for NaN); hidden, the
  cells no query may see (the causal future by default).
- row(*items): side by side when the screen is wide enough, else one under the other.
- keys(): where the step's settings line goes (the keys declared in lesson.toml's
  [[steps.settings]] and their current values); without one, the app draws it first.
- after_answer(question, *items): items that give a question's answer away (question is
  1-based): drawn under that question, and only once the learner has answered it or asked for
  the model answers (`m`).
- with_question(question, *items): items that belong to a question (an exercise's result):
  drawn under it, before the learner's answer, whether answered or not.

Besides the view, `verdict.visuals["heatmaps"]` holds the step's weights panel: weights(...) entries.
"""

from __future__ import annotations

from typing import Any

# An item, a cell or a weights entry: a JSON object (it crosses the process boundary so).
Item = dict[str, Any]
# A text: a message reference (text(...)) or a plain string shown as it is.
Text = Item | str

KINDS = (
    "heading",
    "note",
    "table",
    "heatmap",
    "row",
    "waiting",
    "keys",
    "after_answer",
    "with_question",
)
# The fields of the items (and of a weights entry): the vocabulary's own words, not a lesson's.
FIELDS = (
    "kind",
    "text",
    "columns",
    "rows",
    "align",
    "matrix",
    "title",
    "reference",
    "items",
    "question",
    "value",
    "top",
    "style",
    "width",
    "label",
    "learner",
    "why",
)
CELL_KINDS = ("bar",)  # a table cell may be a bar: {"kind": "bar", "value": v, "top": max, ...}
BAR_WIDTH = 8  # cells


def text(key: str, **params: Any) -> Item:
    """A message reference (the same shape as kit.msg)."""
    return {"key": key, "params": params}


def heading(title: Text) -> Item:
    """A heading over what follows in a view (a message reference or plain text)."""
    return {"kind": "heading", "text": title}


def note(body: Text) -> Item:
    """A paragraph of Markdown (inline code, bold, math in Unicode)."""
    return {"kind": "note", "text": body}


def waiting(body: Text) -> Item:
    """A dim line in place of something not computed yet (the learner's function is missing)."""
    return {"kind": "waiting", "text": body}


def bar(
    value: float | None,
    top: float,
    style: str = "green",
    width: int = BAR_WIDTH,
    label: str | None = None,
) -> Item:
    """A table cell drawn as a bar of value/top, `width` cells at most (None or 0: no bar).
    label: the figure written after the bar (a measured time); a labelled bar without a value
    is drawn "—" (not measured)."""
    cell = {"kind": "bar", "value": value, "top": top, "style": style, "width": width}
    return cell if label is None else {**cell, "label": label}


def table(columns: list[Any], rows: list[list[Any]], align: list[str] | None = None) -> Item:
    """columns: header texts; rows: cells (text, number, None for "—", or a bar);
    align: "left" or "right" per column (numbers right by default)."""
    return {
        "kind": "table",
        "columns": list(columns),
        "rows": [list(r) for r in rows],
        "align": list(align) if align else None,
    }


def heatmap(
    matrix: list[list[float | None]],
    title: Text,
    reference: list[list[float | None]] | None = None,
    hidden: list[list[bool]] | None = None,
) -> Item:
    """A T×T matrix (None for NaN) on the weights' 0–1 scale; with reference, drawn as a
    difference. hidden: hidden_cells(...) of the step's regions; without it, the causal future."""
    item: Item = {"kind": "heatmap", "matrix": matrix, "title": title, "reference": reference}
    if hidden is not None:
        item["hidden"] = hidden
    return item


def row(*items: Item) -> Item:
    """Items side by side when the screen is wide enough, else one under the other."""
    return {"kind": "row", "items": list(items)}


def keys() -> Item:
    """The place of the step's settings line (keys and current values, drawn by the app)."""
    return {"kind": "keys"}


def after_answer(question: int, *items: Item) -> Item:
    """Items that answer question `question` (1-based): hidden until it is answered or `m` is pressed."""
    return {"kind": "after_answer", "question": int(question), "items": list(items)}


def with_question(question: int, *items: Item) -> Item:
    """Items for question `question` (1-based), such as the result of the experiment it asks
    about: drawn under the question, before the answer, always."""
    return {"kind": "with_question", "question": int(question), "items": list(items)}


def is_item(value: object) -> bool:
    return isinstance(value, dict) and value.get("kind") in KINDS


def weights(
    label: Text,
    learner: list[list[float | None]] | None,
    reference: list[list[float | None]],
    why: Text | None = None,
    words: dict[str, Text] | None = None,
    hidden: list[list[bool]] | None = None,
) -> Item:
    """One entry of a step's weights panel (`w`, `h`, `d` in the app): the learner's matrix, or
    None when it could not be had (why: the text that says why; a generic one if not given),
    beside the reference's. A step's entries go in verdict.visuals["heatmaps"], in order (one
    per head, say). words: texts in place of the panel's own, for a matrix that is not attention
    weights, by WORDS name (the legend of each view and mark, the axes). hidden: the cells no
    query may see (hidden_cells of the step's regions), drawn masked, and a weight there as a
    leak; without it, the causal future (legend_masked then names it: a window needs its own)."""
    entry: Item = {"label": label, "learner": learner, "reference": reference}
    if why is not None:
        entry["why"] = why
    if hidden is not None:
        entry["hidden"] = hidden
    if words:
        unknown = set(words) - set(WORDS)
        if unknown:
            raise ValueError(f"weights(words=...): unknown {sorted(unknown)}; known: {WORDS}")
        entry["words"] = words
    return entry


# What weights(words=...) may replace: the panel's name in its title (weights), the legend of
# each view (learner, reference, diff) and cell mark (masked, leak, nan), the axes (keys: the
# columns, queries: the rows) and the d key's line naming the three views (weights_key_mode).
WORDS = (
    "weights",
    "legend_learner",
    "legend_reference",
    "legend_diff",
    "legend_masked",
    "legend_leak",
    "legend_nan",
    "axis_keys",
    "axis_queries",
    "weights_key_mode",
)
