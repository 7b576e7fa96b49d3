"""A kit name must not hide one of the kit's modules: `from tutor.kit.layer_checks import
call_again` in the kit's __init__ made `tutor.kit.call_again` a function, not the module of that
name (`import tutor.kit.call_again as m` then gave the function)."""

from __future__ import annotations

import ast
from pathlib import Path

KIT = Path(__file__).resolve().parents[2] / "tutor" / "kit"


def test_no_kit_name_hides_a_kit_module():
    tree = ast.parse((KIT / "__init__.py").read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module != "tutor.kit"
        for alias in node.names
    }
    modules = {path.stem for path in KIT.glob("*.py")} - {"__init__"}
    assert imported & modules == set()  # `from tutor.kit import fixed_dropout` is the module
