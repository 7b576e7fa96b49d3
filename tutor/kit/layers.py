"""A learner's layer as a probe uses it: built by keyword, loaded with the tutor's weights, its
state copied, one training step run. They run in the child, on the learner's module."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch

from tutor.kit.probe_tools import graph_kernels


def build_layer(
    cls: Callable, keywords: Sequence[str], values: Sequence, **extra: object
) -> object:
    """cls called by keyword, as a notebook builds it: keywords[i]=values[i] (values past the
    keywords are left out), then extra. The module is left in its default (train) mode."""
    return cls(**dict(zip(keywords, values, strict=False)), **extra)


def load_weights(
    module: torch.nn.Module,
    weights: Mapping[str, torch.Tensor],
    names: Mapping[str, str],
    *,
    skip_none: bool = False,
) -> None:
    """The tutor's own weights copied in, so the judge knows them without trusting the learner's
    process: weights[key] into the parameter at each dotted path of names ({"W_q.weight": key}).
    skip_none: a parameter the module holds as None (a Linear without bias) is left alone;
    otherwise copying into it raises."""
    with torch.no_grad():
        for path, key in names.items():
            *owners, attr = path.split(".")
            owner = module
            for name in owners:
                owner = getattr(owner, name)
            param = getattr(owner, attr)
            if skip_none and param is None:
                continue
            param.copy_(weights[key])


def state_dict_copy(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The module's state_dict, copied: its tensors share storage with the module, which a probe
    changes next. (module_state also copies what the state_dict leaves out.)"""
    return {name: t.detach().clone() for name, t in module.state_dict().items()}


def train_step(
    module: torch.nn.Module,
    forward: Callable,
    g: torch.Tensor,
    x: torch.Tensor | None = None,
    *,
    kernels: bool = False,
    keep_y: bool = True,
) -> dict:
    """One forward and backward with gradients on, as in training: y = forward(), or, given x,
    forward(a copy of x that is not a leaf, as an embedding's output is not: in-place ops stay
    legal on it); then the gradient of sum(y·g) to each named parameter (None where none came).

    {"y", "connected", "grads"}, y detached (no "y" if not keep_y); then, with kernels, the
    library kernels in y's graph ("kernels", sorted) and, given x, x's gradient ("input_grad").
    A y that is not a tensor requiring grad: {"y": y, "connected": False, "grads": {}}."""
    module.zero_grad(set_to_none=True)
    leaf = None if x is None else x.detach().clone().requires_grad_(True)
    y = forward() if leaf is None else forward(leaf * 1.0)
    if not isinstance(y, torch.Tensor) or not y.requires_grad:
        return {**({"y": y} if keep_y else {}), "connected": False, "grads": {}}
    (y * g).sum().backward()
    grads = {
        name: (p.grad.detach().clone() if p.grad is not None else None)
        for name, p in module.named_parameters()
    }
    step: dict[str, object] = {"y": y.detach()} if keep_y else {}
    step["connected"], step["grads"] = True, grads
    if kernels:
        step["kernels"] = sorted(graph_kernels(y))
    if leaf is not None:
        step["input_grad"] = None if leaf.grad is None else leaf.grad.detach().clone()
    return step
