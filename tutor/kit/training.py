"""The training story: one property for every lesson whose code a model trains.

A layer (or a function) that is right in one frozen call can still break training: a value
kept from its first call under torch.no_grad() cuts every later call off from the weights; a
cache keyed on a tensor's identity returns stale results after an optimiser step or
`q.mul_(2)`, which change values in place and keep the identity; an in-place dropout on the
softmax's output makes backward raise. The story calls the code as a training loop does:

1. under torch.no_grad() (an evaluation loop; a module in eval mode: no dropout may fire);
2. with gradients on (a module in train mode: dropout once, on the weights), then backward:
   the parameters and the inputs get their gradients;
3. an optimiser step (SGD, in place) on the parameters, and on the inputs listed as trained;
4. called again on the very same objects, then backward: the fresh result and gradients;
5. under torch.no_grad(), called on the same objects, the first input changed in place
   (`x.mul_(2)`), called again: the fresh result.

probe_training_story runs it in the child, judge_training_story judges it against the
lesson's reference, which takes (inputs, state, p) and is differentiable in both.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import NoReturn

import torch

from tutor.kit.judge_tools import (
    Stop,
    Verdict,
    close,
    failure_params,
    max_error,
    msg,
    shape_str,
)
from tutor.kit.kept_references import kept
from tutor.kit.probe_tools import ProbeContext, module_state

LR = 0.5  # the optimiser step's learning rate: large enough that stale values show
SCALE = 2.0  # the in-place update of the first input: x.mul_(2)
GRAD_ATOL, GRAD_RTOL = 1e-4, 1e-3  # no notebook asserts gradients: the kit's own tolerance

_no_grad = torch.no_grad
_detach = torch.Tensor.detach
_clone = torch.Tensor.clone


def _copy(t):
    return None if t is None else _clone(_detach(t))


def probe_training_story(
    ctx: ProbeContext,
    fn: Callable,
    inputs: Sequence,
    g: torch.Tensor,
    *,
    module: torch.nn.Module | None = None,
    trained: Sequence[int] = (),
    pick: Callable | None = None,
    grads: bool = True,
) -> dict:
    """Run the story on fn(*inputs) (module: the nn.Module whose parameters train, built with
    the dropout the judge is told; trained: indexes of inputs the optimiser also updates, for a
    function whose weights are arguments; pick(value): the output out of what fn returns;
    grads=False: no backward, the inputs need no gradient and the step scales the trained ones
    by 1 - LR: for a function a lesson accepts in NumPy). Returns plain data for
    judge_training_story; stops at the first stage that raises."""
    story: dict = {"stages": {}}
    objs = [_copy(a) if isinstance(a, torch.Tensor) else a for a in inputs]
    out = pick or (lambda value: value)

    def record(stage: str, call: dict) -> bool:
        story["stages"][stage] = call
        return "error" not in call

    # The state it starts from: the judge's reference takes the same weights and steps them itself.
    if module is not None:
        story["state"] = ctx.call(lambda: module_state(module)).get("value")
    if module is not None:
        ctx.call(module.eval)
    if not record("no_grad", ctx.call(lambda: _plain(out(fn(*objs))), dropout=True)):
        return story
    if module is not None:
        ctx.call(module.train)
    leaves = [
        _copy(a).requires_grad_(grads)
        if isinstance(a, torch.Tensor) and a.is_floating_point()
        else a
        for a in objs
    ]
    # Not leaves, as a layer's input in a model is not: in-place ops on them stay legal. `+ 0.0`
    # saves no tensor for backward, so the second backward through it is legal too.
    live = [a + 0.0 if isinstance(a, torch.Tensor) else a for a in leaves]

    def forward_backward(with_inputs: bool) -> dict:
        if module is not None:
            module.zero_grad(set_to_none=True)
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                leaf.grad = None
        y = out(fn(*live))
        result: dict = {"y": _plain(y), "connected": False}
        if not grads:
            return result
        if isinstance(y, torch.Tensor) and y.requires_grad and y.shape == g.shape:
            (y * g).sum().backward()
            result["connected"] = True
        params = dict(module.named_parameters()) if module is not None else {}
        result["grads"] = {name: _copy(p.grad) for name, p in params.items()}
        if with_inputs:
            result["input_grads"] = [
                _copy(leaf.grad) if isinstance(leaf, torch.Tensor) else None for leaf in leaves
            ]
        return result

    if not record("grad", ctx.call(lambda: forward_backward(True), grad=True, dropout=True)):
        return story
    if not record("step", ctx.call(lambda: _step(module, live, leaves, trained, grads))):
        return story
    if not record("again", ctx.call(lambda: forward_backward(False), grad=True, dropout=True)):
        return story
    first = live[0]
    if isinstance(first, torch.Tensor):

        def changed_in_place():
            fn(*live)  # seen once more as it is, under no_grad (a memo of inference calls)
            first.mul_(SCALE)  # as `q.mul_(2)` in a caller: the same object, new values
            return _plain(out(fn(*live)))

        record("input", ctx.call(changed_in_place, dropout=True))
    return story


def _step(module, live, leaves, trained, grads: bool) -> None:
    """One SGD step, in place: the module's parameters, and the trained inputs (their live
    copies, the objects fn is called with again); without gradients, those scaled by 1 - LR."""
    with _no_grad():
        if not grads:
            for i in trained:
                live[i].mul_(1 - LR)
            return
        if module is not None:
            for p in module.parameters():
                if p.grad is not None:
                    p.sub_(LR * p.grad)
        for i in trained:
            if isinstance(leaves[i], torch.Tensor) and leaves[i].grad is not None:
                live[i].sub_(LR * leaves[i].grad)
                leaves[i] = None  # its gradient is taken: the inputs' are not judged again


def _plain(y):
    """A copy of a tensor as a plain torch.Tensor (a subclass's __torch_function__ and Python
    properties out of the way, as the codec does); anything else as it is."""
    if not isinstance(y, torch.Tensor):
        return y
    with torch._C.DisableTorchFunction():
        return _copy(torch.Tensor.as_subclass(y, torch.Tensor))


# ---------------------------------------------------------------- the judge's half

Reference = Callable[[list, "dict | None", float], torch.Tensor]


def _stepped(
    inputs: list, state: dict | None, grads: dict, input_grads: list, trained: Sequence[int]
) -> tuple[list, dict | None]:
    """The reference's inputs and state after the same SGD step, from its own gradients."""
    new_inputs = list(inputs)
    for i in trained:
        if input_grads[i] is not None:
            new_inputs[i] = inputs[i] - LR * input_grads[i]
    new_state = None
    if state is not None:
        new_state = {
            k: (t - LR * grads[k] if grads.get(k) is not None else t) for k, t in state.items()
        }
    return new_inputs, new_state


