"""The wire form of the engine's messages, strict both ways. Standard library only, no torch.

Every message between the engine's processes is a frozen dataclass with a `type` tag (a
ClassVar): `encode` makes its JSON object, {"type": ..., field: value, ...}; `decode` reads one
back against the classes a channel may carry, and checks every field against its annotation.
An unknown type, a missing field, one of the wrong type or one no class has: `Malformed`,
naming what was wrong, raised right there (never a KeyError or TypeError further in). What a
child writes goes through here too, so nothing in it can make decode raise anything else.

PROTOCOL_VERSION is in the worker's ready event: the client refuses a worker that speaks
another (client.ProtocolMismatch). Raise it with any change to a message's fields.
"""

from __future__ import annotations

import builtins
import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar, Union

PROTOCOL_VERSION = 1

T = TypeVar("T")


class Malformed(ValueError):
    """JSON that is none of a channel's messages: unknown type, missing or mistyped field."""


class Tagged:
    """A message: a frozen dataclass with a `type` tag. clip_text: its strings are cut to this
    many characters when read (a child's reports: they come through a pipe learner code can
    write to)."""

    type: ClassVar[str]
    clip_text: ClassVar[int | None] = None

    def to_json(self) -> dict:
        return encode(self)

    @classmethod
    def from_json(cls: builtins.type[T], d: object) -> T:
        return decode(d, {cls.type: cls})  # type: ignore[attr-defined]

    def clipped(self: T) -> T:
        """The message as read, with whatever bounds its class puts on it (see Outputs)."""
        return self


def encode(message: Tagged) -> dict:
    d: dict[str, Any] = {"type": message.type}
    for f in dataclasses.fields(message):  # type: ignore[arg-type]
        d[f.name] = _to_wire(getattr(message, f.name))
    return d


def _to_wire(value: Any) -> Any:
    if isinstance(value, Tagged):
        return encode(value)
    to_dict = getattr(value, "to_dict", None)  # StepResult, LearnerFailure: their own form
    return to_dict() if callable(to_dict) else value


def decode(d: object, kinds: Mapping[str, type[T]]) -> T:
    """The message d is, among kinds (type tag -> class). Raises Malformed for anything else."""
    if not isinstance(d, dict):
        raise Malformed("a message is a JSON object")
    kind = d.get("type")
    cls = kinds.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise Malformed(f"unknown message type {kind!r} (expected one of {sorted(kinds)})")
    hints, required = _fields(cls)
    extra = set(d) - set(hints) - {"type"}
    if extra:
        raise Malformed(f"{kind}: unknown fields {sorted(extra)}")
    missing = required - set(d)
    if missing:
        raise Malformed(f"{kind}: missing fields {sorted(missing)}")
    clip = getattr(cls, "clip_text", None)
    values = {
        name: _check(d[name], hint, f"{kind}.{name}", clip)
        for name, hint in hints.items()
        if name in d
    }
    return cls(**values).clipped()  # type: ignore[attr-defined]


_FIELDS: dict[type, tuple[dict[str, Any], frozenset[str]]] = {}


def _fields(cls: type) -> tuple[dict[str, Any], frozenset[str]]:
    """A message class's field annotations, resolved, and the names that have no default."""
    if cls in _FIELDS:
        return _FIELDS[cls]
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    required = frozenset(
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )
    _FIELDS[cls] = {f.name: hints[f.name] for f in fields}, required
    return _FIELDS[cls]


def _check(value: Any, hint: Any, what: str, clip: int | None) -> Any:
    """value, checked against the annotation hint (and read into its class, for one that has
    from_dict); Malformed naming `what` if it does not fit."""
    if hint is Any:
        return value
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        others = [o for o in options if o is not type(None)]
        for option in others:
            try:
                return _check(value, option, what, clip)
            except Malformed:
                continue
        raise Malformed(f"{what}: {_name(value)} is not {hint}")
    if origin is list or hint is list:
        if not isinstance(value, list):
            raise Malformed(f"{what}: expected a list, got {_name(value)}")
        (item,) = typing.get_args(hint) or (Any,)
        return [_check(v, item, f"{what}[{i}]", clip) for i, v in enumerate(value)]
    if origin is dict or hint is dict:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise Malformed(f"{what}: expected an object, got {_name(value)}")
        args = typing.get_args(hint)
        item = args[1] if args else Any
        return {k: _check(v, item, f"{what}.{k}", clip) for k, v in value.items()}
    if hint is bool:
        if type(value) is not bool:
            raise Malformed(f"{what}: expected true or false, got {_name(value)}")
        return value
    if hint is int:
        if type(value) is not int:
            raise Malformed(f"{what}: expected an integer, got {_name(value)}")
        return value
    if hint is float:
        if type(value) not in (int, float):
            raise Malformed(f"{what}: expected a number, got {_name(value)}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise Malformed(f"{what}: expected a string, got {_name(value)}")
        return value if clip is None else value[:clip]
    from_dict = getattr(hint, "from_dict", None)
    if from_dict is not None:  # StepResult, LearnerFailure
        if not isinstance(value, dict):
            raise Malformed(f"{what}: expected an object, got {_name(value)}")
        try:
            return from_dict(value)
        except Malformed:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise Malformed(f"{what}: {type(exc).__name__} {exc}") from exc
    raise TypeError(f"{what}: no wire form for {hint!r}")  # a protocol bug, not a bad message


def _name(value: object) -> str:
    return "null" if value is None else type(value).__name__
