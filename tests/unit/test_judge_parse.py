"""The judge reads any file the child compiled (issue 23, class 1): the child compiles at
sandbox.RECURSION_LIMIT, and the judge's parse must not die where the compile did not."""

from __future__ import annotations

import sys

from tutor.engine.child import RECURSION_LIMIT
from tutor.kit.source_tools import PARSE_RECURSION_LIMIT, parse_source, qualified_name

TODO = "def f():\n    raise NotImplementedError\n"


def _deep(terms: int) -> str:
    return TODO + "x = " + " * ".join(["3"] * terms) + "\n"


def test_what_the_child_compiles_the_judge_parses():
    assert PARSE_RECURSION_LIMIT >= RECURSION_LIMIT
    source = _deep(5000)
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(RECURSION_LIMIT)
        compile(source, "f.py", "exec")  # as the child does
    finally:
        sys.setrecursionlimit(limit)
    assert parse_source(source) is not None
    assert sys.getrecursionlimit() == limit  # given back
    assert qualified_name(source, 2, "f") == "f"


def test_a_file_too_deep_even_so_is_none_not_a_crash():
    assert parse_source(_deep(40_000)) is None
    assert qualified_name(_deep(40_000), 2, "f") is None
