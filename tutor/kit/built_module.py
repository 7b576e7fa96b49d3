"""A learner's module made as a notebook makes it, as a property: built by keyword, the
tutor's weights loaded, in eval mode, with the method a step calls; or why not, said in the
engine's words (or the lesson's). The probe half (made_module) runs in the child, the judge
half (require_made) in the judge."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from tutor.kit.call_again import trimmed
from tutor.kit.judge_tools import Verdict, failure_params, msg
from tutor.kit.layers import build_layer, load_weights
from tutor.kit.probe_tools import ProbeContext

# The engine's text for each role of require_made (check keys, then the likely mistakes); a
# lesson's `keys` and `likely` override them role by role.
MADE_WORDS: dict[str, str] = {
    "no_method": "check.made_no_method",
    "build_raised": "check.made_build_raised",
}
MADE_LIKELY: dict[str, str] = {
    "no_method": "likely.made_method_place",
    "build_raised": "likely.made_constructor",
}


def made_module(
    ctx: ProbeContext,
    cls: Callable,
    keywords: Sequence[str],
    size: Sequence,
    weights: Mapping[str, torch.Tensor],
    names: Mapping[str, str],
    *,
    method: str | None = None,
    primary: bool = False,
    **extra: object,
) -> tuple[Any, dict]:
    """(module, {}): cls built by keyword (build_layer(cls, keywords, size, **extra)), weights
    loaded (load_weights by names), in eval mode, with a callable `method` where one is named;
    else (None, {"made": why}): the failed call, or {"no_method": True}."""
    made = ctx.call(lambda: build_layer(cls, keywords, size, **extra), primary=primary)
    if "error" in made:
        return None, {"made": trimmed(made)}
    module = made["value"]

    def load() -> None:
        load_weights(module, weights, names)
        module.eval()

    loaded = ctx.call(load)
    if "error" in loaded:
        return None, {"made": trimmed(loaded)}
    if method and not callable(ctx.call(lambda: getattr(module, method, None)).get("value")):
        return None, {"made": {"no_method": True}}
    return module, {}


def require_made(
    v: Verdict,
    made: dict,
    keywords: Sequence[str],
    size: Sequence,
    *,
    cls: str,
    method: str,
    keys: Mapping[str, str] | None = None,
    likely: Mapping[str, dict] | None = None,
) -> None:
    """made_module's why-not stops the step: no method, defined fails with keys["no_method"]
    {cls} {method} {likely}; a build or load that raised, runs with keys["build_raised"] {cls}
    {args} (the keyword arguments, as a call writes them) and the error's fields. cls: the
    class's name, method: the method's. The texts are the engine's (MADE_WORDS, MADE_LIKELY),
    true for any module; keys and likely (a message per role) override them role by role."""
    keys = {**MADE_WORDS, **(keys or {})}
    said = {
        "no_method": msg(MADE_LIKELY["no_method"], method=method),
        "build_raised": msg(MADE_LIKELY["build_raised"]),
        **(likely or {}),
    }
    args = ", ".join(f"{n}={s}" for n, s in zip(keywords, size, strict=False))
    v.require(
        "defined",
        not made.get("no_method"),
        keys["no_method"],
        cls=cls,
        method=method,
        likely=said["no_method"],
    )
    if "error" in made:
        e = made["error"]
        v.require(
            "runs",
            False,
            keys["build_raised"],
            cls=cls,
            args=args,
            **failure_params(e),
            likely=said["build_raised"],
        )


@dataclass(frozen=True)
class ModuleRecipe:
    """How a lesson's module is made for its steps, said once: the class's name, the
    constructor's keywords (a size's first values), the state_dict names of the tutor's weights
    (load_weights) and the method the steps call."""

    cls: str
    keywords: Sequence[str]
    names: Mapping[str, str]
    method: str

    def make(
        self,
        ctx: ProbeContext,
        cls: Callable,
        size: Sequence,
        weights: Mapping[str, torch.Tensor],
        *,
        primary: bool = False,
        **extra: object,
    ) -> tuple[Any, dict]:
        """made_module with the recipe's keywords, names and method."""
        return made_module(
            ctx,
            cls,
            self.keywords,
            size,
            weights,
            self.names,
            method=self.method,
            primary=primary,
            **extra,
        )

    def method_of(
        self,
        ctx: ProbeContext,
        cls: Callable,
        size: Sequence,
        weights: Mapping[str, torch.Tensor],
        **extra: Any,
    ) -> Callable | None:
        """The recipe's method on a module made by make (extra: more keywords, dropout=0.3,
        say); None where it could not be made."""
        module, _ = self.make(ctx, cls, size, weights, **extra)
        return None if module is None else getattr(module, self.method)

    def require(self, v: Verdict, outputs: Mapping, size: Sequence) -> None:
        """require_made on a probe's outputs where they hold make's why-not ("made")."""
        if "made" in outputs:
            require_made(v, outputs["made"], self.keywords, size, cls=self.cls, method=self.method)
