"""The shapes a learner's forward makes, op by op, beside the route the lab takes: a view for a
layer step, and for a wrong layer, where its shapes first part from the lab's. The probe half
runs in the child (a TorchFunctionMode, nothing patched), the view half in the judge."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
from torch.overrides import TorchFunctionMode

from tutor.kit.judge_tools import msg, shape_str
from tutor.model.view_items import heading, note, table, waiting

TRACE_LIMIT = 48  # ops kept of one forward: within the codec's 64 items
# What makes no tensor worth showing: questions about a tensor, not steps of the computation.
TRACE_SKIP = frozenset(
    {"size", "dim", "numel", "stride", "is_contiguous", "__len__", "__bool__", "item", "tolist"}
)
OP_NAMES = {
    "__matmul__": "@",
    "__rmatmul__": "@",
    "matmul": "@",
    "__truediv__": "/",
    "__mul__": "*",
    "__rmul__": "*",
    "__add__": "+",
    "__radd__": "+",
    "__sub__": "-",
    "__getitem__": "[…]",
}

# The texts of the view, by role: the engine's, or a lesson's own keys (see trace_view).
TRACE_WORDS = ("none", "step", "op", "shape", "parts", "same", "other_route")
TRACE_KEYS = {w: f"ui.trace_{w}" for w in TRACE_WORDS}

Lab = Sequence[tuple[str, tuple]]


class ShapeTrace(TorchFunctionMode):
    """Every torch function and tensor method a forward calls, with the shape it made, as
    [name, shape] (operators by their symbol): whatever the learner's route, the shapes say
    which dimension went where."""

    def __init__(self, limit: int = TRACE_LIMIT) -> None:
        super().__init__()
        self.ops: list = []
        self.limit = limit

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "?")
        if name == "__get__":  # a property: x.T, x.mT
            name = getattr(getattr(func, "__self__", None), "__name__", name)
        first = out[0] if isinstance(out, (tuple, list)) and out else out
        if (
            name not in TRACE_SKIP
            and isinstance(first, torch.Tensor)
            and len(self.ops) < self.limit
        ):
            self.ops.append([OP_NAMES.get(name, name), list(first.shape)])
        return out


def traced_forward(module: Callable, x: torch.Tensor) -> list:
    """In a probe (inside ctx.call): module(x) under a ShapeTrace, its ops as plain data."""
    with ShapeTrace() as trace:
        module(x)
    return trace.ops


def trace_parting(ops: list, lab: Lab) -> tuple[int, str, tuple] | None:
    """(index, expected op, its shape) at the first op whose shape the lab's forward never makes:
    the op the lab makes after the learner's last shape that it also makes. None: no parting.
    lab: the lab's forward as (op, shape) pairs, at the traced size."""
    shapes = {shape for _, shape in lab}
    for i, (_, shape) in enumerate(ops):
        if tuple(shape) not in shapes:
            before = tuple(ops[i - 1][1]) if i else None
            at = next((k for k, (_, s) in enumerate(lab) if s == before), -1)
            name, made = lab[at + 1] if at + 1 < len(lab) else lab[-1]
            return i, name, made
    return None


def trace_view(
    ops: object, lab: Lab, *, wrong: bool, title: dict, words: Mapping[str, str] | None = None
) -> list:
    """The learner's trace as a view; for a layer that fails, cut at the first shape the lab's
    never makes, with what the lab does there. A right layer may take another route (a loop over
    heads, einsum): no parting is marked then. title: the heading's message; words: a lesson's
    own message key for any of TRACE_WORDS, over the engine's TRACE_KEYS (parts takes {op}
    {shape} {before} {expected} {expected_shape})."""
    words = {**TRACE_KEYS, **(words or {})}
    if not isinstance(ops, list) or not ops:
        return [waiting(msg(words["none"]))]
    parting = trace_parting(ops, lab)
    other_route = bool(parting) and not wrong
    if other_route:
        parting = None
    rows = []
    for i, (name, shape) in enumerate(ops):
        mark = "✗" if parting and i == parting[0] else ""
        rows.append([str(i + 1), name, shape_str(shape), mark])
        if parting and i == parting[0]:
            break  # what follows a wrong shape is its consequence
    view = [
        heading(title),
        table(
            [msg(words["step"]), msg(words["op"]), msg(words["shape"]), ""],
            rows,
            ["right", "left", "left", "left"],
        ),
    ]
    if parting:
        i, expected, made = parting
        view.append(
            note(
                msg(
                    words["parts"],
                    op=ops[i][0],
                    shape=shape_str(ops[i][1]),
                    before=shape_str(ops[i - 1][1]) if i else "x",
                    expected=expected,
                    expected_shape=shape_str(made),
                )
            )
        )
    else:
        view.append(note(msg(words["other_route" if other_route else "same"])))
    return view
