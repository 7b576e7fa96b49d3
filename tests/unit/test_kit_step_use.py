"""The kit's declared step property (tutor.kit.step_use.StepUse): a module's step method that
carries a state, made at every size of a grid, called at a few past lengths, then with large
weights and a large token, and judged against the full pass. The module here keeps a running
history of projected tokens and outputs their sum: the property knows nothing of attention."""

from __future__ import annotations

import types

import torch
from torch import nn
from verdict_kit import failed

from tutor.kit import ModuleRecipe, StepAt, StepUse, Verdict, msg, step_return_likely
from tutor.kit.judge_tools import Stop
from tutor.kit.probe_tools import ProbeContext
from tutor.kit.spec import JudgeContext

SIZES = [(3, 2, 2, 5), (4, 6, 1, 7), (2, 3, 3, 4)]  # (d_in, d_out, B, T)


class Running(nn.Module):
    """A right step: the projected tokens so far, along dim 1, and their sum."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.proj = nn.Linear(d_in, d_out, bias=False)

    def step(self, x, state=None):
        h = self.proj(x)
        if state is not None:
            h = torch.cat([state[0], h], dim=1)
        return h.sum(1, keepdim=True), (h,)


class NoGrowth(Running):
    """The state does not grow: only the new token is kept."""

    def step(self, x, state=None):
        out, _ = super().step(x, state)
        return out, (self.proj(x),)


class RaisesPastFirst(Running):
    """Right at the lab's size, raises at the sizes after it."""

    def step(self, x, state=None):
        if x.shape[-1] != SIZES[0][0]:
            raise RuntimeError("sizes do not fit")
        return super().step(x, state)


class SmallTokensOnly(Running):
    """Right but for a token a thousand times larger: it gives zeros."""

    def step(self, x, state=None):
        out, s = super().step(x, state)
        return (out * 0 if x.abs().max() > 100 else out), s


class Clamped(Running):
    """Right but where the weights are large: its outputs stop at 1e4."""

    def step(self, x, state=None):
        out, s = super().step(x, state)
        return out.clamp(-1e4, 1e4), s


def full(x, w, size):
    return (x @ w["W"].T).cumsum(1)


def reference_step(x_t, past, w, size):
    h = x_t @ w["W"].T
    h = h if past is None else torch.cat([past[0], h], dim=1)
    return h.sum(1, keepdim=True), (h,)


def likely(at: StepAt) -> dict:
    return {
        "raised": lambda e: msg("likely.raised", t=at.t),
        "returns": msg("likely.returns"),
        "state_pair": msg("likely.pair"),
        "out_shape": lambda out: msg("likely.out_shape"),
        "state_shape": lambda: msg("likely.state_shape"),
        "out_values": lambda out: msg("likely.out_values"),
        "state_values": msg("likely.state_values"),
    }


USE = StepUse(
    ModuleRecipe("Running", ("d_in", "d_out"), {"proj.weight": "W"}, "step"),
    SIZES,
    ("d_in", "d_out", "B", "T"),
    full=full,
    step=reference_step,
    names=("h",),
    args=("x", "state"),
    likely=likely,
    large_scores_key="check.large_scores",
    scores_weights=(),
    state_axis=1,
)


def inputs() -> dict:
    g = torch.Generator().manual_seed(0)
    cases = []
    for d_in, d_out, B, T in SIZES:
        x, w = torch.randn(B, T, d_in, generator=g), {"W": torch.randn(d_out, d_in, generator=g)}
        cases.append({"x": x, "w": w, "h": x @ w["W"].T})
    w = {"W": cases[0]["w"]["W"] * 1e5}
    return {"cases": cases, "large": {**cases[0], "w": w, "h": cases[0]["x"] @ w["W"].T}}


def run(cls: type, use: StepUse = USE) -> Verdict:
    """The declared step's probe on cls (named as the recipe's class), then its judge."""
    learner = types.ModuleType("learner")
    learner.Running = cls  # type: ignore[attr-defined]
    ctx, made = ProbeContext(learner, "learner.py", "", None), inputs()
    outputs = use.probe(ctx, made)
    v = Verdict("")
    try:
        use.judge(v, outputs, made, JudgeContext("", [], views=False))
    except Stop:
        pass
    return v


