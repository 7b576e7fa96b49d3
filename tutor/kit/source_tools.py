"""What the learner's source says, for a judge's diagnosis: the lab's numbers written in,
dimensions counted from the front, state kept between calls, a result thrown away.

It reads the source with ast and never runs it. Only the definitions of a step's functions
are read (and the module-level constants they use): a notebook cell pasted below them
may use any number it likes. Each finding is (line, code), to quote in a message.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass

# Calls whose plain int arguments are dimensions (or a diagonal), not sizes.
DIM_CALLS = frozenset(
    {
        "transpose",
        "swapaxes",
        "swapdims",
        "permute",
        "movedim",
        "moveaxis",
        "size",
        "softmax",
        "log_softmax",
        "unsqueeze",
        "squeeze",
        "flatten",
        "unflatten",
        "sum",
        "mean",
        "amax",
        "amin",
        "max",
        "min",
        "logsumexp",
        "cat",
        "stack",
        "select",
        "narrow",
        "diagonal",
        "tril",
        "triu",
        "argmax",
        "argmin",
        "cumsum",
        "prod",
        "norm",
        "std",
        "var",
        "all",
        "any",
        "flip",
        "roll",
        "gather",
        "index_select",
        "chunk",
        "split",
        "dim",
    }
)
BUILTINS = frozenset({"max", "min", "sum", "all", "any"})
DIM_KEYWORDS = frozenset(
    {"dim", "dim0", "dim1", "dims", "axis", "diagonal", "start_dim", "end_dim", "offset"}
)
# Methods that change a container or a tensor where it is: state when the owner outlives the call.
MUTATORS = frozenset(
    {
        "update",
        "setdefault",
        "append",
        "extend",
        "insert",
        "add",
        "pop",
        "popitem",
        "clear",
        "copy_",
        "fill_",
        "zero_",
        "resize_",
        "set_",
        "masked_fill_",
        "__setitem__",
    }
)


@dataclass(frozen=True)
class Found:
    line: int
    code: str


# The child compiles the learner's file at sandbox.RECURSION_LIMIT; the judge must parse any
# file the child accepted (a 3,000-term expression needs more than Python's default 1,000).
PARSE_RECURSION_LIMIT = 4000


def parse_source(source: str):
    """The file's tree, or None for a file the judge cannot read as Python (a source that is
    too deep even so is judged by its outputs alone, never a crash of the judge)."""
    import sys

    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(limit, PARSE_RECURSION_LIMIT))
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    finally:
        sys.setrecursionlimit(limit)


@functools.lru_cache(maxsize=8)
def _parse(source: str):
    return parse_source(source)


def qualified_name(source: str, line: int, function: str) -> str | None:
    """The dotted name (`Class.method`) of the def called function whose body holds line, as
    Python's co_qualname would give it (the traceback's frames carry the bare name only)."""
    tree = _parse(source)
    path: list[str] = []

    def within(nodes, prefix):
        for node in nodes:
            if isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ) and node.lineno <= line <= (node.end_lineno or node.lineno):
                path[:] = [*prefix, node.name]
                within(node.body, path[:])
                return

    within(tree.body if tree is not None else [], [])
    while (
        path and path[-1] != function
    ):  # a def the frame's function is in (a lambda, say): up to it
        path.pop()
    return ".".join(path) or None


def _defines(node, names: frozenset[str]) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name in names
    targets = (
        node.targets
        if isinstance(node, ast.Assign)
        else [node.target]
        if isinstance(node, ast.AnnAssign)
        else []
    )
    return any(isinstance(t, ast.Name) and t.id in names for t in targets)


def _definitions(tree, names: frozenset[str]) -> list:
    """The top-level nodes that define names; a class a definition instantiates comes along
    (`causal_mask = CausalMask()`), since that is where its code is."""
    nodes = [n for n in tree.body if _defines(n, names)]
    called = {
        c.func.id
        for n in nodes
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        for c in ast.walk(n)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
    }
    nodes += [
        n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in called and n not in nodes
    ]
    return nodes


def _code(source: str, node) -> str:
    text = ast.get_source_segment(source, node) or ""
    text = " ".join(text.split())
    return (
        text if len(text) <= 40 else text[:37] + "..."
    )  # a quote, not the whole line: messages stay short


def _parents(root) -> dict:
    parents = {}
    for node in ast.walk(root):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    return parents


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_shape(node) -> bool:
    """x.shape, x.size(): their subscripts are dimensions."""
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return True
    return isinstance(node, ast.Call) and _call_name(node) == "size" and not node.args


def _number(node):
    """An int or float constant (bool excluded), or None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _is_dimension(node, parents) -> bool:
    """A constant that counts dimensions or diagonals, or is an exponent or a halving."""
    parent = parents.get(node)
    if isinstance(
        parent, ast.UnaryOp
    ):  # -1, -2: counted from the end, or a fill value; no size is negative
        return True
    if isinstance(parent, (ast.Tuple, ast.List)):  # permute((0, 1, 3, 2)), sum(dim=(1, 2))
        node, parent = parent, parents.get(parent)
    if isinstance(parent, ast.keyword):
        return parent.arg in DIM_KEYWORDS
    if isinstance(parent, ast.Call) and node in parent.args:
        # A method or torch function; the builtins min(T, 32), max(...) take sizes.
        return _call_name(parent) in DIM_CALLS and not (
            isinstance(parent.func, ast.Name) and parent.func.id in BUILTINS
        )
    if isinstance(parent, ast.Subscript) and _is_shape(parent.value):
        return True
    if isinstance(parent, ast.Slice):
        sub = parents.get(parent)
        return isinstance(sub, ast.Subscript) and _is_shape(sub.value)
    if isinstance(parent, ast.BinOp) and parent.right is node:
        return (
            isinstance(parent.op, ast.Pow)
            or isinstance(parent.op, (ast.FloorDiv, ast.Mod))
            and _number(node) == 2
        )
    return False


