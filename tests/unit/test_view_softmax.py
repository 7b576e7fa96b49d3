"""ctx.call keeps the last softmax's output for the views (the weights panel) only at sizes the
views draw: a copy of every softmax at large T would cost a learner's run its memory (a layer
at T = 1,024 with 12 heads: 48 MB a copy)."""

from __future__ import annotations

import types

import torch

from tutor.kit.probe_tools import VIEW_SOFTMAX_MAX, ProbeContext


def context(views: bool) -> ProbeContext:
    ctx = ProbeContext(types.ModuleType("learner"), "learner.py", "", None)
    ctx.views = views
    return ctx


def two_softmaxes(s):
    return torch.softmax(s, -1) + torch.softmax(2 * s, -1)


def test_a_small_softmax_is_kept_for_the_views_as_computed():
    s = torch.randn(2, 2, 6, 6)
    kept = context(views=True).call(two_softmaxes, s)["softmax"]
    assert torch.equal(kept, torch.softmax(2 * s, -1))  # the last one


def test_a_softmax_past_what_a_view_draws_is_not_copied():
    side = int(VIEW_SOFTMAX_MAX**0.5) * 2
    call = context(views=True).call(two_softmaxes, torch.randn(1, 1, side, side))
    assert call["softmax"] is None and "value" in call


def test_without_views_no_softmax_is_kept():
    assert context(views=False).call(two_softmaxes, torch.randn(2, 2, 6, 6))["softmax"] is None