def test_a_right_step_passes_every_size_and_the_large_cases():
    v = run(Running)
    assert v.passed()
    ids = {c.id for c in v.checks}
    assert {"returns", "shape", "matches-pytorch", "values", "other-sizes"} <= ids
    assert {"large-scores", "large-inputs", "own-formula"} <= ids


def test_a_state_that_does_not_grow_fails_with_its_fault():
    v = run(NoGrowth)
    assert failed(v) == ("shape", "check.step_call_state_shape")
    likely = v.failed_message()["params"]["likely"]
    assert likely == msg("likely.state_not_appended", axis=1, first="h", final="h", state="h")


def test_a_step_that_raises_past_the_lab_size_fails_other_sizes():
    v = run(RaisesPastFirst)
    assert failed(v)[0] == "other-sizes"
    assert "d_in=4" in str(v.failed_message())


def test_a_step_wrong_on_a_large_token_fails_large_inputs_only():
    v = run(SmallTokensOnly)
    assert [c.id for c in v.checks if c.status != "pass"] == ["large-inputs"]


def test_a_step_wrong_with_large_weights_fails_large_scores_only():
    v = run(Clamped)
    assert [c.id for c in v.checks if c.status != "pass"] == ["large-scores"]
    assert v.failed_message()["params"]["reason"]["key"] == "check.step_call_values"


def test_the_pasts_are_none_the_longest_and_at_the_lab_size_the_middle():
    assert USE.pasts(SIZES[0]) == [0, 2, 4]
    assert USE.pasts(SIZES[1]) == [0, 6]


def test_the_spec_names_the_class_and_the_step():
    spec = USE.spec()
    assert spec.functions == ("Running",)
    assert spec.own_formula == "step"
    assert USE.spec(probe=len).probe is len


def test_a_call_s_diagnoses_see_the_token_and_the_state_one_token_longer():
    case = inputs()["cases"][0]
    at = USE.at(case, SIZES[0], 2, "src")
    assert torch.equal(at.x_t, case["x"][:, 2:3])
    assert torch.equal(at.state[0], case["h"][:, :3])
    assert (at.t, at.size, at.source) == (2, SIZES[0], "src")


class OutputOnly(Running):
    """Returns the output alone, not the state."""

    def step(self, x, state=None):
        return super().step(x, state)[0]


class StateBare(Running):
    """Returns the state's one tensor bare, not in a tuple."""

    def step(self, x, state=None):
        out, (h,) = super().step(x, state)
        return out, h


def test_without_the_lesson_s_words_a_missing_state_is_said_by_the_engine():
    import dataclasses

    def few(at: StepAt) -> dict:
        return {k: v for k, v in likely(at).items() if k not in ("returns", "state_pair")}

    bare = dataclasses.replace(USE, likely=few)
    for cls, key in (
        (OutputOnly, "likely.step_output_only"),
        (StateBare, "likely.step_state_tuple"),
    ):
        v = run(cls, bare)
        assert failed(v) == ("returns", "check.step_call_returns")
        assert v.failed_message()["params"]["likely"] == msg(key, tuple="(h,)")
    assert step_return_likely(("k", "v"))["returns"] == msg(
        "likely.step_output_only", tuple="(k, v)"
    )


class Detached(Running):
    """Right values, but the output leaves the graph: no gradient reaches the weights."""

    def step(self, x, state=None):
        out, s = super().step(x, state)
        return out.detach(), s


def trained(cls: type) -> Verdict:
    """probe_trained on cls at the lab's size, then judge_trained."""
    learner = types.ModuleType("learner")
    ctx, case = ProbeContext(learner, "learner.py", "", None), inputs()["cases"][0]
    g = torch.linspace(-1, 1, SIZES[0][2] * SIZES[0][1]).reshape(SIZES[0][2], 1, SIZES[0][1])
    train = USE.probe_trained(ctx, cls, case, g)
    v = Verdict("")
    try:
        USE.judge_trained(v, train, case, g)
    except Stop:
        pass
    return v


def test_the_step_trains_as_the_reference_step_does():
    v = trained(Running)
    assert v.passed() and "trainable" in {c.id for c in v.checks}
    assert failed(trained(Detached))[0] == "trainable"
