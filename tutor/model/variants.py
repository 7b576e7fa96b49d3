"""Learner files built from a reference solution: one top-level def/class, or one method,
replaced by other code. Pure (ast and text only): the worker tests and `attn-tutor dev check`
(which runs in the UI's process, never importing torch) build their wrong variants with it.
"""

from __future__ import annotations

import ast
import textwrap

from tutor.model.results import Message


def replace_def(source: str, name: str, new_code: str) -> str:
    """The source with the top-level def/class `name` replaced by new_code (dedented)."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
            lines = source.splitlines(keepends=True)
            new = textwrap.dedent(new_code).strip("\n") + "\n"
            return "".join(lines[:start]) + new + "".join(lines[node.end_lineno :])
    raise KeyError(name)


def replace_method(source: str, cls: str, method: str, new_code: str) -> str:
    """The source with method `method` of top-level class `cls` replaced (new_code at class indent + 4)."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    lines = source.splitlines(keepends=True)
                    new = (
                        textwrap.indent(
                            textwrap.dedent(new_code).strip("\n"), " " * item.col_offset
                        )
                        + "\n"
                    )
                    return (
                        "".join(lines[: item.lineno - 1]) + new + "".join(lines[item.end_lineno :])
                    )
    raise KeyError(f"{cls}.{method}")


def apply_replacements(source: str, replacements: dict[str, str], extra_header: str = "") -> str:
    """The source with some top-level defs replaced. Keys are top-level names, or
    "Class.method" for one method. extra_header goes first (an import a variant needs).
    KeyError for a name the source does not define."""
    for name, code in replacements.items():
        if "." in name:
            cls, method = name.split(".", 1)
            source = replace_method(source, cls, method, code)
        else:
            source = replace_def(source, name, code)
    if extra_header:
        source = extra_header.strip("\n") + "\n" + source
    return source


def message_keys(message: Message | None) -> set[str]:
    """Every catalog key in a message (a results.Message), nested references (likely, reason …)
    included, each as the lesson's checks write it (without the lesson's id in front)."""
    from tutor.text.i18n import local_key

    keys: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if set(value) == {"key", "params"} and isinstance(
                value["key"], str
            ):  # a nested message
                keys.add(local_key(value["key"]))
                walk(value["params"])
                return
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    if message is not None:
        keys.add(local_key(message.key))
        walk(message.params)
    return keys
