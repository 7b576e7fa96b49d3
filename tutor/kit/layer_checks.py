"""Properties of an attention layer (an nn.Module the learner writes), for every lesson that
judges one: its constructor (signature, attributes, Linear layout, mask buffer), its state
before and after forward, the same layer called again (a shorter input, new weights; a function: call_again.py), dropout in
train and eval mode, and one backward pass. Each has a probe half (in the child, on the
learner's module) and a judge half.

The texts are the engine's (LAYER_WORDS, role -> catalog key); each judge also takes `keys`, a
lesson's own message key for any role it words for itself, which overrides the engine's role by
role.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from tutor.kit.judge_tools import (
    Verdict,
    close,
    describe,
    failure_params,
    max_error,
    msg,
    require_ran,
    require_tensor,
    shape_str,
    state_unchanged,
)
from tutor.kit.layers import state_dict_copy, train_step
from tutor.kit.leak_views import require_no_leak
from tutor.kit.magnitude import require_close, require_near
from tutor.kit.training import probe_training_story

Keys = Mapping[str, str]

# The engine's text for each role the judges below name; a lesson's `keys` override them.
LAYER_WORDS: dict[str, str] = {
    "constructor_signature": "check.layer_signature",
    "constructor_attr": "check.layer_attr",
    "mask_buffer": "check.layer_buffer",
    "dropout_raised": "check.layer_dropout_raised",
    "dropout_train": "check.layer_dropout_train",
    "dropout_eval": "check.layer_dropout_eval",
    "dropout_in_eval": "likely.story_dropout_eval",
    "dropout_unknown": "likely.layer_dropout_unknown",
    "dropout_missing": "likely.story_dropout_missing",
    "dropout_p": "likely.story_dropout_p",
    "dropout_twice": "likely.story_dropout_twice",
    "dropout_place": "likely.story_dropout_place",
    "backward_raised": "check.layer_backward_raised",
    "inplace_backward": "likely.story_inplace",
    "grad_blocked": "likely.story_grad",
    "not_trainable": "check.layer_not_trainable",
    "no_grad": "check.layer_no_grad",
    "grad_values": "check.layer_grad_values",
    "grad_wrong": "likely.story_grad",
    "no_input_grad": "check.layer_no_input_grad",
    "input_grad_blocked": "likely.story_input_grad",
    "state_keys": "check.layer_state_keys",
    "notebook_values": "check.layer_seeded_values",
    "notebook_mode": "likely.layer_seeded_mode",
    "leak": "check.no_leak",
    "leak_likely": "likely.no_leak",
    "again_raised": "check.layer_again_raised",
    "call_again": "likely.layer_call_again",
    "cached_weights": "likely.layer_cached_weights",
}


def layer_words(keys: Keys | None = None) -> dict[str, str]:
    """LAYER_WORDS with a lesson's own keys (role -> its key) put over them."""
    return {**LAYER_WORDS, **(keys or {})}


# ---------------------------------------------------------------- the constructor


def linear_layout(module: torch.nn.Module, expected: Mapping[str, tuple]) -> dict:
    """In a probe: the weight shape of each nn.Linear attribute named in expected (None where
    the attribute is missing or not a Linear), and "ok" when every one is as expected, so the
    probe can skip calls on a layer that cannot take the tutor's weights."""
    layout: dict[str, Any] = {}
    for attr in expected:
        layer = getattr(module, attr, None)
        layout[attr] = tuple(layer.weight.shape) if isinstance(layer, torch.nn.Linear) else None
    layout["ok"] = all(layout[attr] == tuple(shape) for attr, shape in expected.items())
    return layout


def judge_layout(
    v: Verdict,
    layout: Mapping[str, Any],
    expected: Mapping[str, tuple],
    *,
    key: str,
    check_id: str = "constructor",
    **params: Any,
) -> None:
    """Each Linear of the layer at its expected weight shape, in order; the first that is not
    fails with key {params…} {attr} {expected} {got}."""
    for attr, shape in expected.items():
        got = layout[attr]
        v.require(
            check_id,
            got is not None and tuple(got) == tuple(shape),
            key,
            **params,
            attr=attr,
            expected=shape_str(shape),
            got=shape_str(got) if got else "None",
        )


