"""The own-formula check: the library's attention kernels named in the learner's source, or
seen at run time (jctx.kernels: the child's watch, TorchScript's code, the autograd graph, and
the checks' own functions learner code ran)."""

from __future__ import annotations

import ast
import functools
import unicodedata

from tutor.kit.judge_tools import KERNEL_FRAGMENTS, Verdict
from tutor.kit.source_tools import _defines


def _bound_names(tree) -> set[str]:
    """Names the file gives things of its own: classes, functions, arguments, variables, attributes.
    CausalMultiHeadAttention (in super(CausalMultiHeadAttention, self)), a helper written by hand
    and called scaled_dot_product_attention, a variable multi_head_attention_out: all contain a
    kernel's name and are the learner's own code. A kernel reached through such a name is still
    caught when it runs (probe_kit's traps)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            names.add(node.attr)
    return names


def _kernel_words(node, own: set[str]) -> set[str]:
    """Library kernels the code names: attributes and names only. A string is never a call:
    a profiler label (record_function("scaled_dot_product_attention")) or a log line only
    mentions the kernel, and getattr(F, "scaled_dot_" + ...) is caught when it runs (the traps)."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute):
            word = sub.attr
        elif isinstance(sub, ast.Name):
            word = sub.id
        else:
            continue
        if word in own:
            continue
        for fragment, label in KERNEL_FRAGMENTS.items():
            if fragment in word.lower():
                found.add(label)
    return found


def _mentions_a_kernel(source: str) -> bool:
    """Whether the parse could find a kernel at all: every word it looks at is in the text, as
    Python reads identifiers (NFKC: a full-width letter is the ASCII one). The parse was a fifth
    of the judge's time in `grade`; most files name no kernel."""
    text = unicodedata.normalize("NFKC", source).lower()
    return any(fragment in text for fragment in KERNEL_FRAGMENTS)


@functools.lru_cache(maxsize=2)
def _parsed(source: str):
    """(tree, its bound names), or None: a file's steps are judged one after another, and
    parsing it again for each was a fifth of the judge's time in `grade`."""
    from tutor.kit.source_tools import parse_source

    tree = parse_source(source)
    if tree is None:
        return None
    try:
        return tree, _bound_names(tree)
    except RecursionError:
        return None


@functools.lru_cache(maxsize=8)
def kernels_in_source(source: str, defs: frozenset[str]) -> frozenset[str]:
    """Library attention kernels named in the definitions of the step's functions.

    Only those definitions: a notebook self-check pasted below them may well call the
    kernel as its reference. Helpers they call are covered by the run-time trap instead.
    """
    if not _mentions_a_kernel(source):
        return frozenset()
    parsed = _parsed(source)
    if parsed is None:
        return frozenset()
    tree, own = parsed
    found: set[str] = set()
    for node in tree.body:
        if _defines(node, defs):
            found |= _kernel_words(node, own)
    return frozenset(found)


def no_kernel(v: Verdict, fn: str, source: str, defs: set[str], runtime: list[str]) -> None:
    """The own-formula check: fails when the learner's definitions `defs` (top-level names) in
    `source` name a library attention kernel, or `runtime` (the kernels the child saw called:
    jctx.kernels, graph_kernels) holds one; the message (check.kernel) names `fn` and them."""
    used = sorted(kernels_in_source(source, frozenset(defs)) | set(runtime))
    v.expect("own-formula", not used, "check.kernel", fn=fn, kernel=" / ".join(used))
