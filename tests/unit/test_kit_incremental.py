"""The kit's incremental-decoding property (tutor.kit.incremental): a step function run token
by token against the full pass, sequences interleaved on one object, a state handed out and
changed by a later call, branches from one state. The step here is a running sum, whose full
pass is cumsum: the property knows nothing of attention."""

from __future__ import annotations

import contextlib
import math
import types

import pytest
import torch

from tutor.kit import (
    Stop,
    Verdict,
    branches,
    changed_argument,
    changed_later,
    decoding_fault,
    growth_fault,
    judge_steps,
    msg,
    pair_state,
    recompute_each,
    record_decoding,
    require_arguments_kept,
    require_states_kept,
    run_steps,
    same_tensors,
    state_lengths,
    state_snapshot,
    step_through,
    stepped_weights_view,
    weights_map,
)
from tutor.kit.probe_tools import ProbeContext

X = torch.arange(1.0, 13.0).reshape(2, 6, 1)
Y = -torch.arange(1.0, 13.0).reshape(2, 6, 1)


def context() -> ProbeContext:
    return ProbeContext(types.ModuleType("learner"), "learner.py", "", None)


def right(x_t, state=None):
    total = x_t if state is None else state[0] + x_t
    return total, (total,)


class Kept:
    """Keeps its own total and ignores the state it is given: right for one sequence alone."""

    def __init__(self):
        self.total = None

    def __call__(self, x_t, state=None):
        self.total = x_t if self.total is None or state is None else self.total + x_t
        return self.total.clone(), (self.total.clone(),)


class Buffer:
    """Right at every call, but the state it hands back is a buffer of its own, which the next
    call writes into: what a caller kept from an earlier call changes under it."""

    def __init__(self):
        self.buf = None

    def __call__(self, x_t, state=None):
        if self.buf is None:
            self.buf = torch.zeros_like(x_t)
        self.buf.copy_(x_t if state is None else state[0] + x_t)
        return self.buf.clone(), (self.buf,)


def judged(calls, refs, **how) -> Verdict:
    v = Verdict()
    try:
        judge_steps(v, calls, refs, "call-again", "check.interleaved", lambda c: None, **how)
    except Stop:
        pass
    return v


def test_a_right_step_passes_interleaved_with_another_sequence():
    calls = run_steps(context(), right, [X, Y])
    assert [(c["seq"], c["t"]) for c in calls[:3]] == [(0, 0), (1, 0), (0, 1)]
    assert len(calls) == 12
    assert judged(calls, [X.cumsum(1), Y.cumsum(1)]).passed()


def test_a_step_that_keeps_its_own_state_fails_on_the_second_sequence():
    calls = run_steps(context(), Kept(), [X, Y])
    v = judged(calls, [X.cumsum(1), Y.cumsum(1)])
    assert not v.passed()
    message = v.checks[0].message
    assert message.key == "check.interleaved"
    assert message.params["t"] == 1 and message.params["n"] == 1  # it added Y's first token
    assert math.isfinite(message.params["err"])


def test_one_sequence_alone_does_not_show_it_and_unnumbered_leaves_n_out():
    assert judged(run_steps(context(), Kept(), [X]), [X.cumsum(1)]).passed()
    calls = run_steps(context(), lambda x_t, state=None: (x_t, (x_t,)), [X], dropout=False)
    v = judged(calls, [X.cumsum(1)], numbered=False)
    assert v.checks[0].message.params["t"] == 1 and "n" not in v.checks[0].message.params


def test_a_step_that_returns_no_pair_stops_the_run_with_nan():
    calls = run_steps(context(), lambda x_t, state=None: None, [X, Y])
    assert len(calls) == 1 and calls[0]["value"] is None
    v = judged(calls, [X.cumsum(1), Y.cumsum(1)])
    assert not v.passed() and math.isnan(v.checks[0].message.params["err"])


def test_a_step_that_raises_is_kept_as_its_error():
    def broken(x_t, state=None):
        raise ValueError("no")

    calls = run_steps(context(), broken, [X])
    assert "error" in calls[0] and not judged(calls, [X.cumsum(1)]).passed()


def test_step_through_hands_each_call_the_state_before_and_keeps_the_originals():
    calls, held = step_through(context(), right, X)
    assert len(calls) == len(held) == 6
    assert torch.equal(calls[-1]["value"][0], X.cumsum(1)[:, -1:])
    assert torch.equal(calls[1]["args"][1][0], X[:, :1])  # the state it was given
    now = [state_snapshot(h)[1] for h in held]
    assert changed_later(now, [c["value"][1] for c in calls]) is None


def test_a_state_changed_in_place_by_a_later_call_is_found():
    calls, held = step_through(context(), Buffer(), X)
    now = [state_snapshot(h)[1] for h in held]
    assert changed_later(now, [c["value"][1] for c in calls]) == (0, 0)


