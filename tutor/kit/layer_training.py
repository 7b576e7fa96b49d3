"""An attention layer as it is trained, for every lesson that judges one: dropout in train and
eval mode, one backward pass on its own weights (as a notebook's self-check does), and the
training story of a new layer. Each has a probe half (in the child, on the learner's module)
and a judge half; the texts are layer_checks.LAYER_WORDS', a lesson's `keys` over them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch

from tutor.kit.judge_tools import (
    Verdict,
    failure_params,
    msg,
    require_ran,
    require_tensor,
    shape_str,
)
from tutor.kit.layer_checks import Keys, layer_words
from tutor.kit.layers import state_dict_copy, train_step
from tutor.kit.leak_views import require_no_leak
from tutor.kit.magnitude import require_near
from tutor.kit.training import probe_training_story

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