def constructor_facts(
    cls: type, module: torch.nn.Module, attrs: Sequence[str], buffer: str
) -> dict:
    """In a probe: what the given constructor promises: its signature ([name, default] per
    parameter, ["*", None] for *args or **kwargs), the named attributes, the p of its
    nn.Dropout `dropout`, its buffers' names and the buffer named `buffer`."""
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]  # type: ignore[misc]
        # *args / **kwargs forward to the given constructor: what they accept is judged by building.
        signature: list | None = [
            ["*", None]
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            else [p.name, None if p.default is inspect.Parameter.empty else p.default]
            for p in params
        ]
    except (TypeError, ValueError):
        signature = None
    dropout = getattr(module, "dropout", None)
    buffers = dict(module.named_buffers())
    return {
        "signature": signature,
        "attrs": {a: getattr(module, a, None) for a in attrs},
        "dropout": dropout.p if isinstance(dropout, torch.nn.Dropout) else None,
        "buffers": sorted(buffers),
        "mask": buffers.get(buffer),
        "buffer": buffer,
    }


def judge_layer_constructor(
    v: Verdict,
    facts: Mapping[str, Any],
    *,
    signature: list,
    attrs: Mapping[str, int],
    dropout: float,
    buffer: torch.Tensor,
    keys: Keys | None = None,
    buffer_params: Mapping[str, Any] | None = None,
    check_id: str = "constructor",
) -> None:
    """The constructor as the lab gives it: the signature (or one forwarding *args/**kwargs),
    each attribute an int of its value, nn.Dropout(dropout) and the buffer exactly as given
    (dtype, shape, values). Roles in keys: "constructor_signature" {expected} {got},
    "constructor_attr" {attr} {expected} {got}, "mask_buffer" {name} {expected}
    {buffer_params…} {got}."""
    keys = layer_words(keys)
    sig = facts.get("signature")
    forwards = sig is not None and ["*", None] in sig
    v.require(
        check_id,
        sig == signature or forwards,
        keys["constructor_signature"],
        expected=_signature_text(signature),
        got=_signature_text(sig or []) or "?",
    )
    for attr, value in attrs.items():
        got = facts["attrs"].get(attr)
        v.require(
            check_id,
            got == value and type(got) is int,
            keys["constructor_attr"],
            attr=attr,
            expected=str(value),
            got=describe(got) if type(got) is not int else str(got),
        )
    v.require(
        check_id,
        facts.get("dropout") == dropout,
        keys["constructor_attr"],
        attr="dropout",
        expected=f"nn.Dropout({dropout})",
        got=str(facts.get("dropout")),
    )
    mask = facts.get("mask")
    ok = (
        isinstance(mask, torch.Tensor)
        and mask.dtype == buffer.dtype
        and mask.shape == buffer.shape
        and bool(torch.equal(mask, buffer))
    )
    v.require(
        check_id,
        ok,
        keys["mask_buffer"],
        name=facts.get("buffer", "mask"),
        expected=_tensor_text(buffer),
        **(buffer_params or {}),
        got=_tensor_text(mask) if isinstance(mask, torch.Tensor) else describe(mask),
    )
    v.expect(check_id, True)


def _signature_text(signature: Sequence) -> str:
    """[name, default] pairs as a def writes them: `d_in, dropout=0.0`."""
    return ", ".join(n if d is None else f"{n}={d!r}" for n, d in signature)


def _tensor_text(t: torch.Tensor) -> dict:
    return msg("value.tensor", dtype=str(t.dtype).removeprefix("torch."), shape=shape_str(t.shape))


# ---------------------------------------------------------------- state around forward


