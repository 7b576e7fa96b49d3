"""Learner outputs as data: tensors travel as raw bytes, nothing is pickled.

The child (which ran learner code) encodes; the judge (which never did) decodes.
A step's payload is a JSON message followed by one blob of tensor bytes: the JSON
says where in the blob each tensor lies (base64 in the JSON cost the judge a third
of its time).
Anything that is not a tensor, a number, a string or a plain container arrives
as an Opaque carrying only its type name, so a check can say what came.

Encoding runs in the child, after the learner's code, on values the learner
made: it must survive hostile ones (methods that raise, lie or never end,
tensor subclasses, patched torch methods, structures that explode when walked).
So it reads tensors through torch's C methods captured at import, before any
learner code ran, treats subclasses of plain types (int, float, str, tuple, list,
dict: a namedtuple, an OrderedDict) by their raw value through the base type's
own methods, turns any error into an Opaque, and stops at a budget of nodes and bytes.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import struct
from dataclasses import dataclass
from typing import Any, cast

import torch

MAX_ELEMENTS = 1 << 22  # per tensor
MAX_ITEMS = 64  # per list, tuple or dict
MAX_DEPTH = 8
MAX_NODES = 20_000  # per message: 64 items at 8 levels could otherwise be 64**8 nodes
MAX_TENSOR_BYTES = 64 << 20  # per message
_HEAD_LEN = struct.Struct("!I")  # a payload starts with its JSON's length

_DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.uint8,
        torch.bool,
    )
}

_NAMES = {d: name for name, d in _DTYPES.items()}

# The C implementations, as they were before learner code could patch torch.Tensor.
_TB = getattr(torch._C, "TensorBase", None) or torch._C._TensorBase
_as_plain = _TB.as_subclass
_detach = _TB.detach
_contiguous = _TB.contiguous
_cpu = _TB.cpu
_data_ptr = _TB.data_ptr
_numel = _TB.numel
# The tensor's own getters (typeshed-free: torch types these attributes as their values).
_dtype = cast(Any, _TB.dtype).__get__
_layout = cast(Any, _TB.layout).__get__
_device = cast(Any, _TB.device).__get__
_shape = cast(Any, _TB.shape).__get__
_no_torch_function = torch._C.DisableTorchFunction


@dataclass(frozen=True)
class Opaque:
    """A value the judge cannot look into: only its type (and shape, for arrays)."""

    type: str
    shape: tuple | None = None

    def __str__(self) -> str:
        return self.type if self.shape is None else f"{self.type} of shape {self.shape}"


def type_name(value) -> str:
    cls = type(value)  # type() cannot be overridden; a metaclass can still lie about names
    try:
        module, name = (
            type.__getattribute__(cls, "__module__"),
            type.__getattribute__(cls, "__qualname__"),
        )
        module, name = str.__str__(module), str.__str__(name)
    except Exception:
        return "object"
    return name[:200] if module == "builtins" else f"{module}.{name}"[:200]


class _Budget:
    def __init__(self):
        self.nodes = MAX_NODES
        self.bytes = MAX_TENSOR_BYTES
        self.blob = bytearray()  # the tensors' bytes, each at an 8-aligned offset


def encode(value) -> tuple[object, bytearray]:
    """(JSON-able tree, blob): tensors in the tree point into the blob."""
    budget = _Budget()
    return _encode_node(value, 0, budget), budget.blob


def _encode_node(value, depth: int, budget: _Budget):
    budget.nodes -= 1
    if budget.nodes < 0:
        return {"__opaque__": "(too large to show)", "shape": None}
    try:
        return _encode(value, depth, budget)
    except (
        Exception,
        SystemExit,
        KeyboardInterrupt,
    ):  # learner code ran inside (a property, a method)
        return {"__opaque__": type_name(value), "shape": None}


def _encode(value, depth: int, budget: _Budget):
    cls = type(value)
    if value is None or cls is bool:
        return value
    # Subclasses of int/float/str by their raw value: no learner __int__, __float__, __getitem__ runs.
    # issubclass on the real type, not isinstance: an object can claim any __class__.
    if issubclass(cls, int):
        value = int.__index__(value)
        # Beyond this, json.dumps would refuse to write it (int → str digit limit): no shape is that big.
        return (
            value
            if value.bit_length() <= 256
            else {"__opaque__": "int (too large to show)", "shape": None}
        )
    if issubclass(cls, float):
        return float.__float__(value)
    if issubclass(cls, str):
        return str.__str__(value)[:2000]
    if issubclass(cls, _TB):
        return _encode_tensor(value, budget)
    # Subclasses of tuple, list and dict (a namedtuple, an OrderedDict) as their base type, read
    # through the base type's own C methods: the items they hold, whatever their __iter__,
    # __getitem__, __len__ or items() would say.
    if depth < MAX_DEPTH and issubclass(cls, (tuple, list)):
        items: list | tuple
        if issubclass(cls, list):
            kind, items = "list", list.__getitem__(value, slice(0, MAX_ITEMS))
        else:
            kind = "torch.Size" if issubclass(cls, torch.Size) else "tuple"
            items = tuple.__getitem__(value, slice(0, MAX_ITEMS))
        return {"__seq__": kind, "items": [_encode_node(v, depth + 1, budget) for v in items]}
    if depth < MAX_DEPTH and issubclass(cls, dict):
        pairs = list(itertools.islice(dict.items(value), MAX_ITEMS))
        return {
            "__dict__": [
                [_encode_node(k, depth + 1, budget), _encode_node(v, depth + 1, budget)]
                for k, v in pairs
            ]
        }
    return {"__opaque__": type_name(value), "shape": _array_shape(value)}


def _array_shape(value):
    """The shape of a numpy array (what a learner most often returns instead of a tensor)."""
    if not type_name(value).startswith("numpy."):
        return None
    try:
        shape = value.shape
        return (
            [int.__index__(s) for s in tuple.__getitem__(shape, slice(0, 16))]
            if type(shape) is tuple
            else None
        )
    except Exception:
        return None


def _encode_tensor(t, budget: _Budget):
    with (
        _no_torch_function()
    ):  # neither a subclass's __torch_function__ nor a mode the learner left
        if type(t) is not torch.Tensor:
            t = _as_plain(
                t, torch.Tensor
            )  # a subclass's Python properties (shape, dtype...) out of the way
        t = _detach(t)
        dtype = _dtype(t)
        name = _NAMES.get(dtype) or str(dtype).removeprefix("torch.")
        shape = list(_shape(t))
        n = _numel(t)
        if _device(t).type == "meta":
            return {"__opaque__": f"torch.Tensor[{name}] on meta (no data)", "shape": shape}
        size = n * dtype.itemsize
        if (
            name not in _DTYPES
            or n > MAX_ELEMENTS
            or _layout(t) != torch.strided
            or size > budget.bytes
        ):
            return {"__opaque__": f"torch.Tensor[{name}]", "shape": shape}
        budget.bytes -= size
        t = _contiguous(_cpu(t))
        # ctypes on the data pointer, not .numpy(): one copy, and no Tensor method the learner may have patched.
        blob = budget.blob
        blob += bytes(-len(blob) % 8)
        offset = len(blob)
        if n:
            blob += ctypes.string_at(_data_ptr(t), size)
    return {"__tensor__": offset, "dtype": name, "shape": shape}


def pack_payload(message: dict, blob: bytes | bytearray = b"", dumps=json.dumps) -> bytes:
    """JSON length, JSON, padding to 8, blob. `dumps`: the child passes its own, captured early."""
    head = dumps(message, allow_nan=True).encode()
    start = _HEAD_LEN.size + len(head)
    return b"".join((_HEAD_LEN.pack(len(head)), head, bytes(-start % 8), blob))


def unpack_payload(payload: bytes) -> tuple[object, bytearray]:
    """(message, blob). Raises ValueError when the bytes are not a payload."""
    if len(payload) < _HEAD_LEN.size:
        raise ValueError("payload too short")
    (n,) = _HEAD_LEN.unpack_from(payload)
    start = _HEAD_LEN.size + n
    if start > len(payload):
        raise ValueError("payload too short")
    message = json.loads(payload[_HEAD_LEN.size : start])
    return message, bytearray(payload[start + (-start % 8) :])


class BadPayload(ValueError):
    """A payload's tree that encode() could not have made (a frame forged by learner code)."""


