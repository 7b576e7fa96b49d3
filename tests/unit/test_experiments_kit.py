"""The kit's experiment helpers: the learner's exercise function or the tutor's, calls chained
on an earlier call, a row's entropy, rows that are not finite, a call that raised as a note,
and one heatmap (or panel entry) per head."""

from __future__ import annotations

import math
import types

import torch

from tutor.kit import (
    before_after_maps,
    call_after,
    entropy_table,
    exercise_functions,
    first_raised_note,
    head_maps,
    head_panel,
    made_note,
    mean_row_entropy,
    msg,
    nonfinite_rows,
    pair_weights,
    raised_note,
    returned_note,
    row_sums_rows,
    rows_note,
    same_tensor,
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


def test_the_made_note_only_for_a_missing_exercise():
    assert made_note(["ex"], "other") == []
    (said,) = made_note(["ex"], "ex")
    assert said["text"] == msg("visual.exercise_made", fn="ex")


def test_same_tensor_needs_two_close_tensors_of_one_shape():
    x = torch.arange(4.0)
    assert same_tensor(x, x + 1e-7) and not same_tensor(x, x + 1)
    assert not same_tensor(x, x[:3]) and not same_tensor(x, [0.0, 1.0, 2.0, 3.0])


def test_a_returned_value_is_said_when_it_raised_or_is_of_no_use():
    raised = {"error": {"kind": "ValueError", "detail": "no", "frames": []}}
    said = returned_note(raised, "ex", lambda x: True, lambda x: msg("visual.bad"))
    assert said["text"]["key"] == "visual.fn_raised"
    bad = returned_note({"value": 3}, "ex", lambda x: x == 2, lambda x: msg("visual.bad", got=x))
    assert bad["text"] == msg("visual.bad", got=3)
    assert returned_note({"value": 2}, "ex", lambda x: x == 2, lambda x: msg("visual.bad")) is None


def test_the_entropy_table_puts_both_entropies_on_one_scale():
    even = torch.full((1, 1, 2, 2), 0.5)
    peaked = torch.tensor([[[[1.0, 0.0], [1.0, 0.0]]]])
    shown = entropy_table([("8", even, peaked), ("16", even, None)], ["d", "a", "", "b", ""])
    first, second = shown["rows"]
    assert first[1] == f"{math.log(2):.2f}" and first[3] == "0.00"
    assert first[2]["top"] == first[4]["top"] == round(math.log(2), 4)
    assert second[3] is None


def test_before_and_after_maps_a_row_per_head_and_rows_named():
    w = torch.softmax(torch.randn(1, 3, 4, 4), -1)
    maps = before_after_maps(w, w * 0, 2, lambda h: msg("b", h=h), lambda h: msg("a", h=h))
    assert len(maps) == 2 and len(maps[0]["items"]) == 2
    assert maps[1]["items"][1]["title"] == msg("a", h=1)
    assert rows_note([3], "one", "many")["text"] == msg("one", row=3)
    assert rows_note([0, 3], "one", "many")["text"] == msg("many", rows=[0, 3])


def test_row_sums_are_one_line_when_all_are_one_else_a_line_per_head():
    w = torch.softmax(torch.randn(1, 2, 3, 3), -1)
    assert row_sums_rows(w) == [["row sums:", msg("visual.row_sums_one", n=6)]]
    half = torch.full((1, 5, 10, 10), 0.05)
    said = row_sums_rows(half)
    assert len(said) == 4 and said[1][0] == msg("visual.row_sums_head", h=1)
    assert said[0][1] == " ".join(["0.5000"] * 8) + " …"
    assert row_sums_rows(half.masked_fill(half > 0, float("nan"))) == []