def judge_layer_state(
    v: Verdict,
    state: Mapping[str, Any] | None,
    expected: Mapping[str, torch.Tensor],
    around: Sequence | None,
    *,
    key: str = "check.layer_state_changed",
    likely: Callable[[str], dict] | None = None,
    check_id: str = "state-unchanged",
) -> None:
    """forward must leave the layer's weights and buffers as they were: state (a state_dict
    copied after the calls) holds each expected entry, same shape and values (a float copy of a
    bool buffer passes here; state_unchanged on around = (before, after) module_state says it);
    the first that differs fails with key {name} {got} {likely}, got being its shape or largest
    error, and likely(name) the mistake (by default the engine's: a slice assigned back where
    the shape changed, else a change in place)."""
    state = state or {}
    for name, want in expected.items():
        got = state.get(name)
        same = (
            isinstance(got, torch.Tensor)
            and got.shape == want.shape
            and bool(torch.equal(got.to(want.dtype), want))
        )
        if not same:
            detail = (
                shape_str(got.shape)
                if isinstance(got, torch.Tensor) and got.shape != want.shape
                else (f"{max_error(got, want)[0]:.3g}" if isinstance(got, torch.Tensor) else "—")
            )
            if likely is not None:
                said = likely(name)
            elif isinstance(got, torch.Tensor) and got.shape != want.shape:
                said = msg("likely.layer_state_sliced", name=name)
            else:
                said = msg("likely.layer_state_in_place", name=name)
            v.expect(check_id, False, key, name=name, got=detail, likely=said)
            return
    state_unchanged(v, *(around or (None, None)), check_id=check_id)


# ---------------------------------------------------------------- called again


def require_again_right(
    v: Verdict, got: object, expected: torch.Tensor, what: Any, likely: dict
) -> None:
    """The same layer (or function), called once more after a right first call, must still be
    right: a tensor of the expected shape, then close to it (check call-again)."""
    got = require_tensor(v, "call-again", what, got, tuple(expected.shape), likely)
    require_close(v, "call-again", what, got, expected, likely=likely)


def judge_layer_again(
    v: Verdict,
    case: Mapping[str, Any],
    reference: Callable[[torch.Tensor, Any], torch.Tensor],
    *,
    x: torch.Tensor,
    x_prefix: torch.Tensor,
    w: Any,
    new_w: Any,
    keys: Keys | None = None,
) -> None:
    """One layer used again, as a model uses it: case["prefix"] its call on the shorter
    x_prefix, case["new_weights"] its call on x after new_w were loaded, and case["dropout"]
    (probe_dropout_modes') a new layer in eval mode on x_prefix, then on x. reference(x, w) is
    the right output. A call that raised fails call-again with "again_raised" {t} and the
    error's fields; a wrong one with its value.again_* label and "call_again" (after new
    weights: "cached_weights"). A wrong short eval call is judge_dropout_modes' to say. Judged
    after the other sizes: code with the lab's numbers written in fails there, as it should."""
    keys = layer_words(keys)
    likely, t = msg(keys["call_again"]), x_prefix.shape[1]
    require_again_ran(v, case["prefix"], key=keys["again_raised"], likely=likely, t=t)
    prefix_ref = reference(x_prefix, w)
    what = msg("value.again_prefix", t=t)
    require_again_right(v, case["prefix"]["value"], prefix_ref, what, likely)
    new = case["new_weights"]
    require_again_ran(v, new, key=keys["again_raised"], likely=likely, t=x.shape[1])
    what, cached = msg("value.again_new_weights"), msg(keys["cached_weights"])
    require_again_right(v, new["value"], reference(x, new_w), what, cached)
    dropout = case.get("dropout") or {}
    if "short" in dropout and "error" not in dropout["short"] and "error" not in dropout["eval"]:
        short = dropout["short"]["value"]
        # Right on the short input, then wrong on the longer one: state kept from the first call.
        if isinstance(short, torch.Tensor) and close(short, prefix_ref):
            what = msg("value.again_longer", t=t)
            require_again_right(v, dropout["eval"]["value"], reference(x, w), what, likely)


