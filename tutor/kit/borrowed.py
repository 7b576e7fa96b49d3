"""The watch on the checks' own code, in the child: a function of the checks' file that learner
code runs (taken from a caller's frame, inspect.stack, gc...) is recorded, however it was
reached; lend() marks what a probe hands to learner code on purpose. ProbeContext.call puts it
on, for files that can reach such a function at all (_reaches)."""

from __future__ import annotations

import sys
import threading
import types

# Captured before any learner code runs: a learner's sys.settrace cannot take the harness's place.
_settrace, _gettrace, _getframe = sys.settrace, sys.gettrace, sys._getframe
_thread_settrace = threading.settrace
_LENT: set[int] = set()  # ids of the checks' code objects a probe lends to learner code
_lent_codes: list = []  # keeps them alive, so that their ids stay theirs
FOREIGN_LABEL = "the checks' own code"


def lend(fn):
    """Mark a function of the checks as handed to learner code on purpose (a recorder put on
    the learner's layer, a correct helper in place of the learner's): learner code may run it.
    Any other function of the checks' file that learner code runs is foreign (ProbeContext.call)."""
    code = getattr(fn, "__code__", None)
    if code is not None and id(code) not in _LENT:
        _LENT.add(id(code))
        _lent_codes.append(code)
    return fn


class _Borrowed:
    """A trace function, active while learner code runs: a frame of the checks' own file (the
    references, the lessons' helpers) entered with the learner's code below it on the stack is
    code the learner ran but did not write, however it was reached (a caller's frame,
    inspect.stack, gc). Only 'call' events: no line is traced."""

    def __init__(self, protected: str, codes: frozenset[int], stop):
        self.protected, self.codes, self.stop = protected, codes, stop
        self.found: set[str] = set()

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code.co_filename == self.protected:
            code = frame.f_code
            if id(code) not in _LENT and self._learner_below(frame):
                self.found.add(code.co_name)
        return None

    def _learner_below(self, frame) -> bool:
        """Whether learner code called it, a lent function of the checks' not in between."""
        f, depth = frame.f_back, 0
        while f is not None and f is not self.stop and depth < 200:
            if id(f.f_code) in _LENT:
                return False
            if id(f.f_code) in self.codes:
                return True
            f, depth = f.f_back, depth + 1
        return False


# Names through which code reaches objects it was not given: frames and stacks, other modules'
# and functions' globals, closures, the class tree, every object, attributes by a string. A
# file whose code names none of them cannot get hold of a function of the checks, and is run
# without the watch (a trace function slows every Python call made while it is set, ~5x).
_REACH = frozenset(
    [
        "_getframe",
        "currentframe",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "tb_frame",
        "tb_next",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "stack",
        "trace",
        "getouterframes",
        "getinnerframes",
        "inspect",
        "gc",
        "get_objects",
        "get_referrers",
        "get_referents",
        "sys",
        "modules",
        "traceback",
        "getattr",
        "__getattribute__",
        "attrgetter",
        "methodcaller",
        "operator",
        "eval",
        "exec",
        "compile",
        "__import__",
        "import_module",
        "importlib",
        "builtins",
        "__builtins__",
        "vars",
        "globals",
        "locals",
        "__dict__",
        "__globals__",
        "__closure__",
        "cell_contents",
        "__code__",
        "__subclasses__",
        "__bases__",
        "__base__",
        "__mro__",
        "mro",
        "__self__",
        "__func__",
        "__wrapped__",
        "settrace",
        "setprofile",
        "ctypes",
        "weakref",
    ]
)
_reaching: dict[str, bool] = {}


def _reaches(source: str, filename: str) -> bool:
    """Whether the learner's file names any of _REACH (every nested code object's names)."""
    hit = _reaching.get(source)
    if hit is None:
        try:
            stack = [compile(source, filename, "exec", dont_inherit=True)]
        except (SyntaxError, ValueError):
            stack = []
        hit = not stack
        while stack and not hit:
            code = stack.pop()
            hit = not _REACH.isdisjoint(code.co_names) or not _REACH.isdisjoint(code.co_varnames)
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        if len(_reaching) > 8:
            _reaching.clear()
        _reaching[source] = hit
    return hit
