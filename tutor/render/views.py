"""Draws a step's view (the items of tutor.model.view_items) and its questions, in the reader's language.

Pure Rich: the app puts what these return in its panels; tests call them directly. Nothing
here knows a lesson: the texts are message references resolved with i18n.t, the numbers
come formatted by the lesson's judge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from tutor.model.view_items import Item
from tutor.render.bars import bar as bar_text
from tutor.render.doc import render_markdown
from tutor.render.heatmap import heatmap as draw_heatmap
from tutor.render.wrap import Wrapped
from tutor.text.i18n import t

LEGEND_KEYS = ("learner", "reference", "diff", "masked", "leak", "nan")
QUESTIONS_OWN = ("with_question", "after_answer")  # drawn with their question, not in the view


def text_of(value: object, lang: str) -> str:
    """A message reference in lang, or a plain value as it is."""
    if isinstance(value, dict) and "key" in value:
        return t(value["key"], lang, **(value.get("params") or {}))
    return "" if value is None else str(value)


def panel_word(lang: str, words: dict[str, object] | None, name: str) -> str:
    """One of the weights panel's texts (a tutor.model.view_items.WORDS name): a weights entry's own, in
    place of the panel's `ui.<name>`, for a matrix that is not attention weights."""
    return text_of(words[name], lang) if words and name in words else t(f"ui.{name}", lang)


def heatmap_words(
    lang: str, words: dict[str, object] | None = None
) -> tuple[tuple[str, str], dict[str, str]]:
    """The axis labels and the legend every heatmap shows; words: a weights entry's own (panel_word)."""

    def word(name: str) -> str:
        return panel_word(lang, words, name)

    return (word("axis_keys"), word("axis_queries")), {k: word(f"legend_{k}") for k in LEGEND_KEYS}


def floats(matrix: Iterable[Iterable[float | None]]) -> list[list[float]]:
    return [[float("nan") if v is None else v for v in row] for row in matrix]


class SideBySide:
    """Renderables next to each other when there is room, else one under the other."""

    def __init__(self, *items: RenderableType, min_width: int = 84):
        self.items, self.min_width = items, min_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if len(self.items) > 1 and options.max_width >= self.min_width:
            grid = Table.grid(padding=(0, 2))
            for _ in self.items:
                grid.add_column(ratio=1)
            grid.add_row(*self.items)
            yield grid
            return
        for i, item in enumerate(self.items):
            if i:
                yield Text("")
            yield item


class Packed:
    """Short items on as few lines as fit, "a · b · c", breaking only between items (an item
    wider than the line is wrapped on its own): a settings line never splits "3 dtype: float32"."""

    def __init__(self, prefix: str, items: list[str], style: str = "dim", sep: str = " · "):
        self.prefix, self.items, self.style, self.sep = prefix, items, style, sep

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(1, options.max_width)
        lines: list[str] = []
        line = self.prefix
        for i, item in enumerate(self.items):
            joined = line + (self.sep if i else "") + item
            last = i == len(self.items) - 1
            if i and cell_len(joined + ("" if last else self.sep.rstrip())) > width:
                lines.append(line + self.sep.rstrip())
                line = item
            else:
                line = joined
        lines.append(line)
        for text in lines:
            yield Wrapped(text, style=self.style)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        full = cell_len(self.prefix + self.sep.join(self.items))
        return Measurement(min(full, max((cell_len(i) for i in self.items), default=1)), full)


@dataclass
class Context:
    """What drawing a view needs besides its items."""

    lang: str
    color_hint: str | None = None
    keys_line: RenderableType | None = None  # the settings line, where the view has keys()
    revealed: Callable[[int], bool] = lambda question: False  # after_answer(question): shown?


def cell(value: object, lang: str) -> Text | str:
    if isinstance(value, dict) and value.get("kind") == "bar":
        top, width = value.get("top") or 0, int(value.get("width") or 8)
        style = value.get("style") or "green"
        if "label" not in value:
            return Text(bar_text(value.get("value") or 0, top, width), style=style)
        if not isinstance(value.get("value"), (int, float)):
            return "—"  # not measured: the view says why
        # The bar padded to its width, so that the figures after it line up.
        drawn = bar_text(value["value"], top, width).ljust(width)
        return Text.assemble((drawn, style), " ", str(value["label"]))
    if value is None:
        return "—"
    return text_of(value, lang)


def draw_table(item: Item, lang: str) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False, collapse_padding=True)
    align = item.get("align") or []
    rows = item.get("rows") or []
    for i, column in enumerate(item.get("columns") or []):
        if i < len(align) and align[i]:
            justify = align[i]
        else:  # numbers right, text left: as the first row has them
            first = rows[0][i] if rows and i < len(rows[0]) else None
            justify = "right" if isinstance(first, (int, float)) or first is None else "left"
        is_bar = any(
            isinstance(r[i], dict) and r[i].get("kind") == "bar" for r in rows if i < len(r)
        )
        # A bar with its figure is kept whole, as a number is: a figure folded under its bar
        # reads as a row of its own.
        labelled = any(isinstance(r[i], dict) and "label" in r[i] for r in rows if i < len(r))
        # A number is never cut short ("1…" for 128): a column is at least as wide as its widest
        # value, and where the table is too wide for the screen its header wraps instead.
        widest = (
            0
            if is_bar and not labelled
            else max((cell_len(str(cell(r[i], lang))) for r in rows if i < len(r)), default=0)
        )
        table.add_column(
            text_of(column, lang),
            justify=justify,
            min_width=widest or None,
            overflow="fold" if is_bar and not labelled else "ellipsis",
        )
    for r in rows:
        table.add_row(
            *(
                Text(c, no_wrap=True) if isinstance(c, str) else c
                for c in (cell(v, lang) for v in r)
            )
        )
    return table


