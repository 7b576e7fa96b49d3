"""Exercises: the learner changes one thing (drops the scale, shifts the mask, scales one head's
queries), the tutor runs the variant in place of the original and shows what changed. No
verdict rests on them: a view says whether the change is the one asked for, and shows the
answer once it is.

Each exercise is an Exercise (its question, the file's function for it, the tutor's change
where the file has none, and the lesson's message keys); each property has a
probe half run in the child and a view made in the judge: a change to the scores seen by
the weights' entropy over a sweep of sizes (probe_entropy_sweep, entropy_sweep_view), a
changed mask seen in the weights it gives (probe_mask_variant, mask_variant_view), and a
change to one head's input seen in each head's weights before and after (probe_head_variant,
head_variant_view).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from tutor.kit.call_again import trimmed
from tutor.kit.experiments import (
    before_after_maps,
    call_after,
    entropy_table,
    first_raised_note,
    head_maps,
    made_note,
    nonfinite_rows,
    pair_weights,
    raised_note,
    returned_note,
    rows_note,
    same_tensor,
)
from tutor.kit.judge_tools import describe, msg, round_matrix, shape_str
from tutor.kit.mask_checks import mask_difference
from tutor.kit.probe_tools import ProbeContext
from tutor.model.view_items import after_answer, heatmap, note, waiting, with_question


@dataclass(frozen=True)
class Exercise:
    """One exercise: question (1-based, the step's), fn (the file's function holding the
    learner's change), own (the change asked for: run where the file has no fn, and what the
    learner's is compared with) and texts, the lesson's message keys, each named
    <section>.<name>_<ending> (a name without "_") and found by its ending: "_task",
    "_unchanged" (the variant does what the original does), "_other" (it is not the change
    asked for), "_why" (the answer, shown once the change is right); each view names the
    further endings it reads. Written out in full, so that `dev check` finds each key in the
    lesson's catalogs."""

    question: int
    fn: str
    own: Callable[..., Any]
    texts: tuple[str, ...]

    def key(self, ending: str) -> str:
        """The key of texts named <section>.<name>_<ending> (a KeyError names a missing one)."""
        for k in self.texts:
            if k.rpartition(".")[2].partition("_")[2] == ending:
                return k
        raise KeyError(f"{self.fn}: no text ending in _{ending} among {self.texts}")


def exercise_items(ex: Exercise, shown: Sequence[dict], said: Sequence[dict], right: bool) -> list:
    """The exercise's view: shown and said under its question, then its answer (_why) where
    right, hidden until the question is answered."""
    answer = [after_answer(ex.question, note(msg(ex.key("why"))))] if right else []
    return [with_question(ex.question, *shown, *said), *answer]


def variant_said(
    ex: Exercise,
    got: Sequence[Any],
    asked: Sequence[Any],
    original: Sequence[Any],
    other: Callable[[], dict] = dict,
) -> tuple[bool, list[dict]]:
    """Whether the variant's values got are the change asked for (each same_tensor as asked's),
    and the note when not: _unchanged where they are the original's, else _other (with the
    parameters other() gives)."""
    if all(same_tensor(g, a) for g, a in zip(got, asked, strict=True)):
        return True, []
    if all(same_tensor(g, o) for g, o in zip(got, original, strict=True)):
        return False, [note(msg(ex.key("unchanged")))]
    return False, [note(msg(ex.key("other"), **other()))]


def probe_entropy_sweep(
    ctx: ProbeContext,
    ex: Exercise,
    fn: Callable,
    variant: Callable,
    then: Callable,
    sizes: Sequence[Any],
    make_args: Callable[[Any], tuple],
    *rest: Any,
) -> list[dict]:
    """For each of sizes, on make_args(size): fn (the original) and variant (the learner's
    change, or the tutor's) each followed by then(value, *rest) (the weights, say), and the
    change asked for (ex.own) computed here: what entropy_sweep_view reads."""
    rows = []
    for size in sizes:
        args = make_args(size)
        base, changed = trimmed(ctx.call(fn, *args)), trimmed(ctx.call(variant, *args))
        rows.append(
            {
                "label": str(size),
                "base": base.get("value"),
                "changed": changed,
                "asked": ex.own(*args),
                "with": trimmed(call_after(ctx, then, base, *rest)).get("value"),
                "without": trimmed(call_after(ctx, then, changed, *rest)),
            }
        )
    return rows


def entropy_sweep_view(
    ex: Exercise,
    rows: list[dict],
    missing: Sequence[str],
    then: str,
    columns: Sequence[Any],
    **task,
) -> list:
    """probe_entropy_sweep's rows as an entropy_table (columns: its five headings) under the
    task (_task, task's parameters), with what the variant's calls raised (then: the name of
    the function run after it), else whether it is the change asked for (variant_said)."""
    said = made_note(missing, ex.fn)
    calls = [(r[part], f) for r in rows for part, f in (("changed", ex.fn), ("without", then))]
    failed = first_raised_note(calls)
    right = False
    if failed is not None:
        said.append(failed)
    else:
        got = [r["changed"].get("value") for r in rows]
        right, notes = variant_said(ex, got, [r["asked"] for r in rows], [r["base"] for r in rows])
        said += notes
    table_rows = [(r["label"], r["with"], r["without"].get("value")) for r in rows]
    shown = [note(msg(ex.key("task"), **task)), entropy_table(table_rows, columns)]
    return exercise_items(ex, shown, said, right)


def probe_mask_variant(
    ctx: ProbeContext, variant: Callable, weights_fn: Callable, T: int, scores: torch.Tensor
) -> dict:
    """In the child: variant(T), a mask, and weights_fn(scores, that mask) (the variant's call
    again where it raised): what mask_variant_view reads."""
    mask = trimmed(ctx.call(variant, T))
    weights = trimmed(ctx.call(weights_fn, scores, mask["value"])) if "value" in mask else mask
    return {"mask": mask, "weights": weights}


def mask_variant_view(
    ex: Exercise, missing: Sequence[str], probed: dict, original: torch.Tensor, weights_fn: str
) -> list:
    """A changed (T, T) mask and the weights weights_fn gave with it (probe_mask_variant's): the mask judged against the change asked for (ex.own(T); _other
    with mask_difference's parameters and T) or the original, head 0 of batch element 0 of
    the weights as a heatmap (_heatmap), and its rows that are not finite (_nan {row},
    _nan_rows {rows}); where none is and the change is right, _no_nan. A mask of another
    shape: _shape {T} {got}. The answer is shown once the change is right and row 0 (a
    query that sees nothing) is not finite."""
    T, mask_call, weights_call = original.shape[-1], probed["mask"], probed["weights"]
    said, shown = made_note(missing, ex.fn), [note(msg(ex.key("task")))]
    # What the variant did comes first: the weights fail on a mask of no use.
    square = lambda m: isinstance(m, torch.Tensor) and tuple(m.shape) == (T, T)  # noqa: E731
    bad = lambda m: msg(ex.key("shape"), T=T, got=describe(m))  # noqa: E731
    failed = returned_note(mask_call, ex.fn, square, bad) or raised_note(weights_call, weights_fn)
    if failed is not None:
        return exercise_items(ex, shown, [*said, failed], False)
    m, asked = mask_call["value"].bool(), ex.own(T)
    other = lambda: {"T": T, **(mask_difference(m, asked) or {})}  # noqa: E731
    right, notes = variant_said(ex, [m], [asked], [original], other)
    said += notes
    w = weights_call.get("value")
    nan_rows: list[int] = []
    if isinstance(w, torch.Tensor) and w.dim() == 4 and tuple(w.shape[-2:]) == (T, T):
        nan_rows = nonfinite_rows(w[0, 0])
        shown.append(heatmap(round_matrix(w[0, 0]), msg(ex.key("heatmap"))))
        if nan_rows:
            said.append(rows_note(nan_rows, ex.key("nan"), ex.key("nan_rows")))
        elif right:
            said.append(note(msg(ex.key("no_nan"))))
    return exercise_items(ex, shown, said, right and 0 in nan_rows)


def probe_head_variant(
    ctx: ProbeContext, variant: Callable, fn: Callable, x: Any, *rest: Any
) -> dict:
    """In the child: variant(x), then fn(x, *rest) and fn on the variant's value: what
    head_variant_view reads."""
    new = trimmed(ctx.call(variant, x))
    before = trimmed(ctx.call(fn, x, *rest))
    return {"x": new, "before": before, "after": trimmed(call_after(ctx, fn, new, *rest))}


def head_variant_view(
    ex: Exercise, missing: Sequence[str], x: torch.Tensor, probed: dict, fn: str, heads: int = 2
) -> list:
    """A change to one head's slice (axis 1) of an input x of shape (B, H, …), and the (out,
    weights) fn gave before and after it (probe_head_variant's). A value not of
    x's shape: _bad_return {expected} {got}; weights that cannot be drawn: _waiting. Then the
    first heads' weights before and after (_before {h}, _after {h}; _head {h}, once, where no head
    changed: _unchanged); _heads {heads} where several changed. The answer (_why {h} {other})
    once exactly one head changed and another did not."""
    said, shown = made_note(missing, ex.fn), [note(msg(ex.key("task")))]
    x_call, calls = probed["x"], (probed["before"], probed["after"])
    like_x = lambda y: isinstance(y, torch.Tensor) and y.shape == x.shape  # noqa: E731
    bad = lambda y: msg(ex.key("bad_return"), expected=shape_str(x.shape), got=describe(y))  # noqa: E731
    failed = returned_note(x_call, ex.fn, like_x, bad) or first_raised_note(
        [(c, fn) for c in calls]
    )
    if failed is not None:
        return exercise_items(ex, shown, [*said, failed], False)
    before, after = pair_weights(calls[0]), pair_weights(calls[1])
    if before is None or after is None or before.dim() != 4 or after.dim() != 4:
        return exercise_items(ex, shown, [*said, waiting(msg(ex.key("waiting")))], False)
    new = x_call["value"]
    changed = [h for h in range(x.shape[1]) if not torch.equal(new[:, h], x[:, h])]
    heads = min(heads, before.shape[1], after.shape[1])
    if not changed:  # nothing to compare: each head once
        said.append(note(msg(ex.key("unchanged"))))
        maps = [head_maps(before, lambda h: msg(ex.key("head"), h=h), heads)]
    else:
        title_before = lambda h: msg(ex.key("before"), h=h)  # noqa: E731
        title_after = lambda h: msg(ex.key("after"), h=h)  # noqa: E731
        maps = before_after_maps(before, after, heads, title_before, title_after)
        if len(changed) > 1:
            said.append(note(msg(ex.key("heads"), heads=changed)))
    others = [h for h in range(x.shape[1]) if h not in changed]
    if len(changed) != 1 or not others:
        return exercise_items(ex, [*shown, *maps], said, False)
    why = note(msg(ex.key("why"), h=changed[0], other=others[0]))
    return [with_question(ex.question, *shown, *maps, *said), after_answer(ex.question, why)]