_MAX_DIMS = 16
_MAX_DIM = 1 << 40


def decode(data, blob: bytearray | None = None, depth: int = 0):
    """encode()'s tree back, tensors viewing the blob. Raises BadPayload (a ValueError) for
    anything encode() would not have written: bounded depth, dims and offsets checked."""
    if blob is None:
        blob = bytearray()
    if depth > MAX_DEPTH + 2:
        raise BadPayload("too deep")
    if isinstance(data, list):
        return [decode(v, blob, depth + 1) for v in data[: MAX_ITEMS * 4]]
    if not isinstance(data, dict):
        return data
    if "__tensor__" in data:
        name = data.get("dtype")
        dtype = _DTYPES.get(name) if isinstance(name, str) else None
        shape, offset = data.get("shape"), data.get("__tensor__")
        if (
            dtype is None
            or not isinstance(shape, list)
            or len(shape) > _MAX_DIMS
            or not all(type(d) is int and 0 <= d < _MAX_DIM for d in shape)
            or type(offset) is not int
        ):
            raise BadPayload("tensor")
        shape = tuple(shape)
        count = 1
        for d in shape:
            count *= d
        if count == 0:
            return torch.empty(shape, dtype=dtype)
        if offset < 0 or offset % 8 or offset + count * dtype.itemsize > len(blob):
            raise BadPayload("a tensor outside the payload")
        # A view of the blob, no copy: the judge reads its tensors, never writes them.
        return torch.frombuffer(blob, dtype=dtype, count=count, offset=offset).reshape(shape)
    if "__seq__" in data:
        items = data.get("items")
        if not isinstance(items, list):
            raise BadPayload("sequence")
        items = [decode(v, blob, depth + 1) for v in items[: MAX_ITEMS * 4]]
        if data["__seq__"] == "list":
            return items
        if data["__seq__"] == "torch.Size" and all(
            type(i) is int and 0 <= i < _MAX_DIM for i in items
        ):
            return torch.Size(items)
        return tuple(items)
    if "__dict__" in data:
        pairs = data["__dict__"]
        if not isinstance(pairs, list):
            raise BadPayload("dict")
        out = {}
        for pair in pairs[: MAX_ITEMS * 4]:
            if not isinstance(pair, list) or len(pair) != 2:
                raise BadPayload("dict item")
            k = decode(pair[0], blob, depth + 1)
            try:
                out[k] = decode(pair[1], blob, depth + 1)
            except TypeError:  # an unhashable key
                pass
        return out
    if "__opaque__" in data:
        shape = data.get("shape")
        if shape is not None and not (
            isinstance(shape, list)
            and len(shape) <= _MAX_DIMS
            and all(type(d) is int for d in shape)
        ):
            shape = None
        return Opaque(str(data["__opaque__"])[:200], tuple(shape) if shape is not None else None)
    return {k: decode(v, blob, depth + 1) for k, v in list(data.items())[: MAX_ITEMS * 4]}