def _prose(root) -> set:
    """Nodes inside print(...) calls and f-strings: messages, not computation."""
    skip = set()
    for node in ast.walk(root):
        if (isinstance(node, ast.Call) and _call_name(node) == "print") or isinstance(
            node, ast.JoinedStr
        ):
            skip.update(ast.walk(node))
    return skip


def _label(value, wanted: tuple, node, parents):
    """The size a number stands for. A divisor or factor (`/ 2`, `* 0.354`) is more likely a
    scale (√4 = 2, 1/√8 = 0.354) than a size; anywhere else, a size."""
    labels = [
        label
        for target, label in wanted
        if value == target
        or (isinstance(value, float) and math.isclose(value, target, rel_tol=1e-3))
    ]
    if not labels:
        return None
    parent = parents.get(node)
    scale = (
        isinstance(parent, ast.BinOp)
        and parent.right is node
        and isinstance(parent.op, (ast.Div, ast.Mult))
    )
    preferred = [label for label in labels if ("√" in label) == scale]
    return (preferred or labels)[0]


@functools.lru_cache(maxsize=64)
def size_literals(source: str, defs: frozenset[str], wanted: tuple) -> tuple:
    """Numbers written in the step's definitions that equal one of the lab's sizes.

    wanted: ((value, label), ...), e.g. ((8, "d_k"), (math.sqrt(8), "√d_k")). Dimensions,
    diagonals, exponents and halvings are not sizes (`transpose(2, 3)`, `diagonal=1`,
    `** 0.5`). A module-level `NAME = 8` that a definition uses counts, at its own line.
    Returns ((label, value, Found), ...) in source order.
    """
    tree = _parse(source)
    if tree is None:
        return ()
    hits = []
    used: set[str] = set()
    for root in _definitions(tree, defs):
        parents, prose = _parents(root), _prose(root)
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                used.add(node.id)
            value = _number(node)
            if value is None or node in prose or _is_dimension(node, parents):
                continue
            label = _label(value, wanted, node, parents)
            if label is not None:
                hits.append(
                    (label, value, Found(node.lineno, _code(source, _context(node, parents))))
                )
    for node in tree.body:  # constants at module level, used by the definitions
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            value = _number(node.value)
            if node.targets[0].id in used and value is not None:
                label = _label(value, wanted, node.value, {})
                if label is not None:
                    hits.append((label, value, Found(node.lineno, _code(source, node))))
    return tuple(sorted(hits, key=lambda h: h[2].line))