def require_again_ran(v: Verdict, call: dict, *, key: str, likely: dict, **params: Any) -> None:
    """A later call that raised fails call-again with key {params…} and the error's fields."""
    if "error" in call:
        v.require(
            "call-again", False, key, **params, **failure_params(call["error"]), likely=likely
        )


# ---------------------------------------------------------------- dropout


def probe_dropout_modes(
    ctx: Any,
    build: Callable[[], torch.nn.Module],
    load: Callable,
    x: torch.Tensor,
    short: torch.Tensor,
) -> dict:
    """In a probe: a new layer built with dropout (build()), the tutor's weights loaded
    (load(module)); in eval mode on a short input, then on the whole one (so also a layer that
    first sees a short input), then in train mode. Every call with fixed_dropout."""
    made = ctx.call(build)
    if "error" in made:
        return {"made": made}
    module = made["value"]
    load(module)
    ctx.call(module.eval)
    first = ctx.call(module, short, dropout=True)
    evaluated = ctx.call(module, x, dropout=True)
    ctx.call(module.train)
    return {
        "made": {"value": None},
        "short": first,
        "eval": evaluated,
        "train": ctx.call(module, x, dropout=True),
    }


def judge_dropout_modes(
    v: Verdict,
    case: Mapping[str, Any],
    reference: Callable[[float], torch.Tensor],
    *,
    p: float,
    weights_numel: int,
    keys: Keys | None = None,
    what: str = "forward(x)",
    check_id: str = "dropout",
) -> None:
    """With dropout p in train mode: dropout on the attention weights, once, with the layer's p;
    in eval mode: none. reference(p) is the lab's output with fixed_dropout at p (0: none).
    weights_numel: the elements of the weights, B·H·T·T. Roles in keys: "dropout_raised" {p}
    and the error's fields, "dropout_train" and "dropout_eval" {p} {err} {where} {likely}, and
    diagnose_dropout's (a role a lesson leaves out takes the engine's text, LAYER_WORDS)."""
    keys = layer_words(keys)
    for call in (
        case.get("made") or {},
        *(case[k] for k in ("short", "eval", "train") if k in case),
    ):
        if "error" in call:
            v.require(check_id, False, keys["dropout_raised"], p=p, **failure_params(call["error"]))
    for mode in ("train", "eval"):
        call = case[mode]
        expected = reference(p if mode == "train" else 0.0)
        y = require_tensor(v, check_id, f"{what} ({mode})", call["value"], tuple(expected.shape))
        require_near(
            v,
            check_id,
            keys[f"dropout_{mode}"],
            y,
            expected,
            p=p,
            what=what,
            likely=lambda call=call, mode=mode: diagnose_dropout(
                call.get("dropouts") or [], mode, p, weights_numel, keys
            ),
        )
    v.expect(check_id, True)


def diagnose_dropout(
    calls: list, mode: str, p: float, weights_numel: int, keys: Keys | None = None
) -> dict:
    """From what each dropout call was given (the child's record: p, training, shape, whether
    it was on the weights), what went wrong. Roles in keys: "dropout_in_eval",
    "dropout_unknown", "dropout_missing", "dropout_p" {got} {p}, "dropout_twice",
    "dropout_place" {shape}."""
    keys = layer_words(keys)
    if mode == "eval":
        return msg(
            keys["dropout_in_eval"]
            if any(c["training"] for c in calls)
            else keys["dropout_unknown"]
        )
    if not calls:
        return msg(keys["dropout_missing"])
    other_p = [c["p"] for c in calls if abs(c["p"] - p) > 1e-9]
    if other_p:
        return msg(keys["dropout_p"], got=other_p[0], p=p)
    if calls[0]["weights"] and sum(math.prod(c["shape"]) for c in calls) > weights_numel:
        return msg(keys["dropout_twice"])
    if any(not c["weights"] for c in calls):
        shape = next(c["shape"] for c in calls if not c["weights"])
        return msg(keys["dropout_place"], shape=shape_str(shape))
    return msg(keys["dropout_unknown"])


