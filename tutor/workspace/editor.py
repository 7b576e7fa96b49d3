"""The command that opens the learner's file in their editor at a step's function. Pure."""

from __future__ import annotations

import ast
import os
import shlex
from pathlib import Path

# How editors take a line: `+LINE FILE` (vi and its kin, nano, emacs, micro, kakoune, joe,
# mcedit), `-g FILE:LINE` (VS Code and its forks), `FILE:LINE` (Sublime, Helix, Zed).
PLUS_LINE = {
    "vi",
    "vim",
    "nvim",
    "gvim",
    "view",
    "nano",
    "pico",
    "emacs",
    "emacsclient",
    "micro",
    "kak",
    "joe",
    "jed",
    "mcedit",
    "ne",
    "mg",
}
GOTO_FLAG = {"code", "code-insiders", "codium", "vscodium", "cursor", "windsurf"}
COLON_LINE = {"subl", "sublime_text", "hx", "helix", "zed"}


def function_line(source: str, names: tuple[str, ...]) -> int | None:
    """The line of the first top-level def or class of `names` in the source (None: none, or
    the file does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name in names
        ):
            return node.lineno
    return None


def editor_command(editor: str, path: Path, line: int | None) -> list[str]:
    """The argv for $VISUAL/$EDITOR (a command line, e.g. "code --wait") opening path at line."""
    argv = shlex.split(editor)
    name = os.path.basename(argv[0]) if argv else ""
    if line is None or not argv:
        return [*argv, str(path)]
    if name in PLUS_LINE:
        return [*argv, f"+{line}", str(path)]
    if name in GOTO_FLAG:
        return [*argv, "-g", f"{path}:{line}"]
    if name in COLON_LINE:
        return [*argv, f"{path}:{line}"]
    return [*argv, str(path)]  # an editor we do not know: the file, at its top
