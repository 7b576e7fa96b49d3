"""A step that asks for shapes, not values: a function returning {stage name: shape} for sizes
it is given (what each tensor of a forward is, written down before the code). Judged against
shapes the lesson measures on real tensors, so the answer key is never typed by hand."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tutor.kit.judge_tools import Verdict, describe, msg, require_ran, shape_str
from tutor.kit.panels import judge_sized_cases

# The roles of the step's texts (a lesson passes its key for each): not_dict {got}, missing
# {keys}, type {key} {expected} {got} {type}, float {key} {expected} {got} {likely}, float_likely,
# value {key} {expected} {got} {likely}.
NAMED_SHAPES_WORDS = ("not_dict", "missing", "type", "float", "float_likely", "value")
# The engine's text for each (not_dict and missing also get {count}, the number of names).
NAMED_SHAPES_KEYS = {
    "not_dict": "check.shapes_not_dict",
    "missing": "check.shapes_missing",
    "type": "check.shapes_type",
    "float": "check.shapes_float",
    "float_likely": "likely.shapes_float",
    "value": "check.shapes_value",
}


def judge_named_shapes(
    v: Verdict,
    got: object,
    truth: Mapping[str, tuple],
    *,
    likely: Callable[[str, tuple], dict],
    keys: Mapping[str, str] | None = None,
) -> None:
    """got must be a dict with every name of truth, each a tuple of ints equal to truth's, in
    truth's order; the first wrong entry fails, as its own check: returns-dict, all-keys,
    tuples (a list, floats from a division, anything else), values (likely(name, got) says the
    mistake behind a wrong shape). keys: a lesson's own key for any role of NAMED_SHAPES_WORDS,
    over the engine's (NAMED_SHAPES_KEYS)."""
    keys = {**NAMED_SHAPES_KEYS, **(keys or {})}
    count = len(truth)
    v.require(
        "returns-dict", isinstance(got, dict), keys["not_dict"], got=describe(got), count=count
    )
    assert isinstance(got, dict)
    missing = [k for k in truth if k not in got]
    v.require("all-keys", not missing, keys["missing"], keys=", ".join(missing), count=count)
    for key, want in truth.items():
        value = got[key]
        expected = shape_str(want)
        if isinstance(value, list) and all(isinstance(i, int) for i in value):
            v.require(
                "tuples",
                False,
                keys["type"],
                key=key,
                expected=expected,
                got=str(value),
                type="list",
            )
        if isinstance(value, tuple) and any(isinstance(i, float) for i in value):
            v.require(
                "tuples",
                False,
                keys["float"],
                key=key,
                expected=expected,
                got=str(value),
                likely=msg(keys["float_likely"]),
            )
        is_shape = isinstance(value, tuple) and all(
            isinstance(i, int) and not isinstance(i, bool) for i in value
        )
        v.require(
            "tuples",
            is_shape,
            keys["type"],
            key=key,
            expected=expected,
            got=describe(value) if not isinstance(value, tuple) else str(value),
            type=describe(value),
        )
        v.require(
            "values",
            tuple(value) == want,
            keys["value"],
            key=key,
            expected=expected,
            got=shape_str(value),
            likely=likely(key, tuple(value)),
        )


def shapes_of(names: Sequence[str], tensors: Sequence) -> dict[str, tuple]:
    """{name: shape} of tensors measured in order: the answer key of judge_named_shapes."""
    return {k: tuple(t.shape) for k, t in zip(names, tensors, strict=False)}


def probe_named_shapes(ctx: Any, name: str, sizes: Sequence[tuple]) -> dict:
    """In a probe: the learner's `name` called on each size's numbers, the lab's first (the
    primary call): {"calls": [...]}, for judge_named_shapes_at."""
    fn = ctx.get(name)
    return {"calls": [ctx.call(fn, *size, primary=i == 0) for i, size in enumerate(sizes)]}


def judge_named_shapes_at(
    v: Verdict,
    outputs: Mapping[str, Any],
    *,
    fn: str,
    sizes: Sequence[tuple],
    names: Sequence[str],
    truth: Callable[..., Mapping[str, tuple]],
    likely: Callable[[str, tuple, tuple], dict],
    keys: Mapping[str, str] | None = None,
) -> None:
    """probe_named_shapes' calls: each ran and gave truth(*size) (judge_named_shapes, likely(name,
    got, size) the mistake behind a wrong entry), the lab's size first, then the others as one
    check (judge_sized_cases, labelled by names)."""

    def judge_case(sub: Verdict, call: dict, _case: Any, size: tuple) -> None:
        require_ran(sub, call, fn)
        said = lambda key, got: likely(key, got, size)  # noqa: E731
        judge_named_shapes(sub, call["value"], truth(*size), likely=said, keys=keys)

    calls = outputs["calls"]
    judge_case(v, calls[0], None, sizes[0])
    judge_sized_cases(v, calls, [None] * len(calls), sizes, names, judge_case)