# ---------------------------------------------------------------- one backward pass


def probe_seeded_layer(
    ctx: Any,
    build: Callable[[], torch.nn.Module],
    seed: int,
    g: torch.Tensor,
    x: torch.Tensor,
    then: torch.Tensor,
) -> dict:
    """In a probe: a layer as a notebook builds it, with its own initial weights under
    torch.manual_seed(seed), in train mode with gradients on; one training step on x (x's
    gradient too: in a model, what the layers before learn from), a call on then, and the
    state_dict after (the judge rebuilds the reference from those weights)."""
    # The CPU generator alone: what torch.manual_seed seeds here, without its queued CUDA
    # seeding, which formats the whole stack (~6 ms a run).
    torch.default_generator.manual_seed(seed)
    made = ctx.call(build, grad=True)
    if "error" in made:
        return {"made": made}
    module = made["value"]
    step = ctx.call(lambda: train_step(module, module, g, x, kernels=True), grad=True, dropout=True)
    last = ctx.call(module, then, grad=True, dropout=True)
    return {
        "made": {"value": None},
        "step": step,
        "last": last,
        "state": ctx.call(lambda: state_dict_copy(module)).get("value"),
        "params": sum(p.numel() for p in module.parameters()),
    }


def weights_from_state(state: object, names: Mapping[str, str]) -> dict | None:
    """The layer's weights as a reference takes them ({key: tensor} for each {state name: key}),
    from a state_dict sent back; None when one is missing or not a tensor."""
    try:
        w = {key: state[name] for name, key in names.items() if name in state}  # type: ignore[index, operator]
    except TypeError:
        return None
    if set(w) != set(names.values()) or not all(isinstance(t, torch.Tensor) for t in w.values()):
        return None
    return {k: t.float() for k, t in w.items()}


def reference_grads(
    forward: Callable[[torch.Tensor, dict], torch.Tensor],
    x: torch.Tensor,
    w: Mapping[str, torch.Tensor],
    g: torch.Tensor,
    names: Mapping[str, str],
) -> tuple[dict, torch.Tensor]:
    """The gradients of sum(forward(x, w)·g) by each parameter ({state name: grad}, names
    mapping state names to w's keys) and by x: what train_step's should be."""
    leaves = {k: t.detach().clone().requires_grad_(True) for k, t in w.items()}
    x = x.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        (forward(x, leaves) * g).sum().backward()
    return {name: leaves[key].grad for name, key in names.items()}, x.grad  # type: ignore[return-value]


def likely_for_backward(e: Mapping[str, Any], keys: Keys | None = None) -> dict:
    """A backward that raised: an in-place op on what backward needs, or a graph cut (NumPy,
    detach). Roles in keys: "inplace_backward", "grad_blocked"."""
    keys = layer_words(keys)
    detail = e.get("detail", "")
    if "inplace" in detail or "in-place" in detail:
        return msg(keys["inplace_backward"])
    if "does not require grad" in detail or "numpy" in detail.lower():
        return msg(keys["grad_blocked"])
    return msg("likely.unknown")


def require_backward_ran(
    v: Verdict, step: Mapping[str, Any], *, keys: Keys | None = None, check_id: str = "trainable"
) -> None:
    """A training step that raised fails with keys["backward_raised"] and the error's fields."""
    keys = layer_words(keys)
    if "error" in step:
        e = step["error"]
        v.require(
            check_id,
            False,
            keys["backward_raised"],
            **failure_params(e),
            likely=likely_for_backward(e, keys),
        )


