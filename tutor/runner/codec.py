"""Learner outputs as data: tensors travel as raw bytes, nothing is pickled.

The child (which ran learner code) encodes; the judge (which never did) decodes.
Anything that is not a tensor, a number, a string or a plain container arrives
as an Opaque carrying only its type name, so a check can say what came.
"""

from __future__ import annotations

import base64
import ctypes
from dataclasses import dataclass

import torch

MAX_ELEMENTS = 1 << 22
MAX_ITEMS = 64
MAX_DEPTH = 8

_DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64,
        torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
    )
}


@dataclass(frozen=True)
class Opaque:
    """A value the judge cannot look into: only its type (and shape, for arrays)."""

    type: str
    shape: tuple | None = None

    def __str__(self) -> str:
        return self.type if self.shape is None else f"{self.type} of shape {self.shape}"


def type_name(value) -> str:
    cls = type(value)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def encode(value, depth: int = 0):
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, str):
            return value[:2000]
        return value
    if isinstance(value, torch.Tensor):
        return _encode_tensor(value)
    if depth < MAX_DEPTH and isinstance(value, (tuple, list)):
        kind = "torch.Size" if isinstance(value, torch.Size) else type(value).__name__
        if kind in ("tuple", "list", "torch.Size"):
            return {"__seq__": kind, "items": [encode(v, depth + 1) for v in value[:MAX_ITEMS]]}
    if depth < MAX_DEPTH and type(value) is dict:
        return {"__dict__": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in list(value.items())[:MAX_ITEMS]]}
    shape = getattr(value, "shape", None)
    try:
        shape = tuple(int(s) for s in shape) if shape is not None else None
    except Exception:
        shape = None
    return {"__opaque__": type_name(value), "shape": shape}


def _encode_tensor(t: torch.Tensor):
    t = t.detach()
    if type(t) is not torch.Tensor:
        t = t.as_subclass(torch.Tensor)
    dtype = str(t.dtype).removeprefix("torch.")
    if dtype not in _DTYPES or t.numel() > MAX_ELEMENTS or t.layout != torch.strided:
        return {"__opaque__": f"torch.Tensor[{dtype}]", "shape": list(t.shape)}
    t = t.cpu().contiguous()
    # ctypes, not .numpy(): torch does not require NumPy, and a learner's machine may lack it.
    raw = ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()) if t.numel() else b""
    return {"__tensor__": base64.b64encode(raw).decode("ascii"), "dtype": dtype, "shape": list(t.shape)}


def decode(data):
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "__tensor__" in data:
        dtype = _DTYPES[data["dtype"]]
        shape = tuple(data["shape"])
        raw = bytearray(base64.b64decode(data["__tensor__"]))
        if not raw:
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(raw, dtype=dtype).reshape(shape).clone()
    if "__seq__" in data:
        items = [decode(v) for v in data["items"]]
        return list(items) if data["__seq__"] == "list" else (
            torch.Size(items) if data["__seq__"] == "torch.Size" and all(isinstance(i, int) for i in items)
            else tuple(items)
        )
    if "__dict__" in data:
        out = {}
        for k, v in data["__dict__"]:
            k = decode(k)
            try:
                out[k] = decode(v)
            except TypeError:  # an unhashable key
                pass
        return out
    if "__opaque__" in data:
        shape = data.get("shape")
        return Opaque(data["__opaque__"], tuple(shape) if shape is not None else None)
    return {k: decode(v) for k, v in data.items()}