def reference_story(
    reference: Reference, inputs, state, g, p: float, trained=(), grads: bool = True
) -> dict:
    """What a right layer gives at each stage, with its gradients (grads: as probed)."""
    inputs = [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in inputs]
    base = {k: t.detach().clone() for k, t in state.items()} if state else None

    def with_grads(ins, st):
        leaves = [
            t.clone().requires_grad_(True)
            if isinstance(t, torch.Tensor) and t.is_floating_point()
            else t
            for t in ins
        ]
        params = (
            {k: t.clone().requires_grad_(True) for k, t in st.items() if t.is_floating_point()}
            if st
            else {}
        )
        full = {**(st or {}), **params} if st else None
        with torch.enable_grad():
            y = reference(leaves, full, p)
            (y * g).sum().backward()
        grads = {k: t.grad for k, t in params.items()}
        in_grads = [t.grad if isinstance(t, torch.Tensor) else None for t in leaves]
        return y.detach(), grads, in_grads

    with torch.no_grad():
        no_grad = reference(inputs, base, 0.0)
    if not grads:
        with torch.no_grad():
            y = reference(inputs, base, p)
            new_inputs = [t * (1 - LR) if i in trained else t for i, t in enumerate(inputs)]
            y2 = reference(new_inputs, base, p)
            scaled = list(new_inputs)
            scaled[0] = scaled[0] * SCALE
            y3 = reference(scaled, base, p)
        return {"no_grad": no_grad, "grad": (y, {}, []), "again": (y2, {}), "input": y3}
    y, param_grads, in_grads = with_grads(inputs, base)
    new_inputs, new_state = _stepped(inputs, base, param_grads, in_grads, trained)
    y2, grads2, _ = with_grads(new_inputs, new_state)
    scaled = list(new_inputs)
    if isinstance(scaled[0], torch.Tensor):
        scaled[0] = scaled[0] * SCALE
    with torch.no_grad():
        y3 = reference(scaled, new_state, p)
    return {
        "no_grad": no_grad,
        "grad": (y, param_grads, in_grads),
        "again": (y2, grads2),
        "input": y3,
    }