def judge_gradients(
    v: Verdict,
    value: Mapping[str, Any],
    want: Mapping[str, torch.Tensor],
    want_x: torch.Tensor | None,
    *,
    keys: Keys | None = None,
    check_id: str = "trainable",
) -> None:
    """A train_step's result: the output connected to the graph, each parameter's gradient and
    x's (given want_x) close to the reference's (atol=1e-4, rtol=1e-3). Roles in keys:
    "not_trainable", "no_grad" {name}, "grad_values" {name} {err}, "no_input_grad", and the
    likely mistakes "grad_blocked", "grad_wrong", "input_grad_blocked"."""
    keys = layer_words(keys)
    v.require(
        check_id,
        bool(value.get("connected")),
        keys["not_trainable"],
        likely=msg(keys["grad_blocked"]),
    )
    for name, ref in want.items():
        got = value["grads"].get(name)
        if got is None:
            v.require(check_id, False, keys["no_grad"], name=name, likely=msg(keys["grad_blocked"]))
        _grad_close(v, check_id, keys, got, ref, name)
    if want_x is not None:
        got = value.get("input_grad")
        v.require(
            check_id, got is not None, keys["no_input_grad"], likely=msg(keys["input_grad_blocked"])
        )
        _grad_close(v, check_id, keys, got, want_x, "x")
    v.expect(check_id, True)


def _grad_close(
    v: Verdict, check_id: str, keys: Keys, got: Any, ref: torch.Tensor, name: str
) -> None:
    require_near(
        v,
        check_id,
        keys["grad_values"],
        got,
        ref,
        atol=1e-4,
        rtol=1e-3,
        where=False,
        name=name,
        likely=msg(keys["grad_wrong"]),
    )


def judge_seeded_layer(
    v: Verdict,
    nb: Mapping[str, Any],
    reference: Callable[[dict], tuple],
    *,
    names: Mapping[str, str],
    built: str,
    keys: Keys | None = None,
    check_id: str = "notebook",
) -> None:
    """probe_seeded_layer's layer judged as a notebook's self-check runs it: built (built names
    the call), its backward ran, its state_dict holds the weights (names), its output is the
    reference's for those very weights and a later token moved no earlier output (check_id);
    then its gradients and x's (judge_gradients, check trainable). reference(weights) gives
    (output, {name: grad}, x's grad). Roles in keys: "state_keys" {expected} {got},
    "notebook_values", "notebook_mode" (its likely), "leak" {pos} {got}, "leak_likely", and
    judge_gradients'."""
    keys = layer_words(keys)
    require_ran(v, nb.get("made") or {}, built)
    step = nb["step"]
    require_backward_ran(v, step, keys=keys)
    state = nb.get("state")
    w = weights_from_state(state, names)
    v.require(
        check_id,
        w is not None,
        keys["state_keys"],
        expected=", ".join(names),
        got=", ".join(sorted(state or {})) or "—",
    )
    assert w is not None
    expected, want, want_x = reference(w)
    value = step["value"]
    y = require_tensor(
        v,
        check_id,
        "forward(x)",
        value.get("y") if isinstance(value, dict) else None,
        tuple(expected.shape),
    )
    require_near(
        v, check_id, keys["notebook_values"], y, expected, likely=msg(keys["notebook_mode"])
    )
    last = nb["last"].get("value")
    if isinstance(last, torch.Tensor) and last.shape == y.shape:
        pos = y.shape[1] - 1
        likely = msg(keys["leak_likely"])
        require_no_leak(v, y, last, pos, key=keys["leak"], likely=likely, check_id=check_id)
    v.expect(check_id, True)
    judge_gradients(v, value, want, want_x, keys=keys)


def probe_layer_story(
    ctx: Any, build: Callable[[], torch.nn.Module], load: Callable, x: torch.Tensor, g: torch.Tensor
) -> dict | None:
    """In a probe: a new layer (build(), with dropout) loaded with the tutor's weights, through
    the kit's training story; None where a kernel was seen (own-formula fails the step, and a
    compiled kernel would only cost time) or the build raised (the dropout check says it)."""
    if ctx.kernels:
        return None
    made = ctx.call(build)
    if "error" in made:
        return None
    module = made["value"]
    load(module)
    return probe_training_story(ctx, module, [x], g, module=module)
