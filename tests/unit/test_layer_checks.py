"""The kit's layer properties (tutor.kit.layer_checks), on a small causal attention layer of the
test's own: each fails on a layer that breaks it and passes on one that keeps it, and says it
with the lesson's key for the role."""

from __future__ import annotations

import pytest
import torch

from tutor.kit import (
    Stop,
    Verdict,
    constructor_facts,
    diagnose_dropout,
    judge_dropout_modes,
    judge_gradients,
    judge_layer_constructor,
    judge_layer_state,
    judge_layout,
    judge_seeded_layer,
    likely_for_backward,
    linear_layout,
    module_state,
    msg,
    probe_dropout_modes,
    probe_layer_story,
    probe_seeded_layer,
    reference_grads,
    require_again_ran,
    require_again_right,
    require_backward_ran,
    state_dict_copy,
    weights_from_state,
)

KEYS = {
    role: f"lesson.{role}"
    for role in (
        "constructor_signature",
        "constructor_attr",
        "mask_buffer",
        "dropout_raised",
        "dropout_train",
        "dropout_eval",
        "dropout_in_eval",
        "dropout_unknown",
        "dropout_missing",
        "dropout_p",
        "dropout_twice",
        "dropout_place",
        "backward_raised",
        "inplace_backward",
        "grad_blocked",
        "not_trainable",
        "no_grad",
        "grad_values",
        "grad_wrong",
        "no_input_grad",
        "input_grad_blocked",
    )
}
NAMES = {"W_q.weight": "W_q", "W_k.weight": "W_k", "W_v.weight": "W_v"}


class Layer(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout=0.0, *, wide=False):
        super().__init__()
        self.d_out = d_out
        self.W_q = torch.nn.Linear(d_in, d_out + wide, bias=False)
        self.W_k = torch.nn.Linear(d_in, d_out, bias=False)
        self.W_v = torch.nn.Linear(d_in, d_out, bias=False)
        self.dropout = torch.nn.Dropout(dropout)
        mask = torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()
        self.register_buffer("mask", mask)

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        s = (q @ k.transpose(1, 2) / k.shape[-1] ** 0.5).masked_fill(self.mask[:T, :T], -torch.inf)
        return self.dropout(torch.softmax(s, -1)) @ v


def reference(x, w):
    q, k, v = (x @ w[n].T for n in ("W_q", "W_k", "W_v"))
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    s = (q @ k.transpose(1, 2) / k.shape[-1] ** 0.5).masked_fill(future, -torch.inf)
    return torch.softmax(s, -1) @ v


class Ctx:
    """A probe context's call, without a child."""

    def call(self, fn, *args, **_how):
        try:
            return {"value": fn(*args)}
        except Exception as e:  # noqa: BLE001 - as the child reports it
            return {"error": {"kind": type(e).__name__, "detail": str(e), "frames": []}}


def run(judge, *args, **how) -> Verdict:
    v = Verdict()
    try:
        judge(v, *args, **how)
    except Stop:
        pass
    return v


def failed(v: Verdict) -> str | None:
    bad = v.failed_message()
    return bad and bad["key"]


def test_layout_fails_on_a_projection_of_the_wrong_width():
    expected = {"W_q": (4, 3), "W_k": (4, 3)}
    good = linear_layout(Layer(3, 4, 8), expected)
    bad = linear_layout(Layer(3, 4, 8, wide=True), expected)
    assert good["ok"] and not bad["ok"] and bad["W_q"] == (5, 3)
    assert run(judge_layout, good, expected, key="lesson.layout").passed()
    v = run(judge_layout, bad, expected, key="lesson.layout", args="3, 4")
    assert v.failed_message() == {
        "key": "lesson.layout",
        "params": {"args": "3, 4", "attr": "W_q", "expected": "(4, 3)", "got": "(5, 3)"},
    }


