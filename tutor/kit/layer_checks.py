"""Properties of an attention layer (an nn.Module the learner writes), for every lesson that
judges one: its constructor (signature, attributes, Linear layout, mask buffer), its state
before and after forward, the same layer called again (a shorter input, new weights; a
function: call_again.py). Dropout, one backward pass and the training story are in
layer_training.py. Each has a probe half (in the child, on the learner's module) and a judge
half.

The texts are the engine's (LAYER_WORDS, role -> catalog key); each judge also takes `keys`, a
lesson's own message key for any role it words for itself, which overrides the engine's role by
role.
"""

from __future__ import annotations

import inspect
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
    require_tensor,
    shape_str,
    state_unchanged,
)
from tutor.kit.magnitude import require_close

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
    added: tuple[str, dict] | None = None,
) -> None:
    """forward must leave the layer's weights and buffers as they were: state (a state_dict
    copied after the calls) holds each expected entry, same shape and values (a float copy of a
    bool buffer passes here; state_unchanged on around = (before, after) module_state says it);
    the first that differs fails with key {name} {got} {likely}, got being its shape or largest
    error, and likely(name) the mistake (by default the engine's: a slice assigned back where
    the shape changed, else a change in place). added = (key, likely), where no `around` was
    read: expected is the whole state, and entries beyond it stop the step with key {names}
    {likely} (a buffer registered in forward, the sequence kept on the layer)."""
    state, changed = state or {}, False
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
            changed = True
            break
    if added is not None:  # said even after a changed entry: a new one stops the step
        extra = sorted(set(state) - set(expected))
        v.require(check_id, not extra, added[0], names=extra, likely=added[1])
        v.expect(check_id, True)
    if not changed:
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
