"""The kit's state faults (tutor.kit.state_faults): what a wrong state that should hold t + 1
tokens along one axis says about the step that made it. Each wrong state is named; a right
one, or one wrong in no known way, is not."""

from __future__ import annotations

import torch

from tutor.kit import (
    msg,
    state_fault_likely,
    state_shape_fault,
    state_value_fault,
    tokens_elsewhere,
)

B, H, D = 2, 3, 4


def state(n: int, *, layout=(B, H, 0, D)) -> torch.Tensor:
    shape = tuple(n if s == 0 else s for s in layout)
    return torch.arange(float(torch.Size(shape).numel())).reshape(shape)


def test_each_wrong_shape_is_named():
    t, want = 3, (B, H, 4, D)
    right = state(4)
    assert state_shape_fault((right, state(1)), want, t, axis=2) == "last_behind"
    assert state_shape_fault((state(1), state(1)), want, t, axis=2) == "not_appended"
    assert state_shape_fault((state(3), state(3)), want, t, axis=2) == "given_back"
    elsewhere = state(4, layout=(B, 0, H, D))
    assert state_shape_fault((elsewhere, elsewhere), want, t, axis=2) == "layout"
    assert state_shape_fault((state(7), state(7)), want, t, axis=2) == "twice"
    wide = torch.zeros(B, H, 1, 4 * D)
    assert state_shape_fault((wide, wide), want, t, axis=2) == "axis"
    assert state_shape_fault((torch.zeros(5), None), want, t, axis=2) is None
    assert state_shape_fault((state(6), state(6)), want, t, axis=2) is None


def test_tokens_elsewhere_is_a_swap_of_the_tokens_axis_only():
    assert tokens_elsewhere((B, 4, H, D), (B, H, 4, D), 2)
    assert not tokens_elsewhere((B, H, 4, D), (B, H, 4, D), 2)
    assert not tokens_elsewhere((H, B, 4, D), (B, H, 4, D), 2)


def test_wrong_values_are_named():
    t = 3
    k, v = torch.randn(B, H, 4, D), torch.randn(B, H, 4, D)
    first = k[:, :, [3, 0, 1, 2]]
    assert state_value_fault((k, v), (k, v), t, axis=2) is None
    assert state_value_fault((first, v), (k, v), t, axis=2) == "prepended"
    assert state_value_fault((v, k), (k, v), t, axis=2) == "swapped"
    assert state_value_fault((k + 1, v), (k, v), t, axis=2) is None


def test_a_fault_is_said_in_the_engines_words_with_the_axis_and_names():
    said = state_fault_likely("last_behind", axis=2, names=("k", "v"))
    assert said == msg("likely.state_last_behind", axis=2, first="k", final="v", state="k, v")
    assert state_fault_likely(None, axis=2, names="kv") is None
    assert state_fault_likely("other", axis=2, names="kv") is None  # no words: the lesson's
    mine = state_fault_likely("twice", axis=1, names="ab", keys={"twice": "likely.mine"})
    assert mine is not None and mine["key"] == "likely.mine"


def test_the_engine_has_words_for_every_fault():
    from tutor.kit.state_faults import STATE_FAULT_WORDS
    from tutor.text.i18n import engine_catalog

    t, want = 3, (B, H, 4, D)
    named = {
        state_shape_fault([state(4), state(3)], want, t, axis=2),
        state_shape_fault([state(1), state(1)], want, t, axis=2),
        state_shape_fault([state(3), state(3)], want, t, axis=2),
    }
    assert named <= set(STATE_FAULT_WORDS)
    for lang in ("en", "zh"):
        assert set(STATE_FAULT_WORDS.values()) <= set(engine_catalog(lang))
