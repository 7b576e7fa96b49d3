"""A function of the lesson judged as a step: on cases of several sizes (the lab's own first),
each call judged on what it returned and on its inputs left unchanged, then the function
called once more at the lab's size on new values, and its code its own (no library kernel).

The lesson says what a case is and how its value is judged (shape, values against the
reference, the likely mistake); the property does the rest, in the order every function step
follows: the lab's case, the other sizes as one check, then() where given, the call again.
A function that calls the learner's helpers (the earlier steps' functions) is judged the same
way, its failures blamed on the first wrong helper (probe_composed, judge_composed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from tutor.kit.call_again import (
    judge_called_again,
    judge_sizes_and_again,
    probe_calls_again,
    probe_named_calls_again,
)
from tutor.kit.helper_blame import (
    StandIns,
    blame_helpers,
    helper_verdicts,
    judge_helpers_replaced,
    probe_helper_calls,
    probe_helpers_replaced,
    with_args,
)
from tutor.kit.judge_tools import Verdict, changed_input, judge_other_sizes, judged, require_ran
from tutor.kit.kernels import no_kernel
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.spec import JudgeContext, StepSpec


def _no_explain(_fn: str, _outputs: dict, _first: Callable | None = None) -> None:
    return None


@dataclass(frozen=True)
class Helpers:
    """The learner's helpers a composed function calls (the earlier steps' functions): each
    as its step's SizedFunction, in step order; stand_ins, the reference of each ({name:
    (function, parameter names)}); given(case), {helper: the arguments the composed function
    gives it there}; check_id, the check that the function is right with the reference
    helpers in place of the learner's."""

    functions: tuple[SizedFunction, ...]
    stand_ins: StandIns
    given: Callable[[Any], Mapping[str, tuple]]
    check_id: str = "helpers-replaced"


