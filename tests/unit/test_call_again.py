"""The kit's call-again property: a function right once must be right when called again at the
lab's size on new values (a cache keyed on the shape fails), and what its first call returned
must not change (one buffer handed out twice and refilled fails)."""

from __future__ import annotations

import contextlib
import types

import torch

from tutor.kit import (
    Stop,
    Verdict,
    call_kept,
    judge_called_again,
    judge_sizes_and_again,
    msg,
    probe_calls_again,
    probe_named_calls_again,
    require_close,
    same_value,
    snapshot,
    trimmed,
)
from tutor.kit.probe_tools import ProbeContext

SOURCE = """
import torch

_memo = {}


def doubled(x):
    return x * 2


def memo_doubled(x):
    if x.shape not in _memo:
        _memo[x.shape] = x * 2
    return _memo[x.shape]


_out = torch.zeros(2, 3)


def buffered_doubled(x):
    return torch.mul(x, 2, out=_out)
"""


def context() -> ProbeContext:
    module = types.ModuleType("learner")
    exec(compile(SOURCE, "learner.py", "exec"), module.__dict__)
    return ProbeContext(module, "learner.py", SOURCE, None)


def judge_doubled(v: Verdict, call: dict, x: torch.Tensor) -> None:
    require_close(v, "values", "doubled(x)", call["value"], x * 2)


G = torch.Generator().manual_seed(5)
SIZES = [torch.randn(2, 3, generator=G), torch.randn(4, 3, generator=G)]
AGAIN = torch.randn(2, 3, generator=G)


def run(name: str, sizes: list = SIZES) -> Verdict:
    ctx = context()
    out = probe_calls_again(ctx, ctx.get(name), [(x,) for x in sizes], (AGAIN,))
    v = Verdict(SOURCE)
    first = out["calls"][0].get("value")
    with contextlib.suppress(Stop):
        judge_called_again(v, name, out["again"], first, judge_doubled, AGAIN, defs=(name,))
    return v


def only(v: Verdict):
    (check,) = [c for c in v.checks if c.id == "call-again"]
    return check


def test_a_function_of_its_inputs_alone_passes():
    assert only(run("doubled")).status == "pass"


def test_a_cache_keyed_on_the_shape_fails_with_the_line_that_keeps_it():
    check = only(run("memo_doubled"))
    assert check.status == "fail" and check.message.key == "check.called_again"
    likely = check.message.params["likely"] or check.message.params["reason"]["params"]["likely"]
    assert likely["key"] == "likely.kept_state_at"


def test_a_buffer_refilled_by_the_next_call_fails_as_its_first_result_changed():
    check = only(run("buffered_doubled", SIZES[:1]))
    assert check.status == "fail" and check.message.key == "check.first_result_changed"


def test_a_lessons_own_key_and_likely_for_a_refilled_result():
    ctx = context()
    out = probe_calls_again(ctx, ctx.get("buffered_doubled"), [(SIZES[0],)], (AGAIN,))
    v = Verdict("")  # no source to read: the lesson's likely
    own = msg("likely.mine")
    first = out["calls"][0]["value"]
    with contextlib.suppress(Stop):
        judge_called_again(
            v,
            "f",
            out["again"],
            first,
            judge_doubled,
            AGAIN,
            reused_key="check.mine",
            reused_likely=own,
        )
    check = only(v)
    assert check.message.key == "check.mine" and check.message.params["likely"] == own


def test_without_the_first_result_only_the_second_call_is_judged():
    ctx = context()
    v = Verdict(SOURCE)
    judge_called_again(
        v, "doubled", {"call": ctx.call(ctx.get("doubled"), AGAIN)}, None, judge_doubled, AGAIN
    )
    assert only(v).status == "pass"


