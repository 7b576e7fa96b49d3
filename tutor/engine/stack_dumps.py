"""Read by the worker from a child's result pipe: the frames of faulthandler's dump (where the
code was when its time ran out or it crashed), and whether it was compiling with torch.compile
(which the child notes on the pipe as it starts)."""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import re

_write = os.write  # as it was before the learner's code ran (see child.py)


# The dump comes from the child, so anything may be in it: a line number is read only when it
# has at most 9 digits (int() of a long digit string raises), and a line is read at most so far.
_DUMP_FRAME = re.compile(r'^\s+File "(.*)", line (\d{1,9}) in (.+)$')
_DUMP_LINE = 4096  # chars of a dump line looked at: faulthandler's own are far shorter


def dumped_frames(text: str, filename: str, source: str) -> tuple[list[dict], bool]:
    """The learner's frames, innermost last, from the faulthandler report a child left before
    its frame (crash or timeout); and whether that stack was a runaway recursion."""
    blocks: list[list[str]] = []
    block: list[str] | None = None
    if not isinstance(text, str):
        return [], False
    for line in text.splitlines():
        line = line[:_DUMP_LINE]
        if line.startswith(("Thread 0x", "Current thread 0x", "Stack (")):
            block = []
            blocks.append(block)
        elif block is not None and line.startswith(" "):
            block.append(line)
    # The main thread is the one running the harness (child.serve_one).
    main = next(
        (b for b in blocks if any("sandbox.py" in line for line in b)), blocks[0] if blocks else []
    )
    lines = source.splitlines()
    frames = []
    for line in reversed(main):  # faulthandler lists the innermost call first
        m = _DUMP_FRAME.match(line)
        if m and m.group(1) == filename:
            n = int(m.group(2))
            code = lines[n - 1].rstrip()[:_DUMP_LINE] if 0 < n <= len(lines) else ""
            frames.append({"line": n, "function": m.group(3)[:200], "code": code})
    runaway = len(frames) >= 50 and any(line.strip() == "..." for line in main)
    return frames[-8:], runaway


# Where torch.compile spends its first call: tracing (dynamo, which stays in the stack under
# everything it calls) and compiling (inductor). Not _functorch: torch.func.vmap lives there too.
_COMPILER_FRAMES = ("/torch/_dynamo/", "/torch/_inductor/")
# Written on the result pipe, before the step's frame, when the step imports torch's compiler
# (the worker never does): the dump may not show it, cut at 100 frames deep in its imports.
COMPILE_MARK = "attn-tutor: torch.compile is compiling"


def compile_watch(result_fd: int):
    said: list[str] = []

    def on_import(name) -> None:
        if not said and name in ("torch._dynamo", "torch._inductor"):
            said.append(name)
            with contextlib.suppress(OSError):
                _write(result_fd, f"\n{COMPILE_MARK}\n".encode())

    return on_import


def compiling(dump: str, source: str) -> str | None:
    """Was the code that ran out of time compiling with torch.compile? "stack" when it imported
    torch's compiler in this step (COMPILE_MARK) or its frames are in the stack faulthandler
    dumped, "source" when the file calls torch.compile, else None."""
    if COMPILE_MARK in dump:
        return "stack"
    for line in dump.splitlines():
        if line.lstrip().startswith('File "') and any(
            fragment in line for fragment in _COMPILER_FRAMES
        ):
            return "stack"
    return "source" if _uses_torch_compile(source) else None


@functools.lru_cache(maxsize=8)
def _uses_torch_compile(source: str) -> bool:

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "compile"
            and isinstance(node.value, ast.Name)
            and node.value.id == "torch"
        ):
            return True  # torch.compile(...), @torch.compile
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "torch"
            and any(a.name == "compile" for a in node.names)
        ):
            return True
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "optimize"
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "_dynamo"
        ):
            return True  # torch._dynamo.optimize(...)
    return False
