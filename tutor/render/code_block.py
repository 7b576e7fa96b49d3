"""Highlighted code that wraps without losing its shape: a line too long for the box goes on
under its own indentation (four cells deeper), never from the left edge, where it would read as
a statement of an outer block. For the solution screen, whose code must be read in full."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.cells import cell_len, get_character_cell_size
from rich.measure import Measurement
from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

HANG = 4  # cells deeper than the line's own indentation, as a continued Python line
THEME = "ansi_dark"


def _indent(line: str, lang: str) -> int:
    """Cells of the code's own indentation; a diff's +/-/space marker counts as one."""
    lead = 1 if lang == "diff" and line[:1] in "+- " and not line.startswith(("+++", "---")) else 0
    body = line[lead:]
    return lead + len(body) - len(body.lstrip(" "))


def _fit(plain: str, cells: int, floor: int) -> int:
    """How many characters of `plain` go on a row of `cells`: up to the last space that fits
    (and lies past `floor`, the indentation), else as many characters as fit."""
    used, n = 0, 0
    for ch in plain:
        size = get_character_cell_size(ch)
        if used + size > cells:
            break
        used += size
        n += 1
    space = plain.rfind(" ", floor + 1, n + 1)
    cut = space + 1 if space > floor and space + 1 < len(plain) else n
    return max(cut, 1)  # a row holds at least one character, however narrow the box


def wrapped_rows(line: Text, width: int, lang: str) -> Iterator[Text]:
    """`line` in rows of at most `width` cells, each continuation under the indentation + HANG."""
    plain = line.plain
    if cell_len(plain) <= width:
        yield line
        return
    hang = min(_indent(plain, lang) + HANG, max(width // 2, 1))
    room, floor, pad = width, _indent(plain, lang), ""
    while cell_len(line.plain) > room:
        cut = _fit(line.plain, room, floor)
        row = line[:cut]
        row.rstrip()  # the space the row breaks at
        yield Text(pad) + row
        line = line[cut:]
        line = line[len(line.plain) - len(line.plain.lstrip(" ")) :]
        room, floor, pad = width - hang, 0, " " * hang
    if line.plain:
        yield Text(pad) + line


class CodeBlock:
    """`code` highlighted as `lang` ("python" or "diff"), wrapped by wrapped_rows."""

    def __init__(self, code: str, lang: str):
        self.code, self.lang = code, lang

    def _highlighted(self) -> Text:
        from rich.syntax import Syntax  # pygments: loaded when a solution is first shown

        return Syntax(self.code, self.lang, theme=THEME).highlight(self.code)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width, 1)
        text = self._highlighted()
        text.rstrip()
        for line in text.split("\n", allow_blank=True):
            yield from wrapped_rows(line, width, self.lang)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((cell_len(s) for s in self.code.splitlines()), default=1)
        return Measurement(min(widest, HANG + 1), min(widest, options.max_width))
