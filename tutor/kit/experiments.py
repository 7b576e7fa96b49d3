"""Experiment steps: the learner's own change to try (an exercise function) or the tutor's where
the file has none, calls chained on what an earlier call gave, and what their views say about
attention weights (a row's entropy, rows that are not finite, one heatmap per head) or about a
call that raised. No verdict rests on these: an experiment shows, it does not judge."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from tutor.kit.judge_tools import close, msg, round_matrix
from tutor.kit.probe_tools import ProbeContext
from tutor.model.view_items import bar, heatmap, note, row, table, weights


def exercise_functions(ctx: ProbeContext, own: Mapping[str, Callable]) -> tuple[dict, list[str]]:
    """The learner's function for each exercise name, or the tutor's own change (own[name])
    where the file has none, called as the learner's would be; and the names the tutor made
    (a view says so, and how to get the starter's)."""
    mine = {name: ctx.optional(name) for name in own}
    return {n: mine[n] or own[n] for n in own}, [n for n in own if mine[n] is None]


def call_after(ctx: ProbeContext, fn: Callable, call: dict, *rest: Any) -> dict:
    """fn on the value of an earlier call and rest; the earlier call itself if it failed (its
    error is what a view then says)."""
    return ctx.call(fn, call["value"], *rest) if "value" in call else call


def mean_row_entropy(w: Any) -> float | None:
    """Mean over rows of −Σ w·ln w (0 when one key takes all the weight), to 4 places,
    skipping rows that are not finite; None for what is not a tensor or has no finite row."""
    if not isinstance(w, torch.Tensor):
        return None
    w = w.double()
    ent = -(w * torch.log(w.clamp_min(1e-300))).sum(-1)
    ent = ent[torch.isfinite(ent)]
    return round(float(ent.mean()), 4) if ent.numel() else None


def nonfinite_rows(matrix: torch.Tensor) -> list[int]:
    """The rows of a (T_q, T_k) matrix with a NaN or an infinity (a query that sees no key)."""
    return [i for i, r in enumerate(matrix) if not torch.isfinite(r).all()]


def raised_note(
    call: dict,
    fn: str,
    *,
    key: str = "visual.fn_raised",
    line_key: str = "visual.fn_raised_line",
) -> dict | None:
    """What a call raised, as a note at its line in the learner's file (line_key {fn} {kind}
    {detail} {line}; key without a line); None if it ran. fn: the name to say where the
    traceback has none."""
    failure = call.get("error")
    if failure is None:
        return None
    frames = failure.get("frames") or []
    said = {
        "fn": frames[-1].get("function", fn) if frames else fn,
        "kind": failure.get("kind", "Exception"),
        "detail": str(failure.get("detail", ""))[:200],
    }
    if frames:
        return note(msg(line_key, line=frames[-1].get("line"), **said))
    return note(msg(key, **said))


def first_raised_note(calls: Sequence[tuple[dict, str]], **keys: str) -> dict | None:
    """raised_note for the first of (call, function name) that raised; None if all ran."""
    return next((said for call, fn in calls if (said := raised_note(call, fn, **keys))), None)


def head_maps(w: torch.Tensor, title: Callable[[int], dict], heads: int = 2) -> dict:
    """The first heads of batch element 0 of (B, H, T, T) weights as heatmaps side by side,
    each titled title(h)."""
    return row(*(heatmap(round_matrix(w[0, h]), title(h)) for h in range(min(heads, w.shape[1]))))


def head_panel(
    learner: torch.Tensor | None, reference: torch.Tensor, label: Callable[[int], dict]
) -> list[dict]:
    """The weights panel's entries for each head of batch element 0 of (B, H, T, T) weights:
    the learner's (None where they cannot be drawn) beside the reference's, labelled label(h)."""
    return [
        weights(
            label(h),
            round_matrix(learner[0, h]) if learner is not None else None,
            round_matrix(reference[0, h]),
        )
        for h in range(reference.shape[1])
    ]


def pair_weights(call: dict, shape: Sequence[int] | None = None) -> torch.Tensor | None:
    """The weights of the (out, weights) pair a call returned, to draw them: None when it did
    not return such a pair or (shape given) they have another shape."""
    value = call.get("value")
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], torch.Tensor)):
        return None
    return value[1] if shape is None or tuple(value[1].shape) == tuple(shape) else None