def test_branches_from_one_state_and_a_branch_that_writes_into_it():
    tokens = [X[:, :1], Y[:, :1]]
    start = (X[:, :1].clone(),)
    calls, kept = branches(context(), right, start, tokens)
    assert [
        torch.equal(c["value"][0], start[0] + t) for c, t in zip(calls, tokens, strict=True)
    ] == [True] * 2
    assert (
        changed_later([state_snapshot(k)[1] for k in kept], [c["value"][1] for c in calls]) is None
    )
    calls, kept = branches(context(), Buffer(), (X[:, :1].clone(),), tokens)
    states = [pair_state(c["value"]) for c in calls]
    assert changed_later([state_snapshot(k)[1] for k in kept], states) == (0, 0)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ((torch.ones(2),), (torch.ones(2),), True),
        ((torch.ones(2),), (torch.zeros(2),), False),
        ((torch.ones(2),), (torch.ones(3),), False),
        ((torch.ones(2),), (torch.ones(2), torch.ones(2)), False),
        (None, (torch.ones(2),), False),
    ],
)
def test_same_tensors(a, b, same):
    assert same_tensors(a, b) is same


def test_state_snapshot_is_a_copy_taken_at_once():
    t = torch.ones(2)
    copy = state_snapshot((t, [t]))
    t.add_(1)
    assert isinstance(copy[1], tuple) and torch.equal(copy[1][0], torch.ones(2))
    assert pair_state((1, 2)) == 2 and pair_state((1, 2, 3)) is None


class Summer:
    """A layer whose step is the running sum, and whose full pass is cumsum."""

    def step(self, x_t, state=None):
        return right(x_t, state)

    def forward(self, x):
        return x.cumsum(1)


def loop(layer, x):
    state, outs = None, []
    for t in range(x.shape[1]):
        out, state = layer.step(x[:, t : t + 1], state)
        outs.append(out)
    return torch.cat(outs, 1)


def fault_of(generate, x=X) -> tuple | None:
    layer = Summer()
    rec = record_decoding(layer, x, step="step")
    generate(layer, x)
    return decoding_fault(rec.log(), x.shape[1], step="step")


def no_state_back(layer, x):
    for t in range(x.shape[1]):
        layer.step(x[:, t : t + 1], None if t == 0 else (x[:, :1].clone(),))


def recomputed(layer, x):
    return torch.cat([layer.forward(x[:, : t + 1])[:, -1:] for t in range(x.shape[1])], 1)


def through_the_class(layer, x):
    state = None
    for t in range(x.shape[1]):
        _, state = type(layer).step(layer, x[:, t : t + 1], state=state)


@pytest.mark.parametrize(
    ("generate", "fault"),
    [
        (loop, None),
        (through_the_class, None),
        (
            lambda layer, x: [layer.step(x[:, t : t + 1]) for t in range(6)],
            ("state_not_passed", {}),
        ),
        (no_state_back, ("state_not_passed_back", {})),
        (recomputed, ("recompute_full", {})),
        (lambda layer, x: loop(layer, x[:, :4]), ("call_count", {"n": 4, "T": 6})),
        (lambda layer, x: loop(layer, x.flip(1)), ("token_order", {})),
        (lambda layer, x: layer.step(x), ("recompute", {})),
    ],
)
def test_decoding_fault_names_what_the_loop_did(generate, fault):
    assert fault_of(generate) == fault


def test_changed_argument_finds_a_state_written_in_place():
    def writes_state(x_t, state=None):
        if state is not None:
            state[0].zero_()  # the caller's cache, gone
        return right(x_t, None if state is None else (torch.zeros_like(x_t),))

    def writes_token(x_t, state=None):
        x_t.mul_(2)
        return right(x_t / 2, state)

    assert changed_argument(step_through(context(), right, X)[0], X) is None
    t, i, after, passed = changed_argument(step_through(context(), writes_state, X)[0], X)
    assert (t, i) == (1, 1) and torch.equal(after, torch.zeros_like(passed))
    assert changed_argument(step_through(context(), writes_token, X)[0], X)[:2] == (1, 0)


def test_step_through_stops_at_a_step_that_returns_no_pair():
    calls, held = step_through(context(), lambda x_t, state=None: x_t, X)
    assert len(calls) == len(held) == 1


def attend(x_t, state=None):
    """One query over the keys so far, equal scores: weights 1/(t+1) each."""
    keys = x_t if state is None else torch.cat([state[0], x_t], 1)
    w = torch.softmax(torch.zeros(x_t.shape[0], 1, keys.shape[1]), dim=-1)
    return w @ keys, (keys,)


def test_weights_map_assembles_the_rows_of_a_run():
    calls, _ = step_through(context(), attend, X, softmax=True)
    rows = [c["softmax"] for c in calls]
    assert [tuple(r.shape) for r in rows[:2]] == [(2, 1, 1), (2, 1, 2)]
    full = weights_map(rows, (2,))
    want = torch.tril(torch.ones(6, 6)) / torch.arange(1.0, 7.0).unsqueeze(1)
    assert torch.allclose(full, want.expand(2, 6, 6))
    assert weights_map(rows[:2] + rows[3:], (2,)) is None  # a row missing
    assert weights_map([None, *rows[1:]], (2,)) is None