@dataclass(frozen=True)
class SizedFunction:
    """fn (the learner's function) with params (its arguments' names, for inputs-unchanged; ()
    for arguments that are not tensors), args(case) (a case's arguments, or {name: arguments}
    for a function called several ways on each case: a causal mask and another, say),
    judge_value(v, value, *arguments) (with name=… where args names its calls), label(case)
    (for check.other_sizes) and explain(fn, outputs, first=None), judge_other_sizes' explain
    for fn's failures at other sizes, or None: outputs the probe's, first(i) a culprit to
    name before the size (a composed function's wrong helper) or None.
    own_formula: fn must compute its result itself (no_kernel; StepSpec.own_formula)."""

    fn: str
    params: tuple[str, ...]
    args: Callable[[Any], tuple | Mapping[str, tuple]]
    judge_value: Callable[..., None]
    label: Callable[[Any], Any]
    explain: Callable[..., Callable | None] = _no_explain
    own_formula: bool = True

    @property
    def what(self) -> str:
        """The call as messages name it: fn(q, k)."""
        return f"{self.fn}({', '.join(self.params)})"

    def judge_call(self, v: Verdict, call: dict, arguments: tuple, **name: str) -> None:
        """One call: it ran, judge_value on its value, its tensor arguments left unchanged."""
        require_ran(v, call, self.fn)
        self.judge_value(v, call["value"], *arguments, **name)
        if self.params:
            changed_input(v, self.fn, list(self.params), call["args"], arguments)

    def judge_case(self, v: Verdict, call: dict, case: Any) -> None:
        """The calls of one case (judge_call; each named call in args' order)."""
        arguments = self.args(case)
        if isinstance(arguments, Mapping):
            for name, named in arguments.items():
                self.judge_call(v, call[name], named, name=name)
        else:
            self.judge_call(v, call, arguments)

    def probe(self, ctx: ProbeContext, cases: Sequence[Any], again: Any) -> dict:
        """In the child: fn on each case (the first primary), then on again (after the others,
        so that anything they left behind shows): probe_calls_again's outputs."""
        fn, first = ctx.get(self.fn), self.args(again)
        if isinstance(first, Mapping):
            named = [self.args(c) for c in cases]
            return probe_named_calls_again(ctx, fn, named, first)  # type: ignore[arg-type]
        return probe_calls_again(ctx, fn, [self.args(c) for c in cases], first)  # type: ignore[misc]

    def judge(
        self,
        v: Verdict,
        outputs: dict,
        cases: Sequence[Any],
        again: Any,
        jctx: JudgeContext,
        then: Callable[[], None] | None = None,
    ) -> None:
        """The step's judge: judge_sizes_and_again over cases and again (then() after the other
        sizes), then no_kernel where own_formula."""
        named = self.args(again)
        judge_sizes_and_again(
            v,
            self.fn,
            outputs,
            cases,
            [self.label(c) for c in cases],
            self.judge_case,
            again,
            explain=self.explain(self.fn, outputs),
            first_name=next(iter(named)) if isinstance(named, Mapping) else None,
            then=then,
        )
        if self.own_formula:
            no_kernel(v, self.fn, jctx.source, {self.fn}, jctx.kernels)

    def helper_judge(self, source: str, arguments: tuple) -> Callable[[dict], Verdict]:
        """The judge of a call made on arguments but sent without them (a helper called as a
        composed function would call it: helper_verdicts' judges), on a verdict of its own."""
        return lambda call: judged(source, self.judge_call, with_args(call, *arguments), arguments)

    def probe_composed(
        self,
        ctx: ProbeContext,
        cases: Sequence[Any],
        again: Any,
        helpers: Helpers,
    ) -> dict:
        """probe, for a function that calls the learner's helpers, and for judge_composed: fn
        on every case and again with the reference helpers in place, and each helper on what
        fn gives it there."""
        out = self.probe(ctx, cases, again)
        every = [*cases, again]
        args = [self.args(c) for c in every]
        fn = ctx.get(self.fn)
        out["alone"] = probe_helpers_replaced(ctx, fn, args, helpers.stand_ins)  # type: ignore[arg-type]
        out["parts"] = probe_helper_calls(ctx, [helpers.given(c) for c in every])
        return out

    def judge_composed(
        self,
        v: Verdict,
        outputs: dict,
        cases: Sequence[Any],
        again: Any,
        jctx: JudgeContext,
        helpers: Helpers,
    ) -> None:
        """judge for probe_composed's outputs: each failure of the lab's case, the other sizes
        (explain(fn, outputs, blame), blame(i) the helper to fix at case i) and the call again
        blamed on the first wrong helper (each judged by its step's judge_call on what fn gives
        it) where fn is right with correct ones; the check helpers.check_id, fn right with the
        reference helpers (judge_helpers_replaced); no_kernel where own_formula."""
        calls, every = outputs["calls"], [*cases, again]

        def judges(case: Any) -> dict:
            given = helpers.given(case)
            return {f.fn: f.helper_judge(v.source, given[f.fn]) for f in helpers.functions}

        args = cast(Callable[[Any], tuple], self.args)  # a composed function: one call a case
        replaced, blame = helper_verdicts(
            v.source, outputs["alone"], outputs["parts"], every, self.judge_case, args, judges
        )
        try:
            self.judge_case(v, calls[0], cases[0])
        finally:
            blame_helpers(v, 0, lambda: blame(0))
        judge_helpers_replaced(v, replaced(0), check_id=helpers.check_id)
        labels = [self.label(c) for c in cases]
        judge_other_sizes(
            v,
            calls,
            list(cases),
            labels,
            self.judge_case,
            explain=self.explain(self.fn, outputs, blame),
        )
        first, again_call = calls[0].get("value"), outputs["again"]
        last = lambda: blame(len(cases))  # noqa: E731
        judge_called_again(
            v, self.fn, again_call, first, self.judge_case, again, defs=(self.fn,), blame=last
        )
        if self.own_formula:
            no_kernel(v, self.fn, jctx.source, {self.fn}, jctx.kernels)

    def step(
        self,
        cases: Callable[[dict], Sequence[Any]],
        again: Callable[[dict], Any],
        *,
        extra: Callable[[ProbeContext, Callable, dict], dict] | None = None,
        then: Callable[[Verdict, dict, dict], None] | None = None,
    ) -> StepSpec:
        """The whole step, on cases(inputs) and again(inputs); extra(ctx, fn, inputs), one more
        call of the probe's own (large scores, say), judged by then(v, that call, inputs) after
        the other sizes."""

        def probe(ctx: ProbeContext, inputs: dict) -> dict:
            out = self.probe(ctx, cases(inputs), again(inputs))
            if extra is not None:
                out["extra"] = extra(ctx, ctx.get(self.fn), inputs)
            return out

        def judge(v: Verdict, outputs: dict, inputs: dict, jctx: JudgeContext) -> None:
            more = (lambda: then(v, outputs["extra"], inputs)) if then is not None else None
            self.judge(v, outputs, cases(inputs), again(inputs), jctx, then=more)

        return StepSpec(probe, judge, (self.fn,), self.fn if self.own_formula else None)