# ------------------------------------------------------------------ the result frame, child → worker
#
# The child's result pipe is an fd the learner's code can find and write to. The worker
# reads only a frame that starts with MAGIC and the job's random token and carries its own
# length: bytes before it (a learner's writes, a crash report) are set aside, not parsed
# as a result, and the frame is complete without waiting for EOF (a grandchild the learner
# forked may hold the pipe open).

MAGIC = b"\x00attn-result\x00"
_LEN = struct.Struct("!Q")
MAX_RESULT = 256 << 20
MAX_PREFIX = 64 << 10  # bytes kept from before the frame: a faulthandler report fits


def pack_frame(token: bytes, payload: bytes) -> bytes:
    return MAGIC + token + _LEN.pack(len(payload)) + payload


class FrameReader:
    """Feed it what the pipe gives; `payload` is set once the whole authentic frame is in."""

    def __init__(self, token: bytes):
        self.head = MAGIC + token
        self.buf = bytearray()
        self.prefix = bytearray()  # what came before the frame: text from faulthandler, or junk
        self.start = -1  # where the payload starts in buf, once the head was found
        self.size = -1
        self.payload: bytes | None = None
        self.rest = b""
        self.too_big = False

    def feed(self, chunk: bytes) -> None:
        if self.payload is not None or self.too_big:
            return
        self.buf += chunk
        if self.start < 0:
            at = self.buf.find(self.head)
            if at < 0:
                keep = len(self.head) - 1  # a head split between two chunks
                self._set_aside(len(self.buf) - keep)
                return
            self._set_aside(at)
            self.start = len(self.head) + _LEN.size
        if self.size < 0 and len(self.buf) >= self.start:
            (self.size,) = _LEN.unpack_from(self.buf, len(self.head))
            if self.size > MAX_RESULT:
                self.too_big = True
                return
        if self.size >= 0 and len(self.buf) >= self.start + self.size:
            self.payload = bytes(self.buf[self.start : self.start + self.size])
            self.rest = bytes(self.buf[self.start + self.size :])  # the next step's, if any
            self.buf = bytearray()

    def before(self) -> str:
        """What came before the frame (all that came, if no frame did), as text."""
        pending = self.buf if self.start < 0 else b""
        return (bytes(self.prefix) + bytes(pending)).decode("utf-8", "replace")

    def _set_aside(self, n: int) -> None:
        if n <= 0:
            return
        self.prefix += self.buf[:n]
        del self.buf[:n]
        if len(self.prefix) > MAX_PREFIX:
            del self.prefix[:-MAX_PREFIX]
