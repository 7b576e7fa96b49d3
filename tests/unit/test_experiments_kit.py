"""The kit's experiment helpers: the learner's exercise function or the tutor's, calls chained
on an earlier call, a row's entropy, rows that are not finite, a call that raised as a note,
and one heatmap (or panel entry) per head."""

from __future__ import annotations

import math
import types

import torch

from tutor.kit import (
    call_after,
    exercise_functions,
    first_raised_note,
    head_maps,
    head_panel,
    mean_row_entropy,
    msg,
    nonfinite_rows,
    pair_weights,
    raised_note,
)
from tutor.kit.probe_tools import ProbeContext

SOURCE = """
def mine(x):
    return x + 1


def broken(x):
    raise ValueError("no")
"""


def context() -> ProbeContext:
    module = types.ModuleType("learner")
    exec(compile(SOURCE, "learner.py", "exec"), module.__dict__)
    return ProbeContext(module, "learner.py", SOURCE, None)


def test_the_learners_exercise_or_the_tutors():
    own = {"mine": lambda x: x, "absent": lambda x: x * 2}
    fns, missing = exercise_functions(context(), own)
    assert (
        missing == ["absent"] and fns["absent"] is own["absent"] and fns["mine"] is not own["mine"]
    )


def test_a_call_after_one_that_raised_is_that_call():
    ctx = context()
    ran = ctx.call(ctx.get("mine"), torch.ones(2))
    assert torch.equal(call_after(ctx, ctx.get("mine"), ran)["value"], torch.full((2,), 3.0))
    failed = ctx.call(ctx.get("broken"), torch.ones(2))
    assert call_after(ctx, ctx.get("mine"), failed) is failed
    note = raised_note(failed, "broken")
    assert note is not None and note["text"]["params"]["kind"] == "ValueError"
    assert note["text"]["key"] in ("visual.fn_raised_line", "visual.fn_raised")
    assert raised_note(ran, "mine") is None
    assert first_raised_note([(ran, "mine"), (failed, "broken")], key="k", line_key="k") == {
        "kind": "note",
        "text": {"key": "k", "params": note["text"]["params"]},
    }
    assert first_raised_note([(ran, "mine")]) is None


def test_entropy_is_zero_for_one_key_and_ln_n_for_n_keys_alike():
    one_key = torch.eye(4)
    even = torch.full((4, 4), 0.25)
    assert mean_row_entropy(one_key) == 0.0
    assert abs(mean_row_entropy(even) - math.log(4)) < 1e-4
    nan_row = torch.cat([torch.full((1, 4), float("nan")), even[1:]])
    assert abs(mean_row_entropy(nan_row) - math.log(4)) < 1e-4  # the NaN row skipped
    assert mean_row_entropy([1.0]) is None
    assert nonfinite_rows(nan_row) == [0] and nonfinite_rows(even) == []


def test_one_map_and_one_panel_entry_per_head():
    w = torch.softmax(torch.randn(1, 3, 4, 4), -1)
    maps = head_maps(w, lambda h: msg("visual.head", h=h))
    assert maps["kind"] == "row" and len(maps["items"]) == 2
    panel = head_panel(None, w, lambda h: msg("visual.head", h=h))
    assert (
        len(panel) == 3 and panel[0]["learner"] is None and panel[2]["label"]["params"] == {"h": 2}
    )


def test_the_weights_of_a_pair_only():
    w = torch.ones(1, 2, 3, 3)
    assert pair_weights({"value": (torch.ones(3), w)}) is w
    assert pair_weights({"value": (torch.ones(3), w)}, (1, 2, 4, 4)) is None
    assert pair_weights({"value": w}) is None and pair_weights({"error": {}}) is None