def test_recompute_each_keeps_the_last_output_of_every_prefix():
    calls = []

    def full(x):
        calls.append(x.shape[1])
        return x.cumsum(1)

    assert torch.equal(recompute_each(full, X), X.cumsum(1)) and calls == [1, 2, 3, 4, 5, 6]
    assert not torch.equal(recompute_each(lambda x: x.flip(1), X), X.flip(1))


def test_state_lengths():
    k, v = torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 5, 4)
    assert state_lengths((None, (k, v)), axis=2, rank=4) == [3, 5]
    assert state_lengths((None, (k, "v")), axis=2, rank=4) == [3, -1]
    assert state_lengths((None, (k[0], v)), axis=2, rank=4) == [-1, 5]
    assert state_lengths((None, [k, v]), axis=2, rank=4) is None
    assert state_lengths(k, axis=2, rank=4) is None


@pytest.mark.parametrize(
    ("lengths", "fault"),
    [
        ([1, 2, 3], None),
        ([1, 1, 1], "not_appended"),
        ([1, 3, 5], "twice"),
        ([0, 1, 2], "given_back"),
        ([1, 2, 4], "other"),
    ],
)
def test_growth_fault(lengths, fault):
    assert growth_fault(lengths) == fault


def test_stepped_weights_view_shows_the_rows_beside_the_full_pass():
    T = 3
    full = torch.softmax(
        torch.randn(2, T, T).masked_fill(torch.ones(T, T).triu(1).bool(), -1e9), -1
    )
    rows = [full[None, :, t : t + 1, : t + 1] for t in range(T)]  # (1, H, 1, t + 1) each

    def label(h):
        return f"head {h}"

    maps, shown = stepped_weights_view(rows, full, label)
    assert [m["label"] for m in maps] == ["head 0", "head 1"]
    assert all(m["learner"] is not None for m in maps)
    assert [i["kind"] for i in shown] == ["row", "note"]
    assert shown[1]["text"]["key"] == "visual.stepped_same"
    # A row off by 0.5: said with its error.
    wrong = [*rows[:2], rows[2] + torch.tensor([0.0, 0.0, 0.5])]
    maps, shown = stepped_weights_view(wrong, full, label)
    said = shown[1]["text"]
    assert said["key"] == "visual.stepped_differ" and said["params"]["err"] == pytest.approx(0.5)
    # A row missing (or of the wrong shape): the references alone, nothing to show.
    maps, shown = stepped_weights_view(rows[:2], full, label)
    assert shown == [] and all(m["learner"] is None for m in maps)
    assert maps[0]["reference"] == [[round(x, 4) for x in r] for r in full[0].tolist()]


def said(judge) -> list:
    """The checks a judge recorded, as (id, status, key, params), stopped or not."""
    v = Verdict()
    with contextlib.suppress(Stop):
        judge(v)
    return [
        (c.id, c.status, c.message and c.message.key, c.message and c.message.params)
        for c in v.checks
    ]


def test_require_arguments_kept_says_which_argument_changed_and_how():
    def writes_state(x_t, state=None):
        if state is not None:
            state[0].zero_()
        return right(x_t, None if state is None else (torch.zeros_like(x_t),))

    def grows_state(x_t, state=None):
        if state is not None:
            state[0].resize_(1)
        return right(x_t, state)

    def judge(step):
        calls = step_through(context(), step, X)[0]
        likely = lambda i: msg(f"likely.{i}")  # noqa: E731
        return said(
            lambda v: require_arguments_kept(
                v, calls, X, key="check.kept", names=("x", "s"), likely=likely
            )
        )

    assert judge(right) == []  # a pass records nothing
    [(check, status, key, params)] = judge(writes_state)
    assert (check, status, key) == ("inputs-unchanged", "fail", "check.kept")
    assert params["name"] == "s" and params["t"] == 1 and params["likely"] == msg("likely.1")
    assert params["err"]["key"] == "value.changed_by" and params["err"]["params"]["err"] > 0
    [(*_, params)] = judge(grows_state)
    assert params["err"] == msg("value.resized", shape="(1,)")


def test_require_states_kept_names_the_state_a_later_call_changed():
    calls, held = step_through(context(), Buffer(), X)
    now = [state_snapshot(h)[1] for h in held]
    then = [c["value"][1] for c in calls]

    def judge(v, now=now):
        require_states_kept(
            v, now, then, key="check.reused", params=lambda t, i: {"t": t, "i": i}, likely=msg("x")
        )

    [(check, status, key, params)] = said(judge)
    assert (check, status, key, params) == (
        "inputs-unchanged",
        "fail",
        "check.reused",
        {"t": 0, "i": 0, "likely": msg("x")},
    )
    assert said(lambda v: judge(v, now=then)) == []
