"""Check messages as grade's files show them: complete (a syntax error with its line), in each
format's own markup, and without the app's "Likely mistake:" in a table headed so already."""

from __future__ import annotations

import re

from tutor.text.i18n import t
from tutor.text.record_text import without_label
from tutor.text.safe_text import html_text, visible


def mistake_text(example: dict, lang: str) -> str:
    """A likely mistake under the report's "Likely mistakes" heading: without its label."""
    return without_label(t(example["key"], lang, **example["params"]), lang)


def id_and_text(mistake_id: str, text: str, lang: str) -> str:
    """A mistake's id, then its text, joined as the language punctuates: `x`: … / `x`：…"""
    return f"`{mistake_id}`{t('grade.id_sep', lang)}{text}"


def html_message(text: str) -> str:
    """A message in HTML: escaped, its Markdown `code` spans as <code>, not as backticks."""
    return re.sub(r"`([^`\n]+)`", r"<code>\1</code>", html_text(text))


def caret_lines(record: dict) -> list[str]:
    """A file error's line with a caret under the spot (a syntax error), when it has one."""
    caret = (record.get("file_error") or {}).get("caret")
    return visible(caret).splitlines() if caret else []


def with_caret(message: str, record: dict) -> str:
    """A message for plain-text outputs (Gradescope, JUnit): the file error's line under it."""
    lines = caret_lines(record)
    return "\n".join([message, *("    " + line for line in lines)]) if lines else message