def _context(node, parents):
    """The expression to quote: the call or operation the number sits in."""
    parent = parents.get(node)
    for _ in range(3):
        if isinstance(parent, (ast.Call, ast.BinOp, ast.Subscript)):
            return parent
        if isinstance(parent, (ast.keyword, ast.Tuple, ast.List, ast.Slice, ast.UnaryOp)):
            parent = parents.get(parent)
            continue
        break
    return node


def _non_negative(node) -> bool:
    value = _number(node)
    return isinstance(value, int) and value >= 1


@functools.lru_cache(maxsize=16)
def front_dims(source: str, defs: frozenset[str]) -> Found | None:
    """The first dimension counted from the front (`transpose(2, 3)`, `shape[2]`, `size(3)`,
    `dim=3`, `permute(0, 1, 3, 2)`, `B, H, T, d = q.shape`): right for one rank only."""
    tree = _parse(source)
    if tree is None:
        return None
    found = []
    for root in _definitions(tree, defs):
        for node in ast.walk(root):
            hit = None
            if isinstance(node, ast.Call):
                name = _call_name(node)
                if (
                    name in ("transpose", "swapaxes", "swapdims", "movedim")
                    and any(map(_non_negative, node.args))
                    or name == "permute"
                    or name == "size"
                    and node.args
                    and _non_negative(node.args[0])
                ):
                    hit = node
                elif any(
                    k.arg in ("dim", "dim0", "dim1") and _non_negative(k.value)
                    for k in node.keywords
                ):
                    hit = next(
                        k
                        for k in node.keywords
                        if k.arg in ("dim", "dim0", "dim1") and _non_negative(k.value)
                    )
                elif (
                    name in ("softmax", "log_softmax")
                    and len(node.args) >= 2
                    and _non_negative(node.args[1])
                ):
                    hit = node
            elif (
                isinstance(node, ast.Subscript)
                and _is_shape(node.value)
                and _non_negative(node.slice)
            ) or (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Tuple)
                and _is_shape(node.value)
                and len(node.targets[0].elts) >= 4
            ):
                hit = node
            if hit is not None:
                line = hit.value.lineno if isinstance(hit, ast.keyword) else hit.lineno
                found.append(Found(line, _code(source, hit)))
    return min(found, key=lambda f: f.line) if found else None


def _locals(fn) -> set[str]:
    """Names that are the call's own. A parameter with a default is not: the default object
    is made once and shared by every call (`def f(q, _cache={})`, `_cache=_module_dict`)."""
    args = fn.args
    positional = args.posonlyargs + args.args
    shared = (
        {a.arg for a in positional[len(positional) - len(args.defaults) :]}
        if args.defaults
        else set()
    )
    shared |= {
        a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=False) if d is not None
    }
    names = {a.arg for a in ast.walk(args) if isinstance(a, ast.arg)} - shared
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.difference_update(node.names)
    return names


