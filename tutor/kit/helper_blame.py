"""Blame for a composed function: when a step's function calls the learner's own helpers (the
earlier steps' functions), a fault in a helper is blamed on the helper's step, and a function
that is right only because it makes up for a wrong helper is caught.

Probe half: the function called with the reference's helpers in place of the learner's
(probe_helpers_replaced), and each of the learner's helpers on the inputs the function gives
them (probe_helper_calls). Judge half: the first wrong helper (first_wrong_helper) put as the likely
mistake of the step's failures (blame_helpers), and the check that the function is right with
correct helpers (judge_helpers_replaced).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from tutor.kit.borrowed import lend
from tutor.kit.call_again import trimmed
from tutor.kit.judge_tools import Verdict, judged, msg, nest_likely
from tutor.kit.probe_tools import ProbeContext

# A helper's reference: the function, and its parameters' names as the starter writes them.
StandIns = Mapping[str, tuple[Callable, tuple[str, ...]]]


def stand_in(learner_fn: Any, reference: Callable, params: Sequence[str]) -> Callable:
    """The reference helper, called as the learner's function calls the learner's own:
    keyword names included (read from the learner's helper, which may name them otherwise
    than the starter). Lent: the learner's code runs it on purpose."""

    def helper(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            try:
                args = tuple(inspect.signature(learner_fn).bind(*args, **kwargs).arguments.values())
            except Exception:  # no signature to read: the starter's names
                args = args + tuple(kwargs[p] for p in params[len(args) :] if p in kwargs)
        return reference(*args[: len(params)])

    return lend(helper)


@contextlib.contextmanager
def reference_helpers(ctx: ProbeContext, fn: Callable, stand_ins: StandIns) -> Iterator[bool]:
    """The learner's helpers named in stand_ins replaced by the references, in the globals fn
    reads them from (its module's for anything but a plain function), and put back after.
    Yields whether any was there to replace."""
    names = fn.__globals__ if type(fn) is types.FunctionType else vars(ctx.module)
    saved = {n: names[n] for n in stand_ins if n in names}
    try:
        for n, learner_fn in saved.items():
            names[n] = stand_in(learner_fn, *stand_ins[n])
        yield bool(saved)
    finally:
        names.update(saved)


def probe_helpers_replaced(
    ctx: ProbeContext, fn: Callable, arg_lists: Sequence[tuple], stand_ins: StandIns
) -> list[dict | None]:
    """fn on each of arg_lists with the reference helpers in place of the learner's; all None
    when fn's globals hold none of them. Make these calls after the step's own."""
    with reference_helpers(ctx, fn, stand_ins) as replaced:
        return [trimmed(ctx.call(fn, *args)) if replaced else None for args in arg_lists]


def probe_helper_calls(ctx: ProbeContext, given: Sequence[Mapping[str, tuple]]) -> list[dict]:
    """Each of the learner's helpers (the module's names in each mapping) on the arguments the
    composed function would give it, once per mapping: {name: call, or None where the file
    defines no such function}."""
    helpers = {n: getattr(ctx.module, n, None) for case in given for n in case}
    return [
        {
            n: trimmed(ctx.call(helpers[n], *args)) if callable(helpers[n]) else None
            for n, args in case.items()
        }
        for case in given
    ]


def with_args(call: dict, *args: Any) -> dict:
    """A diagnostic call (sent without its arguments) with the pristine ones, so that a case
    judge's inputs-unchanged check passes: it is judged on its values alone. A helper that
    changes its input in place fails its own step for that."""
    return {**call, "args": args} if "value" in call else call


def first_wrong_helper(
    replaced: Verdict | None,
    parts: Mapping[str, dict | None],
    judges: Mapping[str, Callable[[dict], Verdict]],
    *,
    key: str = "likely.helper_first_fix",
) -> dict | None:
    """The helper to fix first, as a likely mistake (key {fn}): when the composed function is
    right with the reference helpers (replaced: its verdict so, None if it names none), the
    first of judges (in step order) whose judge fails the learner's helper's call in parts.
    None when the function itself is at fault, or no helper is."""
    if replaced is None or not replaced.passed():
        return None
    for name, judge in judges.items():
        call = parts.get(name)
        if call is not None and not judge(call).passed():
            return msg(key, fn=name)
    return None


def blame_helpers(v: Verdict, start: int, blame: Callable[[], dict | None]) -> None:
    """The likely mistake of each failure recorded since check index start replaced by
    blame()'s (the helper to fix first), where it has one."""
    failed = [
        c.message.params
        for c in v.checks[start:]
        if c.status != "pass" and c.message is not None and "likely" in c.message.params
    ]
    likely = blame() if failed else None
    if likely:
        for params in failed:
            params["likely"] = likely


def judge_helpers_replaced(
    v: Verdict,
    replaced: Verdict | None,
    *,
    check_id: str = "helpers-replaced",
    key: str = "check.helpers_replaced",
    likely: dict | None = None,
) -> None:
    """The composed function must be right with the reference helpers too (replaced: its
    verdict so; nothing is checked when None): else it makes up for a wrong helper. Failure:
    key {reason} {likely}, likely defaulting to likely.compensates_helper."""
    if replaced is None:
        return
    ok = replaced.passed()
    reason, said = (
        nest_likely(
            replaced.failed_message() or msg(""), likely or msg("likely.compensates_helper")
        )
        if not ok
        else ({}, "")
    )
    v.expect(check_id, ok, key, reason=reason, likely=said)


def helper_verdicts(
    source: str,
    alone: Sequence[dict | None],
    parts: Sequence[Mapping[str, dict | None]],
    cases: Sequence[Any],
    judge_case: Callable,
    args_of: Callable[[Any], tuple],
    judges_of: Callable[[Any], Mapping[str, Callable[[dict], Verdict]]],
) -> tuple[Callable[[int], Verdict | None], Callable[[int], dict | None]]:
    """For a composed function judged on cases (in the order of the probe's arg lists):
    replaced(i), its verdict on cases[i] with the reference helpers (judge_case(sub, call,
    case) on alone[i], given args_of(case) as its arguments; None where it names no helper),
    and blame(i), the helper to fix first there (first_wrong_helper on parts[i] with
    judges_of(case)). Each is computed once, when first asked for: a passing step asks none."""

    @functools.cache
    def replaced(i: int) -> Verdict | None:
        call = alone[i]
        if call is None:
            return None
        return judged(source, judge_case, with_args(call, *args_of(cases[i])), cases[i])

    @functools.cache
    def blame(i: int) -> dict | None:
        return first_wrong_helper(replaced(i), parts[i], judges_of(cases[i]))

    return replaced, blame