def judge_training_story(
    v: Verdict,
    story: dict | None,
    inputs: Sequence,
    reference: Reference,
    g: torch.Tensor,
    *,
    what: str,
    names: Sequence[str],
    p: float = 0.0,
    trained: Sequence[int] = (),
    grads_of: Sequence[str] | None = None,
    grads: bool = True,
    check_id: str = "trains",
    memo: Hashable | None = None,
) -> None:
    """Judge probe_training_story's outputs (the same inputs, g and trained) as one check:
    values at every stage at the notebooks' tolerance, gradients of the parameters (grads_of:
    their state names; default all floating ones) and of the floating inputs (names: how the
    messages call each input), dropout none in eval and once on the weights in train mode.
    memo: what the reference computes besides its arguments (kept_references.Same(spec), a
    size): its story is then computed once per content of the inputs and the initial state."""
    if not story:
        return
    stages = story["stages"]
    state0 = story.get("state")
    state0 = {k: t for k, t in state0.items() if not k.startswith("#")} if state0 else None

    def make() -> dict:
        return reference_story(reference, list(inputs), state0, g, p, trained, grads)

    if memo is None:
        want = make()
    else:
        want = kept(("story", memo), make, list(inputs), state0, g, p, tuple(trained), grads)
    module = state0 is not None

    def stage_msg(stage: str) -> dict:
        if stage == "input":
            return msg("story.input", arg=names[0], scale=f"{SCALE:g}")
        if stage == "grad" and module:
            return msg("story.train", p=f"{p:g}")
        if stage == "no_grad" and module:
            return msg("story.no_grad_eval")
        return msg(f"story.{stage}")

    def fail(key: str, stage: str, likely, **params) -> NoReturn:
        v.require(check_id, False, key, what=what, stage=stage_msg(stage), likely=likely, **params)
        raise Stop  # require has raised it already: a failed story ends the judge

    for stage in ("no_grad", "grad", "step", "again", "input"):
        call = stages.get(stage)
        if call is None:
            break
        if "error" in call:
            e = call["error"]
            fail("check.story_raised", stage, _likely_raised(e), **failure_params(e))
        value = call["value"]
        dropouts = call.get("dropouts") or []
        if stage == "step":
            continue
        result = value if isinstance(value, dict) else {"y": value}
        expected = want[stage][0] if stage in ("grad", "again") else want[stage]
        y = result.get("y")
        if not isinstance(y, torch.Tensor) or y.shape != expected.shape or not close(y, expected):
            err, where = (
                max_error(y, expected)
                if isinstance(y, torch.Tensor) and y.shape == expected.shape
                else (float("nan"), ())
            )
            likely = _likely_values(stage, dropouts, p, module)
            fail("check.story_values", stage, likely, err=err, where=shape_str(where))
        if module and stage == "no_grad" and any(d["training"] and d["p"] > 0 for d in dropouts):
            fail(
                "check.story_dropout", stage, msg("likely.story_dropout_eval"), count=len(dropouts)
            )
        # In train mode the values say it (fixed_dropout drops by position: a per-head loop of
        # dropouts is right, twice or elsewhere is not); the record names the mistake.
        if grads and stage in ("grad", "again"):
            _judge_grads(result, want[stage], grads_of, names, stage, fail)
    v.expect(check_id, True)


def _judge_grads(
    result: dict, want: tuple, grads_of, names, stage: str, fail: Callable[..., NoReturn]
) -> None:
    grads = result.get("grads") or {}
    ref_grads = want[1]
    blocked = msg("likely.story_first_call") if stage == "grad" else msg("likely.story_stale_graph")
    if not result.get("connected"):
        fail("check.story_no_graph", stage, blocked)
    for name in grads_of if grads_of is not None else sorted(ref_grads):
        ref, got = ref_grads.get(name), grads.get(name)
        if ref is None:
            continue
        if not isinstance(got, torch.Tensor):
            fail("check.story_no_grad", stage, blocked, name=name)
        if not close(got, ref, GRAD_ATOL, GRAD_RTOL):
            err = max_error(got, ref)[0] if got.shape == ref.shape else float("nan")
            fail("check.story_grad", stage, msg("likely.story_grad"), name=name, err=err)
    if stage != "grad":
        return
    for name, got, ref in zip(names, result.get("input_grads") or [], want[2], strict=False):
        if ref is None:
            continue
        if not isinstance(got, torch.Tensor):
            fail("check.story_no_grad", stage, msg("likely.story_input_grad"), name=name)
        if not close(got, ref, GRAD_ATOL, GRAD_RTOL):
            err = max_error(got, ref)[0] if got.shape == ref.shape else float("nan")
            fail("check.story_grad", stage, msg("likely.story_grad"), name=name, err=err)


def _likely_raised(e: dict) -> dict:
    detail = e.get("detail", "")
    if "inplace" in detail or "in-place" in detail:
        return msg("likely.story_inplace")
    if "second time" in detail:
        return msg("likely.story_stale_graph")
    return msg("likely.unknown")


def _likely_values(stage: str, dropouts: list, p: float, module: bool) -> dict:
    if stage in ("again", "input"):
        return msg("likely.story_stale")
    if stage == "no_grad" and module and any(d["training"] and d["p"] > 0 for d in dropouts):
        return msg("likely.story_dropout_eval")
    if stage == "grad" and module and p > 0:
        fired = [d for d in dropouts if d["training"] and d["p"] > 0]
        if not fired or len(fired) > 1 or not all(d["weights"] for d in fired):
            return _likely_dropout(fired, p)
    if stage == "grad":
        return msg("likely.story_grad_mode")
    return msg("likely.unknown")


def _likely_dropout(fired: list, p: float) -> dict:
    if not fired:
        return msg("likely.story_dropout_missing")
    if any(abs(d["p"] - p) > 1e-9 for d in fired):
        return msg("likely.story_dropout_p", got=f"{fired[0]['p']:g}", p=f"{p:g}")
    elsewhere = [d for d in fired if not d["weights"]]
    if elsewhere:
        return msg("likely.story_dropout_place", shape=shape_str(elsewhere[0]["shape"]))
    return msg("likely.story_dropout_twice")