@functools.lru_cache(maxsize=16)
def kept_state(source: str, defs: frozenset[str]) -> Found | None:
    """Where a step's function keeps something between calls: a `global` it assigns, or a
    container or tensor outside the call (a default argument's too) that it fills
    (`_cache[key] = ...`, `.update`, `copy_`)."""
    tree = _parse(source)
    if tree is None:
        return None
    found = []
    for root in _definitions(tree, defs):
        for fn in ast.walk(root):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            own = _locals(fn)
            for node in ast.walk(fn):
                if isinstance(node, (ast.Global, ast.Nonlocal)):
                    found.append(Found(node.lineno, _code(source, node)))
                elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(
                    node.ctx, ast.Store
                ):
                    base = node.value
                    if isinstance(base, ast.Name) and base.id not in own:
                        found.append(Found(node.lineno, _code(source, node)))
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in MUTATORS
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id not in own
                ):
                    found.append(Found(node.lineno, _code(source, node)))
    return min(found, key=lambda f: f.line) if found else None


@functools.lru_cache(maxsize=16)
def discarded_call(source: str, defs: frozenset[str], method: str) -> Found | None:
    """A statement that is only a call of `method` (`scores.masked_fill(mask, ...)` or
    `torch.masked_fill(scores, ...)` on a line of its own): its result is thrown away."""
    tree = _parse(source)
    if tree is None:
        return None
    for root in _definitions(tree, defs):
        for node in ast.walk(root):
            if (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Call)
                and _call_name(node.value) == method
            ):
                return Found(node.lineno, _code(source, node.value))
    return None


@functools.lru_cache(maxsize=16)
def squeezes(source: str, defs: frozenset[str]) -> Found | None:
    """A `squeeze()` with no dimension: it drops every size-1 dimension, a batch or head of 1 too."""
    tree = _parse(source)
    if tree is None:
        return None
    for root in _definitions(tree, defs):
        for node in ast.walk(root):
            if (
                isinstance(node, ast.Call)
                and _call_name(node) == "squeeze"
                and not node.args
                and not node.keywords
            ):
                return Found(node.lineno, _code(source, node))
    return None


@functools.lru_cache(maxsize=16)
def last_dim_of(source: str, defs: frozenset[str], arg_index: int) -> Found | None:
    """Where a method reads the width of its argument number arg_index (self is 0):
    `x.shape[-1]`, `x.shape[2]`, `x.size(-1)`, or the last name of `B, T, C = x.shape`
    where it is used."""
    tree = _parse(source)
    if tree is None:
        return None
    found = []
    for root in _definitions(tree, defs):
        for fn in ast.walk(root):
            if (
                not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                or len(fn.args.args) <= arg_index
            ):
                continue
            x = fn.args.args[arg_index].arg
            widths = set()
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "shape"
                    and _names(node.value.value, x)
                ):
                    index = node.slice
                    if _number(index) == 2 or (
                        isinstance(index, ast.UnaryOp) and _number(index.operand) == 1
                    ):
                        found.append(Found(node.lineno, _code(source, node)))
                elif (
                    isinstance(node, ast.Call)
                    and _call_name(node) == "size"
                    and node.args
                    and isinstance(node.func, ast.Attribute)
                    and _names(node.func.value, x)
                ):
                    index = node.args[0]
                    if _number(index) == 2 or (
                        isinstance(index, ast.UnaryOp) and _number(index.operand) == 1
                    ):
                        found.append(Found(node.lineno, _code(source, node)))
                elif (
                    isinstance(node, ast.Assign)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Tuple)
                    and _is_shape(node.value)
                    and _names(
                        node.value.value
                        if isinstance(node.value, ast.Attribute)
                        else node.value.func.value,
                        x,
                    )
                    and len(node.targets[0].elts) == 3
                    and isinstance(node.targets[0].elts[2], ast.Name)
                ):
                    widths.add(node.targets[0].elts[2].id)
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Name)
                    and isinstance(node.ctx, ast.Load)
                    and node.id in widths
                ):
                    found.append(Found(node.lineno, _code(source, _statement_expr(node, fn))))
    return min(found, key=lambda f: f.line) if found else None


def _names(node, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _statement_expr(node, root):
    """The smallest call or operation around a name, to quote."""
    parents = _parents(root)
    return _context(node, parents)
