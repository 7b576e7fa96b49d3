"""Text from learner code, shown as text. Pure: standard library only.

Every string a learner's file can shape (an exception message, printed output, a traceback's
line of code, a folder or file name, a student id) is data. Before it reaches a terminal, a
report or a spreadsheet it goes through one of these, chosen by where it goes:

- visible(text)      a terminal (check's text, the app, grade's table): control characters shown
- one_line(text)     a terminal cell or a name: newlines and tabs shown too
- markdown(text)     report.md: the above, then Markdown and inline HTML escaped
- html_text(text)    report.html
- xml_text(text)     junit.xml: characters XML 1.0 forbids replaced
- csv_cell(text)     grades.csv: a cell that would start a formula neutralised
- file_name(student) a file name of its own per student id
- json_text(obj)     JSON with only printable characters raw

Control characters are shown as Python writes them in a string (`\\x1b`, `\\x9b`, `\\u202e`):
the learners write Python, so that is the form they recognise; it is plain ASCII, shows C1 and
the bidi controls as well as C0 (the U+2400 pictures cover C0 and DEL only), and survives copy
and paste. The one ambiguity, a learner's own literal `\\x1b`, prints the same and is harmless.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Any

# C0 but tab and newline, DEL, C1; the bidi embeddings, overrides and isolates (U+202A–U+202E,
# U+2066–U+2069) that reorder what a reader sees; lone surrogates (a name's undecodable bytes).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_CONTROL_ALL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _shown(m: re.Match[str]) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:  # surrogateescape: the byte the file system gave
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}"


def visible(text: object) -> str:
    """Control characters as escapes; newlines and tabs kept (multi-line messages, output)."""
    return _CONTROL.sub(_shown, str(text))


def one_line(text: object) -> str:
    """As visible, newlines and tabs shown too: for a name, a cell, a single line."""
    return _CONTROL_ALL.sub(_shown, str(text))


def visible_params(value: Any) -> Any:
    """A message's parameters with every string in them visible (nested messages too)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {k: visible_params(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(visible_params(v) for v in value)
    return value


# ------------------------------------------------------------------ files

# Those that can open emphasis, code, a link, a table cell, strike-through or a heading.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~!#])")


def markdown(text: object) -> str:
    """Literal text in Markdown: no emphasis, link, code, table cell break or raw HTML."""
    text = one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def html_text(text: object) -> str:
    import html

    return html.escape(visible(text), quote=True)


# XML 1.0's Char production; anything else makes the document unparseable.
_XML_BAD = re.compile(
    "[^\t\n\r\x20-\x7e\xa0-\u2029\u202f-\u2065\u206a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


def xml_text(text: object) -> str:
    """Text ElementTree can write and any XML 1.0 parser reads (it escapes <, & and quotes)."""
    return _XML_BAD.sub(_shown, str(text))


FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_cell(text: object) -> str:
    """A text cell a spreadsheet shows as written: a leading ' stops =, +, -, @, tab or CR
    starting a formula (also after leading spaces, which some spreadsheets drop)."""
    text = str(text)
    if text.lstrip(" ").startswith(FORMULA_START):
        text = "'" + text
    return one_line(text)


# Kept as they are in a file name: letters and digits of any script (Chinese ids stay readable),
# and - _ @ +. Everything else, "%" itself included, is percent-encoded from its UTF-8 bytes, so
# two ids never give one name. An id a case-insensitive or normalising file system (macOS) could
# fold into another's gets a short hash of the exact id after a "~" (which is always encoded).
_KEEP = re.compile(r"[^\W]|[-@+]")
NAME_BYTES = 200  # room for ~hash, .json and a writer's .tmp


def file_name(student: str) -> str:
    out = []
    for i, ch in enumerate(student):
        if _KEEP.fullmatch(ch) or (ch == "." and i > 0):
            out.append(ch)
        else:
            raw = ch.encode("utf-8", "surrogateescape")
            out.append("".join(f"%{b:02X}" for b in raw))
    folds = student != student.casefold() or student != unicodedata.normalize("NFC", student)
    if folds or len("".join(out).encode("utf-8")) > NAME_BYTES:
        while len("".join(out).encode("utf-8")) > NAME_BYTES:  # file systems allow 255 bytes
            out.pop()  # a whole character or %-group: no half escape is left
        digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        out.append(f"~{digest}")
    name = "".join(out) or "%"
    return name


# ------------------------------------------------------------------ JSON

_JSON_RAW = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def json_text(obj: object, **kw: Any) -> str:
    """json.dumps with non-ASCII kept (Chinese readable) but DEL, C1 and the bidi controls as
    \\uXXXX: json escapes only C0, and those others would reach a terminal that cats the file."""
    text = json.dumps(obj, ensure_ascii=False, **kw)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
