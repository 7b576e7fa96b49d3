"""The kit's leakage test and map panel, and an (out, weights) pair's parts: an output that a
later token moved fails the test, one that it left alone passes; the panel draws both maps on
the reference's scale."""

from __future__ import annotations

import pytest
import torch

from tutor.kit import (
    Stop,
    Verdict,
    leak_map_panel,
    moved_before,
    msg,
    out_of_pair,
    pair_output,
    pair_weights,
    reference_leak_outputs,
    require_no_leak,
    require_pair_output,
)


def causal_mean(x):
    return x.cumsum(1) / torch.arange(1, x.shape[1] + 1).view(1, -1, 1)


def whole_mean(x):
    return x.mean(1, keepdim=True).expand_as(x)


def leak_verdict(fn) -> Verdict:
    x = torch.randn(2, 5, 3)
    later = x.clone()
    later[:, 4] += 3
    v = Verdict()
    try:
        require_no_leak(v, fn(x), fn(later), 4, key="lesson.leak", likely=msg("likely.leak"))
    except Stop:
        pass
    return v


def test_a_later_token_must_not_move_an_earlier_output():
    assert leak_verdict(causal_mean).passed()
    v = leak_verdict(whole_mean)
    assert v.failed_message()["key"] == "lesson.leak"
    assert v.failed_message()["params"]["pos"] == 4 and v.failed_message()["params"]["got"] > 0
    assert moved_before(torch.zeros(1, 3), torch.ones(1, 3), 0) == 0.0


def test_the_panel_puts_a_leak_on_the_references_scale():
    x, delta = torch.randn(1, 4, 2), torch.ones(1, 2)
    ref_base, ref_moved = reference_leak_outputs(causal_mean, x, delta)
    assert len(ref_moved) == 4
    base, moved = reference_leak_outputs(whole_mean, x, delta)
    entry = leak_map_panel({"key": "map"}, base, torch.cat(moved), ref_base, ref_moved, {})
    assert entry["reference"][0][1] == 0.0 and entry["learner"][0][1] > 0.0
    assert max(map(max, entry["reference"])) == 1.0


def test_a_pairs_parts():
    out, w = torch.zeros(2, 3), torch.ones(2, 2)
    assert out_of_pair((out, w)) is out and out_of_pair(out) is out
    assert pair_output({"value": (out, w)}) is out and pair_output({"value": out}) is None
    assert pair_weights({"value": (out, w)}, (2, 2)) is w
    assert pair_weights({"value": (out, w)}, (2, 3)) is None


def test_a_pairs_output_is_required_of_its_shape():
    out, w = torch.zeros(2, 3), torch.ones(2, 2)

    def run(call):
        v = Verdict()
        try:
            return v, require_pair_output(v, call, "f", (2, 3), "likely.pair")
        except Stop:
            return v, None

    v, got = run({"value": (out, w)})
    assert v.passed() and got is out
    v, _ = run({"value": out})
    assert v.failed_message()["params"]["likely"] == msg("likely.pair")
    v, _ = run({"value": (None, w)})
    assert v.failed_message()["params"]["likely"]["key"] == "likely.forgot_return"


def test_without_words_the_panel_and_the_check_are_the_engines():
    from tutor.kit import LEAK_MAP_WORDS
    from tutor.text.i18n import engine_catalog

    for lang in ("en", "zh"):
        assert set(LEAK_MAP_WORDS.values()) <= set(engine_catalog(lang))
    x, delta = torch.randn(1, 4, 2), torch.ones(1, 2)
    ref_base, ref_moved = reference_leak_outputs(causal_mean, x, delta)
    entry = leak_map_panel({"key": "map"}, None, None, ref_base, ref_moved)
    assert entry["words"]["weights"] == msg("visual.leak_title")
    v = Verdict()
    with pytest.raises(Stop):
        require_no_leak(v, whole_mean(x), whole_mean(x + 1), 2, likely=msg("likely.no_leak"))
    assert v.failed_message()["key"] == "check.no_leak"
