"""A module's step method that carries a state (attention's past keys and values, a recurrent
state, a running sum), declared once as a property: StepUse. At every size of the lesson's grid
the module is made (ModuleRecipe), its step called on one token with the full pass's state of
the tokens before it, at a few past lengths (probe_step_grid, step_call), and each call judged
against the full pass at that position and its state one token longer (judge_step_call). At
the lab's size, the step is also called with weights whose scores reach LARGE_SCORES (the
large-scores check) and on a token LARGE_INPUT times larger (the large-inputs check); no
library kernel may stand in for the step (no_kernel). probe_trained / judge_trained: one
training step through it, its gradients against the reference step's.

A size is the constructor's values in the order of the recipe's keywords, then (B, T). A case
(inputs["cases"][i], one per size) holds "x" (B, T, d_in), "w" (the tutor's weights) and the
full pass's state tensors under the names StepUse.names; inputs["large"] is the lab's case with
weights whose scores reach LARGE_SCORES (large_scores_weights).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from tutor.kit.built_module import ModuleRecipe
from tutor.kit.judge_tools import Verdict, judged, large_scores_check
from tutor.kit.kernels import no_kernel
from tutor.kit.layer_training import reference_grads
from tutor.kit.magnitude import LARGE_INPUT, judge_large_inputs, large_input_weights
from tutor.kit.panels import judge_sized_cases
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.spec import JudgeContext, StepSpec
from tutor.kit.step_grid import judge_step_call, probe_step_grid, step_call
from tutor.kit.step_trainable import judge_step_trained, probe_step_trained


@dataclass(frozen=True)
class StepAt:
    """One call of a declared step, for the lesson's diagnoses: its case, size and past length
    t, the learner's source, the token x_t (B, 1, d_in) and the full pass's state after it (each
    tensor t + 1 tokens long)."""

    case: Mapping[str, Any]
    size: tuple
    t: int
    source: str
    x_t: torch.Tensor
    state: tuple[torch.Tensor, ...]


@dataclass(frozen=True)
class StepUse:
    """A step method with a state, declared once for its step's probe and judge (.spec()).

    full(x, w, size) is the reference's output at every position (B, T, d_out); step(x_t, past,
    w, size) the reference step, (out, state) (past None for the first token). likely(at) maps
    judge_step_call's likely roles to the lesson's diagnoses of the call at (a StepAt)."""

    recipe: ModuleRecipe  # the module's class, keywords, weight names and the step method
    sizes: Sequence[tuple]  # (constructor values…, B, T); the first is the lab's
    size_names: Sequence[str]
    full: Callable[[torch.Tensor, Mapping, tuple], torch.Tensor]
    step: Callable[..., tuple[torch.Tensor, tuple]]
    names: Sequence[str]  # the state's tensors, as the case holds them and the messages say them
    args: Sequence[str]  # the step's arguments, as the messages write its call
    likely: Callable[[StepAt], Mapping[str, Any]]
    large_scores_key: str  # {top} {reason} {likely}: the step fails where scores are large
    scores_weights: tuple[str, ...] = ("W_q", "W_k")  # divided for a token LARGE_INPUT larger
    axis: int = 1  # the tokens' axis of x
    state_axis: int = 2  # the tokens' axis of each state tensor

    def pasts(self, size: Sequence) -> list[int]:
        """The past lengths the step is given at size: none, T - 1, and at the lab's T // 2."""
        T, lab = size[-1], tuple(size) == tuple(self.sizes[0])
        return sorted({0, T - 1, *((T // 2,) if lab else ())})

    def at(self, case: Mapping[str, Any], size: tuple, t: int, source: str) -> StepAt:
        """The StepAt of the call at past length t on case."""
        x_t = case["x"].narrow(self.axis, t, 1)
        state = tuple(case[n].narrow(self.state_axis, 0, t + 1) for n in self.names)
        return StepAt(case, size, t, source, x_t, state)

    def past(self, case: Mapping[str, Any], t: int) -> tuple[torch.Tensor, ...]:
        """The full pass's state of the t tokens before position t."""
        return tuple(case[n].narrow(self.state_axis, 0, t) for n in self.names)

    def probe_trained(
        self, ctx: ProbeContext, cls: Callable, case: Mapping, g: torch.Tensor
    ) -> dict | None:
        """Runs in the child: a module made afresh at the lab's size, trained one step
        (probe_step_trained) on case's last token with the past before it, g the direction."""
        size = self.sizes[0]
        obj, _ = self.recipe.make(ctx, cls, size, case["w"])
        t = size[-1] - 1
        x_t = case["x"].narrow(self.axis, t, 1)
        return probe_step_trained(ctx, obj, self.recipe.method, x_t, self.past(case, t), g)

    def judge_trained(
        self,
        v: Verdict,
        train: dict | None,
        case: Mapping,
        g: torch.Tensor,
        *,
        keys: Mapping[str, str] | None = None,
        culprit: Callable[[], dict | None] = lambda: None,
    ) -> None:
        """probe_trained's call against the reference step's gradients (judge_step_trained)."""
        size = tuple(self.sizes[0])
        t = size[-1] - 1
        past = self.past(case, t)

        def forward(x: torch.Tensor, w: dict) -> torch.Tensor:
            return self.step(x, past, w, size)[0]

        x_t = case["x"].narrow(self.axis, t, 1)
        want, _ = reference_grads(forward, x_t, case["w"], g, self.recipe.names)
        judge_step_trained(v, train, want, keys=keys, culprit=culprit)

    def _call(self, ctx: ProbeContext, obj: Any, case: Mapping, t: int, **how: Any) -> Any:
        step = None if obj is None else getattr(obj, self.recipe.method)
        state = [case[n] for n in self.names]
        return step_call(
            ctx, step, case["x"], state, t, axis=self.axis, state_axis=self.state_axis, **how
        )

    def probe(self, ctx: ProbeContext, inputs: Mapping) -> dict:
        """Runs in the child: the grid's calls, then the large-scores and large-inputs calls."""
        cls, cases, size, large = ctx.get(self.recipe.cls), inputs["cases"], self.sizes[0], {}

        def make(i: int) -> tuple[Any, dict]:
            return self.recipe.make(ctx, cls, self.sizes[i], cases[i]["w"], primary=i == 0)

        def call(obj: Any, i: int, t: int, primary: bool) -> Any:
            return self._call(ctx, obj, cases[i], t, primary=primary)

        out = probe_step_grid(ctx, make, call, [self.pasts(s) for s in self.sizes])
        t, w = size[-1] - 1, large_input_weights(cases[0]["w"], self.scores_weights)
        for name, case, weights, scale in (
            ("large", inputs["large"], inputs["large"]["w"], None),
            ("large_x", cases[0], w, LARGE_INPUT),
        ):
            obj, failed = self.recipe.make(ctx, cls, size, weights)
            large[name] = failed or self._call(ctx, obj, case, t, scale=scale)
        return {"cases": out, **large}

    def judge_call(self, v: Verdict, call: dict, case: Mapping, size: tuple, t: int) -> None:
        """One call of the step on the token at position t, with a past of t tokens."""
        at = self.at(case, size, t, v.source)
        want = self.full(case["x"], case["w"], size).narrow(self.axis, t, 1)
        fn, likely = self.recipe.method, self.likely(at)
        names, axis = self.names, self.state_axis
        judge_step_call(
            v, call, t, want, at.state, fn=fn, likely=likely, names=names, state_axis=axis
        )

    def judge_case(self, v: Verdict, case_out: dict, case: Mapping, size: tuple) -> None:
        """Every call at one size: the module made, then each past length."""
        self.recipe.require(v, case_out, size)
        for call, t in zip(case_out["calls"], self.pasts(size), strict=False):
            self.judge_call(v, call, case, size, t)

    def judge(self, v: Verdict, outputs: Mapping, inputs: Mapping, jctx: JudgeContext) -> None:
        """The lab's size, the other sizes, no kernel, large scores, large inputs."""
        cases, size, cls = outputs["cases"], tuple(self.sizes[0]), self.recipe.cls
        self.judge_case(v, cases[0], inputs["cases"][0], size)
        judge_sized_cases(
            v, cases, inputs["cases"], self.sizes, self.size_names, self.judge_case, defs=(cls,)
        )
        no_kernel(v, self.recipe.method, jctx.source, {cls}, jctx.kernels)
        t, large = size[-1] - 1, outputs["large"]
        if "made" not in large:  # the same build passed above: it cannot fail but by chance
            sub = judged(v.source, self.judge_call, large, inputs["large"], size, t)
            large_scores_check(v, sub, self.large_scores_key)
        # The token and the state's last tensor s times larger, the scores as they were.
        case, s = inputs["cases"][0], LARGE_INPUT
        past = self.past(case, t)
        past = (*past[:-1], past[-1] * s)
        w = large_input_weights(case["w"], self.scores_weights)
        want = self.step(case["x"].narrow(self.axis, t, 1) * s, past, w, size)[0]
        got = None if "made" in outputs["large_x"] else outputs["large_x"]
        judge_large_inputs(v, got, want, what=f"{self.recipe.method}({', '.join(self.args)})")

    def spec(self, probe: Callable | None = None) -> StepSpec:
        """The step's StepSpec: this judge, probe (the lesson's, calling self.probe) or this
        probe, the module's class as the function it runs, its step as its own formula."""
        cls, method = self.recipe.cls, self.recipe.method
        return StepSpec(probe or self.probe, self.judge, (cls,), own_formula=method)
