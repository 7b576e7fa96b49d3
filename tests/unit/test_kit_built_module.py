"""The kit's made-module property (tutor.kit.built_module): a learner's module built by keyword
with the tutor's weights, in eval mode, with the method a step calls; or why not, said in the
engine's words or the lesson's."""

from __future__ import annotations

import types

import torch
from torch import nn

from tutor.kit import judged, made_module, msg, require_made
from tutor.kit.built_module import MADE_LIKELY, MADE_WORDS
from tutor.kit.probe_tools import ProbeContext

W = {"W": torch.full((2, 3), 0.25)}
NAMES = {"lin.weight": "W"}
KEYS = {"no_method": "check.no_method", "build_raised": "check.build_raised"}
LIKELY = {"no_method": msg("likely.no_method"), "build_raised": msg("likely.build")}


class Right(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out, bias=False)

    def step(self, x, state=None):
        return self.lin(x), state


class NoStep(Right):
    step = None  # type: ignore[assignment]


class Raises(Right):
    def __init__(self, d_in, d_out):
        raise ValueError("no")


def make(cls):
    ctx = ProbeContext(types.ModuleType("learner"), "learner.py", "", None)
    return made_module(ctx, cls, ("d_in", "d_out"), (3, 2, 99), W, NAMES, method="step")


def said(made, **words) -> dict | None:
    def judge(v):
        require_made(v, made, ("d_in", "d_out"), (3, 2), cls="Right", method="step", **words)

    return judged("", judge).failed_message()


def test_a_right_module_is_made_with_the_weights_in_eval_mode():
    module, failed = make(Right)
    assert failed == {}
    assert not module.training
    assert torch.equal(module.lin.weight, W["W"])


def test_a_module_without_the_method_is_named():
    module, failed = make(NoStep)
    assert module is None
    assert said(failed["made"], keys=KEYS, likely=LIKELY)["key"] == "check.no_method"
    # In the engine's words: the class and the method named.
    message = said(failed["made"])
    assert message["key"] == "check.made_no_method"
    assert message["params"]["cls"] == "Right"
    assert message["params"]["method"] == "step"
    assert message["params"]["likely"] == msg("likely.made_method_place", method="step")


def test_a_constructor_that_raises_says_its_arguments():
    module, failed = make(Raises)
    assert module is None
    message = said(failed["made"], keys=KEYS, likely=LIKELY)
    assert message["key"] == "check.build_raised"
    assert message["params"]["args"] == "d_in=3, d_out=2"
    message = said(failed["made"])
    assert message["key"] == "check.made_build_raised"
    assert (message["params"]["cls"], message["params"]["likely"]["key"]) == (
        "Right",
        "likely.made_constructor",
    )


def test_the_engine_words_are_in_both_catalogs():
    from tutor.text.i18n import engine_catalog

    for lang in ("en", "zh"):
        assert {*MADE_WORDS.values(), *MADE_LIKELY.values()} <= set(engine_catalog(lang))


def test_a_recipe_makes_and_requires_as_the_two_functions_do():
    from tutor.kit import ModuleRecipe

    recipe = ModuleRecipe("Right", ("d_in", "d_out"), NAMES, "step")
    ctx = ProbeContext(types.ModuleType("learner"), "learner.py", "", None)
    module, failed = recipe.make(ctx, Right, (3, 2, 99), W)
    assert failed == {} and torch.equal(module.lin.weight, W["W"]) and not module.training
    _, failed = recipe.make(ctx, NoStep, (3, 2, 99), W)

    def judge(v):
        recipe.require(v, {"calls": []}, (3, 2))  # made: nothing to say
        recipe.require(v, failed, (3, 2))

    message = judged("", judge).failed_message()
    assert message["key"] == "check.made_no_method"
    assert (message["params"]["cls"], message["params"]["method"]) == ("Right", "step")


def test_method_of_is_the_made_module_s_method_or_none():
    from tutor.kit import ModuleRecipe

    ctx = ProbeContext(types.ModuleType("learner"), "learner.py", "", None)
    recipe = ModuleRecipe("Right", ("d_in", "d_out"), NAMES, "step")
    step = recipe.method_of(ctx, Right, (3, 2), W)
    assert step is not None
    assert torch.equal(step(torch.ones(1, 1, 3))[0], torch.full((1, 1, 2), 0.75))
    assert recipe.method_of(ctx, Raises, (3, 2), W) is None