def test_blame_comes_before_the_kept_state():
    ctx = context()
    out = probe_calls_again(ctx, ctx.get("memo_doubled"), [(SIZES[0],)], (AGAIN,))
    v = Verdict(SOURCE)
    blamed = msg("likely.helper_first_fix", fn="helper")
    first = out["calls"][0]["value"]
    with contextlib.suppress(Stop):
        judge_called_again(v, "f", out["again"], first, judge_doubled, AGAIN, blame=lambda: blamed)
    params = only(v).message.params
    assert blamed in (params["likely"], params["reason"]["params"].get("likely"))


def test_call_kept_snapshots_the_value_and_keeps_the_object():
    ctx = context()
    call, returned = call_kept(ctx, ctx.get("buffered_doubled"), SIZES[0], primary=True)
    assert "args" in call and "softmax" not in call
    assert call["value"] is not returned and torch.equal(call["value"], returned)


def test_snapshot_same_value_and_trimmed():
    a = torch.ones(2)
    pair = snapshot((a, a))
    a.add_(1)
    assert not same_value(pair, (a, a)) and same_value(pair, snapshot(pair))
    assert not same_value(torch.ones(2), torch.ones(2, dtype=torch.float64))
    assert same_value(None, torch.ones(2))  # nothing a later call could refill
    assert trimmed({"value": 1, "args": (), "softmax": None}) == {"value": 1}
    assert trimmed({"value": 1, "args": (), "softmax": None}, args=True) == {"value": 1, "args": ()}


def test_a_source_of_its_own_for_the_case_judge_and_no_defs_say_kept_state():
    ctx = context()
    out = probe_calls_again(ctx, ctx.get("memo_doubled"), [(SIZES[0],)], (AGAIN,))
    v = Verdict(SOURCE)
    with contextlib.suppress(Stop):
        judge_called_again(
            v, "f", {"call": out["again"]["call"]}, None, judge_doubled, AGAIN, source=""
        )
    params = only(v).message.params
    assert msg("likely.kept_state") in (params["likely"], params["reason"]["params"].get("likely"))


def named_run(name: str) -> tuple[dict, Verdict]:
    ctx = context()
    named = [{"plain": (x,), "halved": (x / 2,)} for x in SIZES]
    out = probe_named_calls_again(
        ctx, ctx.get(name), named, {"plain": (AGAIN,), "halved": (AGAIN,)}
    )
    v = Verdict(SOURCE)

    def judge_both(sub: Verdict, calls: dict, x: torch.Tensor) -> None:
        judge_doubled(sub, calls["plain"], x)

    first = out["calls"][0]["plain"].get("value")
    with contextlib.suppress(Stop):
        judge_called_again(v, name, out["again"], first, judge_both, AGAIN, defs=(name,))
    return out, v


def test_named_calls_keep_each_call_and_the_first_names_first_result():
    out, v = named_run("doubled")
    assert [sorted(c) for c in out["calls"]] == [["halved", "plain"]] * 2
    assert torch.equal(out["calls"][1]["halved"]["value"], SIZES[1])
    assert only(v).status == "pass"
    _, v = named_run("buffered_doubled")
    assert only(v).status == "fail" and only(v).message.key == "check.first_result_changed"


def sizes_and_again(name: str, then=None) -> dict[str, str]:
    ctx = context()
    out = probe_calls_again(ctx, ctx.get(name), [(x,) for x in SIZES], (AGAIN,))
    v = Verdict(SOURCE)
    with contextlib.suppress(Stop):
        judge_sizes_and_again(v, name, out, SIZES, ["a", "b"], judge_doubled, AGAIN, then=then)
    return {c.id: c.status for c in v.checks}


def test_sizes_and_again_judges_the_lab_case_the_sizes_then_and_again():
    order = []
    assert sizes_and_again("doubled", then=lambda: order.append("then")) == {
        "values": "pass",
        "other-sizes": "pass",
        "call-again": "pass",
    }
    assert order == ["then"]
    assert sizes_and_again("memo_doubled")["call-again"] == "fail"
