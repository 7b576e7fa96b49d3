"""Step text (a small Markdown subset) rendered for the terminal.

Why not rich.markdown: it wraps only at spaces, so Chinese paragraphs overflow.
Here paragraphs, list items and headings are wrapped with `wrap.py` at the
width the console offers at render time. Supported: `#`..`######` headings,
paragraphs, `-`/`*`/`1.` lists (hanging indent, nesting by indentation),
fenced code blocks, `---` rules, inline `code`, **bold** and *italic*.
Anything else passes through as plain text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.rule import Rule
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from tutor.render.wrap import _is_cjk, wrap_text

HEADING_STYLES = {1: Style(bold=True, color="bright_cyan"), 2: Style(bold=True, color="cyan")}
HEADING_OTHER = Style(bold=True)
CODE_STYLE = Style(color="#e6db74", bgcolor="#2b2b2b")
CODE_THEME = "monokai"  # dark background of its own, readable on dark or light UIs
CROP_MARK = Style(color="grey62", bgcolor="#272822")  # monokai's background

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,3}[.)])\s+(.*)$")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_INLINE = re.compile(
    r"(?P<code>`+)(?P<ctext>.+?)(?P=code)"
    r"|\*\*(?P<bold>(?!\s).+?(?<!\s))\*\*"
    r"|(?<![\w*])\*(?P<em>(?![\s*]).+?(?<![\s*]))\*(?![\w*])"
)


@dataclass
class Block:
    kind: str  # "heading" | "para" | "item" | "code" | "rule" | "blank"
    text: str = ""
    level: int = 0  # heading level, or the item's indent in cells
    marker: str = ""  # list marker ("-" shown as "•", "1.")
    lang: str = ""
    lines: list[str] = field(default_factory=list)


def _join(lines: list[str]) -> str:
    """Soft line breaks: no space between two CJK characters (as pandoc's
    east_asian_line_breaks), a space otherwise."""
    out = ""
    for line in (raw.strip() for raw in lines):
        if not line:
            continue
        if out and not (_is_cjk(out[-1]) and _is_cjk(line[0])):
            out += " "
        out += line
    return out


def parse(md: str) -> list[Block]:
    blocks: list[Block] = []
    lines = md.expandtabs(4).splitlines()
    i = 0
    pending: list[str] = []  # lines of the paragraph or item being collected

    def flush() -> None:
        if pending and blocks and blocks[-1].kind == "item" and blocks[-1].lines is pending:
            blocks[-1].text = _join(pending)
        elif pending:
            blocks.append(Block("para", _join(pending)))
        pending.clear()

    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush()
            pending = []
            mark, body = fence.group(2), []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(mark):
                body.append(lines[i])
                i += 1
            blocks.append(Block("code", "\n".join(body), lang=fence.group(3) or "text"))
            i += 1
            continue
        if not line.strip():
            flush()
            pending = []
            if blocks and blocks[-1].kind != "blank":
                blocks.append(Block("blank"))
        elif m := _HEADING.match(line):
            flush()
            pending = []
            blocks.append(Block("heading", m.group(2), level=len(m.group(1))))
        elif _RULE.match(line):
            flush()
            pending = []
            blocks.append(Block("rule"))
        elif m := _ITEM.match(line):
            flush()
            pending = [m.group(3)]
            marker = "•" if m.group(2) in "-*+" else m.group(2)
            blocks.append(Block("item", level=len(m.group(1)), marker=marker, lines=pending))
        else:
            pending.append(line)  # a paragraph line, or an item's continuation
        i += 1
    flush()
    while blocks and blocks[-1].kind == "blank":
        blocks.pop()
    return blocks


def inline(text: str, plain_code: bool = False) -> tuple[Text, list[tuple[int, int]]]:
    """Styled Text for one paragraph, and the ranges of its code spans (kept
    whole when wrapping). Without colour, code keeps its backticks as a cue."""
    out = Text()
    codes: list[tuple[int, int]] = []
    pos = 0
    for m in _INLINE.finditer(text):
        out.append(text[pos : m.start()])
        if m.group("code"):
            start = len(out)
            code = m.group("ctext").strip() or m.group("ctext")
            out.append(f"`{code}`" if plain_code else code, CODE_STYLE)
            codes.append((start, len(out)))
        elif m.group("bold"):
            out.append(m.group("bold"), "bold")
        else:
            out.append(m.group("em"), "italic")
        pos = m.end()
    out.append(text[pos:])
    return out, codes


class Doc:
    """A parsed step text that lays itself out at the console's width."""

    def __init__(self, md: str) -> None:
        self.blocks = parse(md)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        plain_code = console.no_color or console.color_system is None
        previous = None
        for block in self.blocks:
            if block.kind == "blank":
                yield Text("")
            elif block.kind == "heading":
                if previous not in (None, "blank"):
                    yield Text("")  # air above a heading even without a blank line
                text, codes = inline(block.text, plain_code)
                text.stylize(HEADING_STYLES.get(block.level, HEADING_OTHER))
                yield from wrap_text(text, width, codes)
            elif block.kind == "para":
                text, codes = inline(block.text, plain_code)
                yield from wrap_text(text, width, codes)
            elif block.kind == "item":
                yield from self._item(block, width, plain_code)
            elif block.kind == "code":
                yield from self._code(block, console, options)
            elif block.kind == "rule":
                yield Rule(style="dim")
            previous = block.kind

    @staticmethod
    def _item(block: Block, width: int, plain_code: bool) -> RenderResult:
        # Hanging indent: continuation lines start under the item's text.
        lead = " " * block.level + block.marker + " "
        hang = len(lead)  # markers are ASCII or "•": one cell each
        text, codes = inline(block.text, plain_code)
        for n, line in enumerate(wrap_text(text, max(width - hang, 8), codes)):
            # assemble, not `+`: Text + Text would spread the marker's bold.
            yield Text.assemble((lead, "bold") if n == 0 else " " * hang, line)

    @staticmethod
    def _code(block: Block, console: Console, options: ConsoleOptions) -> RenderResult:
        # Code is never wrapped (that would change its meaning): long lines are
        # cropped, and a dim "…" at the edge says so.
        from rich.syntax import Syntax  # pygments: ~30 ms to import, and few steps show code

        width = options.max_width
        syntax = Syntax(
            block.text,
            block.lang,
            theme=CODE_THEME,
            word_wrap=False,
            line_numbers=False,
            padding=(0, 1),
        )
        rendered = console.render_lines(syntax, options.update(width=width), pad=True)
        sources = block.text.split("\n")
        for n, segments in enumerate(rendered):
            if n < len(sources) and cell_len(sources[n].rstrip()) > width - 2:
                segments = Segment.adjust_line_length(segments, width - 1)
                segments.append(Segment("…", CROP_MARK))
            yield from segments
            yield Segment.line()


def render_markdown(md: str) -> Doc:
    """A renderable for a lesson step's Markdown text."""
    return Doc(md)


VIEW_MARK = "<!-- view -->"  # a line of its own in a step's text: where the step's view goes


def split_for_view(body: str) -> tuple[str, str]:
    """A step's text (after its heading) cut where its view goes: at a line `<!-- view -->`, or
    else after the first paragraph, so that the learner reads what the view is before it. A step
    without a view shows both parts, one after the other; the mark itself is never drawn."""
    lines = body.strip("\n").split("\n")
    marks = [i for i, line in enumerate(lines) if line.strip() == VIEW_MARK]
    if marks:
        kept = [line for line in lines if line.strip() != VIEW_MARK]  # a second mark is dropped
        cut = marks[0]
        return "\n".join(kept[:cut]).strip("\n"), "\n".join(kept[cut:]).strip("\n")
    intro, _, rest = body.strip("\n").partition("\n\n")
    return intro, rest