def made_note(missing: Sequence[str], fn: str) -> list[dict]:
    """[the note that the tutor made exercise fn's change itself, and how to get the starter's
    (visual.exercise_made {fn})] where fn is among missing (exercise_functions'); else []."""
    return [note(msg("visual.exercise_made", fn=fn))] if fn in missing else []


def same_tensor(a: Any, b: Any) -> bool:
    """a and b both tensors, of one shape, close (kit.close, in float64)."""
    tensors = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
    return tensors and a.shape == b.shape and close(a.double(), b.double())


def returned_note(
    call: dict, fn: str, ok: Callable[[Any], bool], bad: Callable[[Any], dict]
) -> dict | None:
    """What an exercise function's call did wrong, as a note: what it raised (raised_note),
    else note(bad(value)) where ok(value) is false; None when its value can be used."""
    said = raised_note(call, fn)
    value = call.get("value")
    return said if said is not None or ok(value) else note(bad(value))


def entropy_table(rows: Sequence[tuple[str, Any, Any]], columns: Sequence[Any]) -> dict:
    """Two sets of attention weights compared by mean_row_entropy, a row per setting: rows of
    (label, weights, other weights), each entropy to 2 places beside a bar (green, red) scaled
    to the largest; columns: the five headings (label, entropy, "", other entropy, "")."""
    ent = [(label, mean_row_entropy(a), mean_row_entropy(b)) for label, a, b in rows]
    top = max([x for _, a, b in ent for x in (a, b) if x is not None] or [1.0])

    def fmt(x: float | None) -> str | None:
        return None if x is None else f"{x:.2f}"

    cells = [
        [label, fmt(a), bar(a, top, "green"), fmt(b), bar(b, top, "red")] for label, a, b in ent
    ]
    return table(list(columns), cells, align=["left", "right", "left", "right", "left"])


def before_after_maps(
    before: torch.Tensor,
    after: torch.Tensor,
    heads: int,
    title_before: Callable[[int], dict],
    title_after: Callable[[int], dict],
) -> list[dict]:
    """A row per head h < heads of batch element 0 of (B, H, T, T) weights: the heatmap before a
    change (titled title_before(h)) beside the one after it."""
    return [
        row(
            heatmap(round_matrix(before[0, h]), title_before(h)),
            heatmap(round_matrix(after[0, h]), title_after(h)),
        )
        for h in range(heads)
    ]


def rows_note(rows: Sequence[int], one: str, many: str) -> dict:
    """A note naming rows (of a matrix: those not finite, say): one {row} for a single row,
    else many {rows}."""
    return note(msg(one, row=rows[0]) if len(rows) == 1 else msg(many, rows=list(rows)))


def row_sums_rows(w: torch.Tensor, *, lines: int = 4, width: int = 8) -> list[list]:
    """A printout's rows for the row sums of weights w (…, T_q, T_k): one row when every sum
    is 1 to within 5e-5 (visual.row_sums_one {n}), else a row for each of the first lines
    matrices (a batch element's head, counted from 0: visual.row_sums_head {h}) with its first
    width sums to 4 places; [] where w is not a finite tensor of at least two dimensions."""
    if w.dim() < 2 or not bool(torch.isfinite(w).all()):
        return []
    sums = w.double().sum(-1).reshape(-1, w.shape[-2])
    if torch.allclose(sums, torch.ones_like(sums), rtol=0, atol=5e-5):
        return [["row sums:", msg("visual.row_sums_one", n=sums.numel())]]
    return [
        [
            msg("visual.row_sums_head", h=h),
            " ".join(f"{x:.4f}" for x in line[:width].tolist())
            + (" …" if len(line) > width else ""),
        ]
        for h, line in enumerate(sums[:lines])
    ]