def test_constructor_fails_on_a_float_mask_and_passes_on_the_labs():
    how = dict(
        signature=[
            ["d_in", None],
            ["d_out", None],
            ["context_length", None],
            ["dropout", 0.0],
            ["wide", False],
        ],
        attrs={"d_out": 4},
        dropout=0.0,
        buffer=torch.triu(torch.ones(8, 8), diagonal=1).bool(),
        keys=KEYS,
    )
    layer = Layer(3, 4, 8)
    facts = constructor_facts(Layer, layer, ("d_out",), "mask")
    assert facts["signature"][-2:] == [["dropout", 0.0], ["wide", False]]
    assert run(judge_layer_constructor, facts, **how).passed()
    layer.mask = layer.mask.float()
    v = run(judge_layer_constructor, constructor_facts(Layer, layer, ("d_out",), "mask"), **how)
    assert failed(v) == "lesson.mask_buffer"
    facts["attrs"]["d_out"] = 4.0
    assert failed(run(judge_layer_constructor, facts, **how)) == "lesson.constructor_attr"


def test_state_fails_on_a_weight_forward_changed():
    layer = Layer(3, 4, 8)
    expected = {n: t.clone() for n, t in state_dict_copy(layer).items()}
    before = module_state(layer)
    layer(torch.randn(2, 5, 3))
    how = dict(key="lesson.state", likely=lambda name: msg("likely.x", name=name))
    v = run(
        judge_layer_state, state_dict_copy(layer), expected, [before, module_state(layer)], **how
    )
    assert v.passed()
    with torch.no_grad():
        layer.W_k.weight.mul_(2)
    v = run(judge_layer_state, state_dict_copy(layer), expected, None, **how)
    assert v.failed_message()["key"] == "lesson.state"
    assert v.failed_message()["params"]["name"] == "W_k.weight"


def test_call_again_says_a_raised_call_and_a_wrong_value():
    likely = msg("likely.again")
    v = run(
        require_again_ran,
        {"error": {"kind": "E", "detail": "d", "frames": []}},
        key="lesson.raised",
        likely=likely,
        t=3,
    )
    assert failed(v) == "lesson.raised" and v.failed_message()["params"]["t"] == 3
    assert run(require_again_right, torch.ones(2, 3), torch.ones(2, 3), "y", likely).passed()
    assert (
        failed(run(require_again_right, torch.ones(2, 3) * 2, torch.ones(2, 3), "y", likely))
        == "check.values"
    )


def test_dropout_modes_fail_on_dropout_in_eval_mode():
    w = {n: torch.randn(4, 3) for n in ("W_q", "W_k", "W_v")}
    x = torch.randn(2, 5, 3)

    def load(module):
        with torch.no_grad():
            for path, key in NAMES.items():
                getattr(module, path.split(".")[0]).weight.copy_(w[key])

    case = probe_dropout_modes(Ctx(), lambda: Layer(3, 4, 8, dropout=0.0), load, x, x[:, :2])
    assert set(case) == {"made", "short", "eval", "train"}
    how = dict(p=0.0, weights_numel=2 * 5 * 5, keys=KEYS)
    assert run(judge_dropout_modes, case, lambda p: reference(x, w), **how).passed()
    case["eval"] = {"value": case["eval"]["value"] * 2, "dropouts": [{"training": True}]}
    v = run(judge_dropout_modes, case, lambda p: reference(x, w), **how)
    assert failed(v) == "lesson.dropout_eval"
    assert v.failed_message()["params"]["likely"] == msg("lesson.dropout_in_eval")


def test_dropout_diagnosis_names_what_each_call_was_given():
    on_weights = {"p": 0.3, "training": True, "shape": [2, 5, 5], "weights": True}
    assert diagnose_dropout([], "train", 0.3, 50, KEYS) == msg("lesson.dropout_missing")
    assert diagnose_dropout([{**on_weights, "p": 0.1}], "train", 0.3, 50, KEYS) == msg(
        "lesson.dropout_p", got=0.1, p=0.3
    )
    assert diagnose_dropout([on_weights] * 2, "train", 0.3, 50, KEYS) == msg("lesson.dropout_twice")
    place = {**on_weights, "shape": [2, 5, 4], "weights": False}
    assert diagnose_dropout([place], "train", 0.3, 50, KEYS) == msg(
        "lesson.dropout_place", shape="(2, 5, 4)"
    )


