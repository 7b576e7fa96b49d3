"""How a lesson's checks.py declares its steps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class StepSpec:
    probe: Callable  # (ProbeContext, inputs) -> outputs; runs in the child
    judge: Callable  # (Verdict, outputs, inputs, JudgeContext) -> None; runs in the judge
    functions: tuple[str, ...]  # the learner's names this step exercises
    # The name a library attention kernel is blamed on (check.kernel, check id own-formula):
    # the first learner call that runs one ends the probe, so a slow kernel costs one call.
    # None: the step may call kernels, or its judge alone says.
    own_formula: str | None = None


@dataclass
class JudgeContext:
    source: str
    kernels: list[str]  # library kernels the child saw being called
    views: bool = True  # False: nobody will look at verdict.visuals (`check`, `grade`)
