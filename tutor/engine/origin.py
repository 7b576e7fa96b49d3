"""Whether a step's function or class is the learner's own code: made by their file's code.

The test is identity, not a file name: a function is the learner's when its code object is
one of those compiled from their file (the module's code and every code object nested in its
constants). A file name can be forged (exec(compile(stolen, __file__, "exec"))), a code object
compiled from the file cannot. Wrappers are looked through: functools.wraps (`__wrapped__`:
lru_cache, torch.no_grad(), torch.compile), torch.jit.script / trace (`_torchdynamo_inline`, the
Python function it compiled), functools.partial, bound methods, staticmethod and classmethod.

A class is the learner's when nothing in its MRO comes from elsewhere than the learner's file,
torch or Python's standard library (nn.Module's methods are torch's; a base class taken from
the reference is not). A callable object is judged by its class.

Runs in the child on the learner's values: it reads them through the types' own descriptors
(no learner __getattr__ or property runs), and anything it cannot read is not the learner's.
"""

from __future__ import annotations

import functools
import os
import sysconfig
import types

import torch

_MAX_DEPTH = 8
_function_code = types.FunctionType.__dict__["__code__"].__get__
_function_dict = types.FunctionType.__dict__["__dict__"].__get__
_function_module = types.FunctionType.__dict__["__module__"].__get__
_method_func = types.MethodType.__dict__["__func__"].__get__
_type_mro = type.__dict__["__mro__"].__get__
_type_dict = type.__dict__["__dict__"].__get__
_type_module = type.__dict__["__module__"].__get__
_type_name = type.__dict__["__qualname__"].__get__
_ScriptFunction = getattr(torch._C, "ScriptFunction", None)
_lru_wrapper = type(functools.lru_cache()(lambda: None))

# The tutor's own wrappers around library code (probe_tools' kernel traps), by id, with what
# each wraps: judged as that, so that an aliased nn.MultiheadAttention is named as torch's and
# not as the tutor's trap. Only the tutor registers here, and only what it wrapped: looking
# through such a wrapper finds what stood there before it, never anything else.
_transparent: dict[int, tuple[object, object]] = {}


def look_through(wrapper: object, wrapped: object) -> None:
    _transparent[id(wrapper)] = (wrapper, wrapped)  # held: the id stays this wrapper's


# Library code a learner's class may inherit from: torch and the standard library.
_LIBRARY = tuple(
    p.rstrip(os.sep) + os.sep
    for p in {
        os.path.dirname(os.path.realpath(torch.__file__)),
        *(os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")),
    }
)


def code_ids(code: types.CodeType) -> frozenset[int]:
    """ids of the code object and of every code object nested in it (keep `code` alive while
    they are used: the ids are only valid that long)."""
    found, stack = set(), [code]
    while stack:
        c = stack.pop()
        if id(c) in found:
            continue
        found.add(id(c))
        stack.extend(k for k in c.co_consts if type(k) is types.CodeType)
    return frozenset(found)


def _where(code: types.CodeType, module) -> str:
    filename = code.co_filename
    if (
        isinstance(module, str)
        and module
        and module not in ("learner", "builtins")
        and module not in filename
    ):
        return f"{module} ({filename})"
    return filename


def _library(filename: str) -> bool:
    return filename.startswith(_LIBRARY) or filename.startswith("<frozen ")


def _inner(value):
    """What a wrapper wraps, or None."""
    kind = type(value)
    if kind is types.FunctionType or kind is _lru_wrapper:
        attrs = (
            _function_dict(value)
            if kind is types.FunctionType
            else object.__getattribute__(value, "__dict__")
        )
        return attrs.get("__wrapped__")
    if kind is types.MethodType:
        return _method_func(value)
    if kind is functools.partial:
        return value.func
    if kind in (staticmethod, classmethod):
        return value.__func__
    if kind is property:
        return value.fget
    if _ScriptFunction is not None and kind is _ScriptFunction:
        try:
            return value._torchdynamo_inline
        except AttributeError:
            return None
    return None


def _resolve(value, codes: frozenset[int]) -> tuple[bool, str, bool]:
    """(the learner's?, where it comes from otherwise, from a library?). The outer layer is
    what runs: it is looked through only when it is a library's wrapper (torch's, the standard
    library's, a C one) to the function inside. A foreign function whose __wrapped__ was set to
    one of the learner's is still foreign."""
    where = ""
    for _ in range(_MAX_DEPTH):
        held = _transparent.get(id(value))
        if held is not None and held[0] is value:
            value = held[1]
            continue
        if type(value) is types.FunctionType:
            code = _function_code(value)
            if id(code) in codes:
                return True, "", False
            here = _where(code, _function_module(value))
            if not _library(code.co_filename):
                return False, here, False  # the foreign code itself, not the wrapper around it
            where = where or here
        value = _inner(value)
        if value is None:
            break
    return False, where or "?", bool(where)  # every function layer was a library's


def _functions_of(attr) -> list:
    kind = type(attr)
    if kind is property:
        return [f for f in (attr.fget, attr.fset, attr.fdel) if f is not None]
    if kind in (types.FunctionType, staticmethod, classmethod, functools.partial, _lru_wrapper) or (
        _ScriptFunction is not None and kind is _ScriptFunction
    ):
        return [attr]
    return []


# Base classes whose functions are all a library's, with their dict's values then: a patched
# nn.Module no longer matches and is judged again.
_library_classes: dict = {}


def _class_origin(cls: type, codes: frozenset[int]) -> str | None:
    """Where the first function of the class's MRO that is neither the learner's nor a library's
    comes from; or the class itself, when it is a library's (its own functions are, and none in
    its MRO is the learner's); else None. A class of the learner's with no function yet is
    left to the probe."""
    learners, library_own = False, False
    for base in _type_mro(cls):
        if base is object:
            continue
        attrs = list(_type_dict(base).values())
        known = _library_classes.get(base)
        if (
            known is not None
            and len(known) == len(attrs)
            and all(a is b for a, b in zip(known, attrs, strict=False))
        ):
            library_own = library_own or base is cls
            continue  # nn.Module's ~100 functions: judged once, while its dict stays as it was
        functions = mine_here = 0
        for attr in attrs:
            for fn in _functions_of(attr):
                functions += 1
                mine, where, library = _resolve(fn, codes)
                if mine:
                    mine_here += 1
                elif not library:
                    return where
                elif base is cls:
                    library_own = True
        learners = learners or mine_here > 0
        if functions and not mine_here and base is not cls:
            _library_classes[base] = attrs  # held: no value's id can pass to another object
    if learners or not library_own:
        return None
    try:
        return f"{str.__str__(_type_module(cls))}.{str.__str__(_type_name(cls))}"
    except Exception:
        return "?"


def foreign_origin(value, codes: frozenset[int]) -> str | None:
    """None when value is the learner's own function or class; else where it comes from."""
    try:
        if issubclass(type(value), type):
            return _class_origin(value, codes)
        mine, where, _ = _resolve(value, codes)
        if mine:
            return None
        if type(value) is types.BuiltinFunctionType:
            name, module = value.__name__, value.__module__
            return f"{module}.{name}" if isinstance(module, str) and isinstance(name, str) else "?"
        if where == "?" and _inner(value) is None and type(value) is not types.FunctionType:
            # A callable object, not a function: the learner's if its class is.
            cls = type(value)
            return _class_origin(cls, codes)
        return where
    except Exception:  # something of the learner's that cannot be read: not shown to be theirs
        return "?"
