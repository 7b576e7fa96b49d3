"""Attributes in the learner's source, for a diagnosis: state stored on an object between calls
(`self.cache = ...` in a step function), and a function that reads an attribute it should not
(`self.mask`, the full pass's, in a one-token step). Functions are found by name anywhere in
the file: methods and nested definitions too."""

from __future__ import annotations

import ast
import functools

from tutor.kit.source_tools import Found, parse_source


def _functions(tree, names) -> list:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names
    ]


@functools.lru_cache(maxsize=16)
def attribute_store(
    source: str, functions: frozenset[str], owners: frozenset[str] = frozenset({"self"})
) -> Found | None:
    """The first `owner.<name> = ...` (augmented and annotated too) in the functions named: a
    step that keeps its state on the object gives the next sequence, or the next branch, this
    one's past. owners: the names the object goes by there (self, a generate's layer). Its
    line and the line's text; None when there is none or the file does not parse."""
    tree = parse_source(source)
    if tree is None:
        return None
    lines = source.splitlines()
    for fn in _functions(tree, functions):
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            else:
                continue
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id in owners
                ):
                    return Found(node.lineno, lines[node.lineno - 1].strip())
    return None


@functools.lru_cache(maxsize=16)
def reads_attribute(source: str, function: str, attribute: str) -> bool:
    """Whether a function of that name uses `<anything>.<attribute>`: a step that reads what
    only the full pass should (its T × T mask, on a single query)."""
    tree = parse_source(source)
    return tree is not None and any(
        isinstance(node, ast.Attribute) and node.attr == attribute
        for fn in _functions(tree, {function})
        for node in ast.walk(fn)
    )
