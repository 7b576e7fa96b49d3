"""What learner code asks of an object, in the child: its methods routed through the probe's
own functions (intercept), and every call of them recorded as a row of integers
(CallRecorder), so a judge can say how a loop used a layer (one call per token, the state passed
back) and not only what it returned."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tutor.kit.borrowed import lend

Around = Callable[..., Any]  # around(original, *args, **kwargs): runs in place of the method
Note = Callable[[tuple, dict, "CallRecorder"], "list[int] | None"]


def intercept(obj: object, arounds: dict[str, Around]) -> None:
    """Route obj's methods through arounds[name](original, *args, **kwargs), original being
    the method as it was (bound to obj). Put on a subclass of obj's own class, not on the
    instance: learner code that calls the method through the class
    (`type(layer).forward_cached(layer, ...)`) meets it too, which an instance attribute never
    sees. The subclass keeps the class's name, module and qualname (messages name the
    learner's class). Lent: the probe's functions that arounds call may run under learner code."""
    originals = {name: getattr(obj, name) for name in arounds}
    cls = type(obj)
    body: dict[str, Any] = {
        name: _method(around, originals[name]) for name, around in arounds.items()
    }
    body.update(__module__=cls.__module__, __qualname__=cls.__qualname__)
    obj.__class__ = type(cls.__name__, (cls,), body)


def _method(around: Around, original: Callable) -> Callable:
    def method(_self, *args, **kwargs):
        return around(original, *args, **kwargs)

    lend(around)
    return lend(method)


class CallRecorder:
    """Each call of obj's methods named in notes, as a row: notes[name](args, kwargs, recorder)
    is called before the method runs (so it sees the arguments as they came) and returns the
    row, a list of integers, or None to leave the call out. recorder.last[name] is what that
    method last returned (None before, and a call that raised leaves it as it was), so a note
    can ask whether the state it is given is the state the method handed back. log() sends
    the rows as one int64 tensor per method: a long loop is not cut at the codec's 64 items."""

    def __init__(self, obj: object, notes: dict[str, Note], widths: dict[str, int]):
        self.rows: dict[str, list[list[int]]] = {name: [] for name in notes}
        self.last: dict[str, Any] = {name: None for name in notes}
        self.widths = widths
        intercept(obj, {name: self._around(name, note) for name, note in notes.items()})

    def _around(self, name: str, note: Note) -> Around:
        def around(original, *args, **kwargs):
            row = note(args, kwargs, self)
            if row is not None:
                self.rows[name].append(row)
            out = original(*args, **kwargs)
            self.last[name] = out
            return out

        return lend(around)

    def count(self, name: str) -> int:
        """The calls of name recorded so far (the index of the next)."""
        return len(self.rows[name])

    def log(self) -> dict[str, torch.Tensor]:
        """{name: (calls, width) int64 tensor}, width from widths (an empty log keeps it)."""
        return {
            name: torch.tensor(rows, dtype=torch.int64).reshape(-1, self.widths[name])
            for name, rows in self.rows.items()
        }


def argument(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    """The argument at position index, or given by name, as the method would bind it."""
    return args[index] if len(args) > index else kwargs.get(name, default)
