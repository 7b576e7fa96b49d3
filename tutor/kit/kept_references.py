"""The judge's references kept per input set: a save's judge computes the same reference on the
same inputs as the save before it (the inputs come from the lesson's seed, the learner's initial
weights from the same seed), so a reference's result is looked up by what went in, not computed
again. Only for references that depend on their arguments and on what `what` names, nothing else
(the kit's own: a LayerUse at one size; a PairFunction's forward).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import torch

KEPT = 16  # results kept, the oldest dropped first: a few steps' references, a few sizes each
KEY_BYTES = 32 << 20  # tensors larger in all (a state the learner grew): computed, not kept

T = TypeVar("T")
_kept: OrderedDict[Hashable, Any] = OrderedDict()


class Same:
    """A part of a key equal only to this very object; it keeps the object alive, so that its id
    is never another object's while the key is kept."""

    __slots__ = ("obj",)

    def __init__(self, obj: object):
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.obj is self.obj


class _NoKey(Exception):
    pass


def content_key(value: object, budget: list[int] | None = None) -> Hashable:
    """A hashable stand-in equal only for equal contents: a tensor by its dtype, shape and bytes;
    lists, tuples and dicts by their items; None, bools, numbers and strings as they are.
    Raises _NoKey for anything else, or past budget[0] bytes of tensors (default KEY_BYTES)."""
    budget = [KEY_BYTES] if budget is None else budget
    if value is None or isinstance(value, (bool, int, float, str)):
        return (type(value).__name__, value)
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.device.type != "cpu" or t.is_sparse or t.is_quantized or t.is_complex():
            raise _NoKey
        budget[0] -= t.numel() * t.element_size()
        if budget[0] < 0:
            raise _NoKey
        raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        digest = hashlib.blake2b(raw, digest_size=16).digest()
        return ("tensor", str(t.dtype), tuple(t.shape), value.requires_grad, digest)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(content_key(v, budget) for v in value))
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: repr(kv[0]))
        return ("dict", tuple((content_key(k, budget), content_key(v, budget)) for k, v in items))
    raise _NoKey


def kept(what: Hashable, make: Callable[[], T], *args: object) -> T:
    """make(), or what it returned before for the same `what` and the same contents of args.
    The result is shared: callers read it and never change it."""
    try:
        key = (what, content_key(args))
    except _NoKey:
        return make()
    if key in _kept:
        _kept.move_to_end(key)
        return _kept[key]
    result = make()
    _kept[key] = result
    while len(_kept) > KEPT:
        _kept.popitem(last=False)
    return result


def forget() -> None:
    _kept.clear()