def test_gradients_of_the_seeded_layer_match_the_reference_and_a_cut_graph_fails():
    x, g = torch.randn(2, 5, 3), torch.randn(2, 5, 4)
    nb = probe_seeded_layer(Ctx(), lambda: Layer(3, 4, 8), 1, g, x, x)
    w = weights_from_state(nb["state"], NAMES)
    assert w is not None and weights_from_state({"W_q.weight": w["W_q"]}, NAMES) is None
    want, want_x = reference_grads(reference, x, w, g, NAMES)
    assert run(require_backward_ran, nb["step"], keys=KEYS).passed()
    assert run(judge_gradients, nb["step"]["value"], want, want_x, keys=KEYS).passed()
    cut = {**nb["step"]["value"], "input_grad": None}
    assert failed(run(judge_gradients, cut, want, want_x, keys=KEYS)) == "lesson.no_input_grad"
    wrong = {
        **nb["step"]["value"],
        "grads": {n: t * 2 for n, t in nb["step"]["value"]["grads"].items()},
    }
    assert failed(run(judge_gradients, wrong, want, None, keys=KEYS)) == "lesson.grad_values"


@pytest.mark.parametrize(
    ("detail", "key"),
    [
        (
            "one of the variables needed for gradient computation has been modified by an inplace operation",
            "lesson.inplace_backward",
        ),
        ("element 0 of tensors does not require grad", "lesson.grad_blocked"),
        ("something else", "likely.unknown"),
    ],
)
def test_a_backward_that_raised_is_named(detail, key):
    assert likely_for_backward({"detail": detail}, KEYS) == msg(key)
    v = run(
        require_backward_ran,
        {"error": {"kind": "RuntimeError", "detail": detail, "frames": []}},
        keys=KEYS,
    )
    assert failed(v) == "lesson.backward_raised"


SEEDED_KEYS = {
    **KEYS,
    "state_keys": "lesson.state_keys",
    "notebook_values": "lesson.notebook_values",
    "notebook_mode": "lesson.notebook_mode",
    "leak": "lesson.leak",
    "leak_likely": "lesson.leak_likely",
}


def test_the_seeded_layer_is_judged_on_its_own_weights_and_a_wrong_output_fails():
    x, g = torch.randn(2, 5, 3), torch.randn(2, 5, 4)
    later = x.clone()
    later[:, -1] += 3
    nb = probe_seeded_layer(Ctx(), lambda: Layer(3, 4, 8), 1, g, x, later)

    def expected(w):
        return (reference(x, w), *reference_grads(reference, x, w, g, NAMES))

    how = dict(names=NAMES, built="Layer(…)", keys=SEEDED_KEYS)
    v = run(judge_seeded_layer, nb, expected, **how)
    assert v.passed() and {"notebook", "trainable"} <= {c.id for c in v.checks}
    nb["step"]["value"] = {**nb["step"]["value"], "y": nb["step"]["value"]["y"] + 1}
    assert failed(run(judge_seeded_layer, nb, expected, **how)) == "lesson.notebook_values"
    nb["state"] = {}
    assert failed(run(judge_seeded_layer, nb, expected, **how)) == "lesson.state_keys"


def test_no_story_once_a_kernel_was_seen():
    class Seen(Ctx):
        kernels = ["scaled_dot_product_attention"]

    assert probe_layer_story(Seen(), lambda: Layer(3, 4, 8), lambda m: None, None, None) is None


def test_without_keys_the_engine_words_each_role_and_a_lesson_overrides_one():
    from tutor.kit.layer_checks import LAYER_WORDS, layer_words
    from tutor.text.i18n import engine_catalog

    for lang in ("en", "zh"):
        assert set(LAYER_WORDS.values()) <= set(engine_catalog(lang))
    assert layer_words({"dropout_p": "lesson.p"}) == {**LAYER_WORDS, "dropout_p": "lesson.p"}
    place = {"p": 0.3, "training": True, "shape": [2, 5, 4], "weights": False}
    assert diagnose_dropout([place], "train", 0.3, 50) == msg(
        "likely.story_dropout_place", shape="(2, 5, 4)"
    )
    assert diagnose_dropout([], "train", 0.3, 50, {"dropout_missing": "lesson.m"}) == msg(
        "lesson.m"
    )
    layer = Layer(3, 4, 8)
    how = dict(
        signature=[["d_in", None], ["d_out", None], ["context_length", None], ["dropout", 0.0]],
        attrs={"d_out": 4},
        dropout=0.0,
        buffer=torch.triu(torch.ones(8, 8), diagonal=1).bool(),
    )
    how["signature"].append(["wide", False])
    facts = constructor_facts(Layer, layer, ("d_out",), "mask")
    assert run(judge_layer_constructor, facts, **how).passed()
    layer.mask = layer.mask.float()
    v = run(judge_layer_constructor, constructor_facts(Layer, layer, ("d_out",), "mask"), **how)
    assert failed(v) == "check.layer_buffer"
    params = v.failed_message()["params"]
    assert params["name"] == "mask"
    assert params["expected"] == msg("value.tensor", dtype="bool", shape="(8, 8)")
    facts["signature"] = [["d_in", None]]
    v = run(judge_layer_constructor, facts, **how)
    assert failed(v) == "check.layer_signature"
    assert v.failed_message()["params"]["expected"] == (
        "d_in, d_out, context_length, dropout=0.0, wide=False"
    )


