"""Tools for a lesson's probes: they run in the child and call the learner's code.

A probe gets fresh inputs, calls the learner's functions through ProbeContext.call
and returns what came back as plain values and tensors. It judges nothing.
"""

from __future__ import annotations

import copy
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

from .origin import foreign_origin

# The fused kernels the labs ask the learner to write by hand.
_KERNEL_CALLS: set[str] = set()
_SOFTMAX_OUT: list[torch.Tensor] = []
_traps_installed = False
# Captured before any learner code runs: a patched torch.no_grad or Tensor.clone cannot reach the harness.
_no_grad = torch.no_grad
_detach = torch.Tensor.detach
_clone = torch.Tensor.clone


class Missing(Exception):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class Foreign(Exception):
    """A step's function or class that the learner's file did not make (see origin.py)."""

    def __init__(self, name: str, origin: str):
        super().__init__(name)
        self.name = name
        self.origin = origin


class LearnerFailure(Exception):
    def __init__(self, failure: dict, todo: bool):
        super().__init__(failure.get("detail", ""))
        self.failure = failure
        self.todo = todo


_OOM_TEXTS = ("can't allocate memory", "not enough memory", "Cannot allocate memory")


def is_out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    if not isinstance(exc, RuntimeError):
        return False
    try:  # torch's allocator raises RuntimeError; str() of a learner's subclass may raise
        text = str(exc)
    except BaseException:
        return False
    return any(t in text for t in _OOM_TEXTS)


def _trap(owner, attr: str, label: str) -> None:
    original = getattr(owner, attr)

    def trapped(*args, **kwargs):
        _KERNEL_CALLS.add(label)
        return original(*args, **kwargs)

    setattr(owner, attr, trapped)


def _capture_softmax(owner, attr: str) -> None:
    original = getattr(owner, attr)

    def capturing(*args, **kwargs):
        out = original(*args, **kwargs)
        if isinstance(out, torch.Tensor):
            _SOFTMAX_OUT.append(out.detach().clone())
            del _SOFTMAX_OUT[:-4]
        return out

    setattr(owner, attr, capturing)


def install_traps() -> None:
    """Record calls to the library's attention kernels, and keep softmax outputs for the heatmap."""
    global _traps_installed
    if _traps_installed:
        return
    _traps_installed = True
    _trap(F, "scaled_dot_product_attention", "F.scaled_dot_product_attention")
    _trap(torch._C._nn, "scaled_dot_product_attention", "F.scaled_dot_product_attention")
    _trap(F, "multi_head_attention_forward", "nn.MultiheadAttention")
    _trap(nn.MultiheadAttention, "forward", "nn.MultiheadAttention")
    _trap(nn.MultiheadAttention, "__init__", "nn.MultiheadAttention")
    # The same kernels as torch's own builtins (torch._scaled_dot_product_attention_math, ...):
    # a helper of the learner's outside the step's functions is not in the source scan.
    for name in dir(torch):
        label = _kernel_label(name)
        if label:
            _trap(torch, name, label)
    for owner in (torch, F, torch.Tensor, torch.special):
        _capture_softmax(owner, "softmax")
    _trap_aten_ops()
    _trap_flex_attention()


def _trap_flex_attention() -> None:
    """torch.nn.attention.flex_attention computes attention in its own operator, whichever
    name it is imported under: its eager path goes through this class."""
    try:
        from torch._higher_order_ops.flex_attention import FlexAttentionHOP
    except ImportError:
        return
    original = FlexAttentionHOP.__call__

    def calling(self, *args, **kwargs):
        _KERNEL_CALLS.add("flex_attention")
        return original(self, *args, **kwargs)

    FlexAttentionHOP.__call__ = calling


def _kernel_label(name: str) -> str | None:
    """The library kernel a torch builtin or operator of this name is, if any."""
    name = name.lower()
    if "scaled_dot_product" in name:
        return "F.scaled_dot_product_attention"
    if "multi_head_attention" in name:
        return "nn.MultiheadAttention"
    return None


def _trap_aten_ops() -> None:
    """torch.ops.aten.<kernel> however it is reached (getattr with a built name included):
    every Python call of an operator goes through these two classes."""
    import torch._ops as ops

    for cls in (ops.OpOverloadPacket, ops.OpOverload):
        original = cls.__call__

        def calling(self, *args, _original=original, **kwargs):
            label = _kernel_label(str(getattr(self, "_qualified_op_name", None) or getattr(self, "_name", "")))
            if label:
                _KERNEL_CALLS.add(label)
            return _original(self, *args, **kwargs)

        cls.__call__ = calling


def clone_args(args):
    if isinstance(args, torch.Tensor):
        return _clone(_detach(args))
    if isinstance(args, (tuple, list)):
        return type(args)(clone_args(a) for a in args)
    return copy.copy(args)


class ProbeContext:
    def __init__(self, module, filename: str, source: str, codes: frozenset[int] | None = None):
        self.module = module
        self.filename = filename
        self.source = source
        self.codes = codes  # ids of the code objects compiled from the learner's file (origin.code_ids)
        self.kernels: set[str] = set()

    def get(self, name: str):
        """The learner's function or class, checked on the very object the probe then uses (a
        module-level __getattr__ could hand out another the next time)."""
        value = getattr(self.module, name, None)
        if value is None or not callable(value):
            raise Missing(name)
        if self.codes is not None:
            origin = foreign_origin(value, self.codes)
            if origin is not None:
                if origin == self.filename or origin.endswith(f"({self.filename})"):  # compiled at run time under its name
                    origin = f"exec(compile(..., {self.filename!r}))"
                raise Foreign(name, origin)
        return value

    def failure(self, exc: BaseException) -> dict:
        from .sandbox import describe_exception

        return describe_exception(exc, self.filename, self.source)

    def call(self, fn, *args, primary: bool = False):
        """Call learner code on copies of args.

        Returns {"value", "args", "softmax"} on success, {"error": failure} otherwise.
        A primary call (the notebook's own sizes) that raises ends the probe: the
        step is then `todo` (NotImplementedError) or `error`.
        """
        args = clone_args(args)
        _KERNEL_CALLS.clear()
        _SOFTMAX_OUT.clear()
        try:
            with _no_grad():
                value = fn(*args)
        except BaseException as exc:  # SystemExit too: the learner's code is at fault
            # The learner's frames may hold what hit the memory limit: free it before describing.
            traceback.clear_frames(exc.__traceback__)
            failure = self.failure(exc)
            if primary:
                raise LearnerFailure(failure, todo=isinstance(exc, NotImplementedError)) from None
            return {"error": failure}
        finally:
            self.kernels |= _KERNEL_CALLS
        softmax = _SOFTMAX_OUT[-1] if _SOFTMAX_OUT else None
        return {"value": value, "args": args, "softmax": softmax}