def draw_item(item: Item, ctx: Context) -> list[RenderableType]:
    """One item's renderables (none for an item not to be shown, or of a kind not known)."""
    lang = ctx.lang
    kind = item.get("kind")
    if kind == "heading":
        return [Wrapped(text_of(item.get("text"), lang), style="bold")]
    if kind == "note":
        return [render_markdown(text_of(item.get("text"), lang))]
    if kind == "waiting":
        return [Wrapped(text_of(item.get("text"), lang), style="dim")]
    if kind == "table":
        return [draw_table(item, lang)]
    if kind == "heatmap":
        axes, legend = heatmap_words(lang)
        reference = item.get("reference")
        return [
            draw_heatmap(
                floats(item["matrix"]),
                reference=floats(reference) if reference else None,
                mode="diff" if reference else "learner",
                title=text_of(item.get("title"), lang),
                axis_labels=axes,
                color_system_hint=ctx.color_hint,
                legend=legend,
                hidden=item.get("hidden"),
            )
        ]
    if kind == "row":
        drawn = [Group(*draw_item(i, ctx)) for i in item.get("items") or []]
        return [SideBySide(*drawn)] if drawn else []
    if kind == "keys":
        return [ctx.keys_line] if ctx.keys_line is not None else []
    if kind in QUESTIONS_OWN:
        if kind == "after_answer" and not ctx.revealed(int(item.get("question", 0))):
            return []
        return draw_view(item.get("items") or [], ctx)  # spaced as a view is
    return []  # a kind from a newer lesson kit: left out rather than fail the screen


BLOCKS = ("table", "heatmap", "row")  # set apart by a blank line, unless under their heading


def draw_view(items: list[Item], ctx: Context) -> list[RenderableType]:
    """The view's items in order; with_question and after_answer items are left to the questions
    (see by_question). A blank line goes before each heading but the first, around tables,
    heatmaps and rows (not between a heading and its block) and between two notes."""
    out: list[RenderableType] = []
    last = None  # the kind drawn last
    for item in items:
        if not isinstance(item, dict) or item.get("kind") in QUESTIONS_OWN:
            continue
        drawn = draw_item(item, ctx)
        if not drawn:
            continue
        kind = item.get("kind")
        if last is not None and (
            kind == "heading"
            or last in BLOCKS
            or (kind in BLOCKS and last != "heading")
            or kind == last == "note"
        ):
            out.append(Text(""))
        out += drawn
        last = kind
    return out


def by_question(items: list[Item]) -> dict[int, list[Item]]:
    """The view's with_question and after_answer items by question number (1-based), in order."""
    found: dict[int, list[Item]] = {}
    for item in items:
        if isinstance(item, dict) and item.get("kind") in QUESTIONS_OWN:
            found.setdefault(int(item.get("question", 0)), []).append(item)
    return found


@dataclass
class Questions:
    """A step's questions as the learner sees them: their answers, and the model answers' state."""

    texts: tuple[str, ...]
    answers: dict[int, str]  # 0-based index -> the learner's answer
    models: tuple[str, ...] = ()
    show_model: bool = False  # `m`
    path: str = ""  # the answers file, as shown
    keys: tuple[str, ...] = field(default_factory=tuple)  # the key of each question ("1", "2", ...)

    def answered(self, question: int) -> bool:
        return bool(self.answers.get(question - 1, "").strip())


def draw_questions(
    q: Questions, ctx: Context, extra: dict[int, list[Item]] | None = None
) -> list[RenderableType]:
    """The questions, each with what the view shows for it (with_question), the learner's answer
    (and the model answer after `m`), and under them what the view gives away about it
    (after_answer), once it is answered or `m` was pressed."""
    lang = ctx.lang
    keys = q.keys or tuple(str(i + 1) for i in range(len(q.texts)))
    span = keys[0] if len(keys) == 1 else f"{keys[0]}–{keys[-1]}"
    parts: list[RenderableType] = [
        Wrapped(t("ui.questions_keys", lang, keys=span, path=q.path), style="dim")
    ]
    revealing = Context(
        lang, ctx.color_hint, ctx.keys_line, lambda n: q.show_model or q.answered(n)
    )
    for i, question in enumerate(q.texts):
        parts.append(Text(""))
        parts.append(render_markdown(f"**{i + 1}.** {question}"))
        own = (extra or {}).get(i + 1, [])
        shown = blocks([o for o in own if o.get("kind") == "with_question"], revealing)
        parts += shown + ([Text("")] if shown else [])  # the answer apart from the result
        answer = q.answers.get(i, "").strip()
        if answer:
            parts.append(Wrapped(t("ui.your_answer", lang), style="bold green"))
            parts.append(Text(answer))
            if q.show_model and i < len(q.models):
                parts.append(Wrapped(t("ui.model_answer", lang), style="bold cyan"))
                parts.append(render_markdown(q.models[i]))
        else:
            parts.append(
                Wrapped(t("ui.no_answer", lang, n=keys[i] if i < len(keys) else i + 1), style="dim")
            )
        parts += blocks([o for o in own if o.get("kind") == "after_answer"], revealing)
    return parts


def blocks(items: list[Item], ctx: Context) -> list[RenderableType]:
    """Each item's drawing, after a blank line (nothing for an item not shown)."""
    out: list[RenderableType] = []
    for item in items:
        drawn = draw_item(item, ctx)
        if drawn:
            out += [Text(""), *drawn]
    return out