def test_a_layer_used_again_fails_on_stale_weights_and_on_a_raise():
    from tutor.kit import judge_layer_again

    x = torch.randn(2, 5, 3)
    w, new_w = ({n: torch.randn(4, 3) for n in ("W_q", "W_k", "W_v")} for _ in range(2))
    short = x[:, :2]
    right = {
        "prefix": {"value": reference(short, w)},
        "new_weights": {"value": reference(x, new_w)},
        "dropout": {"short": {"value": reference(short, w)}, "eval": {"value": reference(x, w)}},
    }
    how = dict(x=x, x_prefix=short, w=w, new_w=new_w)
    assert run(judge_layer_again, right, reference, **how).passed()
    stale = {**right, "new_weights": {"value": reference(x, w)}}
    v = run(judge_layer_again, stale, reference, **how)
    assert v.failed_message()["params"]["likely"] == msg("likely.layer_cached_weights")
    longer = {**right, "dropout": {**right["dropout"], "eval": {"value": reference(x, w) * 2}}}
    assert failed(run(judge_layer_again, longer, reference, **how)) == "check.values"
    error = {"kind": "RuntimeError", "detail": "size", "frames": [{"line": 3}]}
    raised = {**right, "prefix": {"error": error}}
    v = run(judge_layer_again, raised, reference, **how, keys={"again_raised": "lesson.raised"})
    assert failed(v) == "lesson.raised" and v.failed_message()["params"]["t"] == 2


def test_state_without_words_says_a_slice_assigned_back_or_a_change_in_place():
    layer = Layer(3, 4, 8)
    expected = {n: t.clone() for n, t in state_dict_copy(layer).items()}
    with torch.no_grad():
        layer.W_k.weight.mul_(2)
    v = run(judge_layer_state, state_dict_copy(layer), expected, None)
    assert v.failed_message()["key"] == "check.layer_state_changed"
    assert v.failed_message()["params"]["likely"] == msg(
        "likely.layer_state_in_place", name="W_k.weight"
    )
    layer = Layer(3, 4, 8)
    layer.mask = layer.mask[:5, :5]
    v = run(judge_layer_state, state_dict_copy(layer), expected, None)
    assert v.failed_message()["params"]["likely"] == msg("likely.layer_state_sliced", name="mask")


def test_state_with_added_words_stops_on_an_entry_forward_registered():
    layer = Layer(3, 4, 8)
    expected = {n: t.clone() for n, t in state_dict_copy(layer).items()}
    added = ("lesson.added", msg("likely.added"))
    v = run(judge_layer_state, state_dict_copy(layer), expected, None, added=added)
    assert v.passed() and [c.id for c in v.checks] == ["state-unchanged"]
    layer.register_buffer("last_k", torch.zeros(2))
    v = run(judge_layer_state, state_dict_copy(layer), expected, None, added=added)
    assert v.failed_message() == msg("lesson.added", names=["last_k"], likely=msg("likely.added"))
    with pytest.raises(Stop):  # nothing after it is judged
        judge_layer_state(Verdict(), state_dict_copy(layer), expected, None, added=added)
    # Without the words, a new entry is not this judge's to see (state_unchanged's is).
    assert run(judge_layer_state, state_dict_copy(layer), expected, None).passed()
