"""The app's own widgets: the step list, the footer, and per-step extras."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.app import ComposeResult
from textual.cache import LRUCache
from textual.clock import Clock
from textual.containers import ScrollableContainer, VerticalScroll
from textual.geometry import Size
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual, VisualType
from textual.widget import Widget
from textual.widgets import OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from tutor.app.textual_private import Bar, OneOptionRepaint, SelfScrollingStatic, progress_clock
from tutor.render.verdicts import ANCHOR, marked
from tutor.render.wrap import Wrapped
from tutor.text.i18n import t

if TYPE_CHECKING:
    from textual.layout import DockArrangeResult

    from tutor.app.base import LessonApp
    from tutor.model.lesson import Lesson, SettingValue, Step

FOOTER_KEYS = (
    ("n", "foot_next"),
    ("p", "foot_prev"),
    ("r", "foot_run"),
    ("e", "foot_edit"),
    ("h", "foot_hint"),
    ("w", "foot_weights"),
    ("l", "foot_lang"),
    ("?", "foot_help"),
    ("q", "foot_quit"),
)


def one_line(title: str) -> Text:
    """A step's title on one line: cut with … where the column is narrow (60 columns), never
    wrapped (the column is wide enough for every title from 100)."""
    return Text(title, no_wrap=True, overflow="ellipsis")


class StepList(OneOptionRepaint):
    """One line per step: a status mark and the title, in the current language. A mark never
    changes a line's height (`marked` wraps the title at the same width whatever the mark), so a
    new mark repaints its option only (OneOptionRepaint)."""

    shown_key: tuple[str, str] | tuple[()] = ()  # (lesson id, language) the options show
    shown_marks: dict[str, tuple[str, str]] = {}  # step id -> its mark's (text, style)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.drawn: LRUCache[Hashable, list[Strip]] = LRUCache(1024)

    def show(self, lesson: Lesson, marks: dict[str, Text], current: int, lang: str) -> None:
        key = (lesson.id, lang)
        seen = {sid: (m.plain, str(m.style)) for sid, m in marks.items()}
        with self.prevent(OptionList.OptionHighlighted):
            if key != self.shown_key:
                self.clear_options()
                self.add_options(
                    [
                        Option(marked(marks[s.id], one_line(s.title[lang])), id=s.id)
                        for s in lesson.steps
                    ]
                )
            else:
                # Only the lines whose mark changed: rebuilding all of them costs a full layout.
                for i, step in enumerate(lesson.steps):
                    if self.shown_marks.get(step.id) != seen[step.id]:
                        self.replace_option_prompt_at_index(
                            i, marked(marks[step.id], one_line(step.title[lang]))
                        )
            if self.highlighted != current:
                self.highlighted = current
        self.shown_key, self.shown_marks = key, seen

    def option_lines(self, option: Option, style: Style) -> list[Strip]:
        # Marks go back and forth (todo, spinner, pass, fail) with every run: keep each line as
        # drawn per mark, so a verdict only copies lines already drawn.
        width = self.scrollable_content_region.width
        key = (option.id, self.shown_marks.get(option.id or ""), self.shown_key, style, width)
        strips = self.drawn.get(key)
        if strips is None:
            strips = super().option_lines(option, style)
            self.drawn.set(key, strips)
        return strips


class DrawnOnce:
    """A panel's content, drawn once per width.

    Textual draws a Static's Rich content twice after each update: once to count its lines
    for the layout, once for the screen. Both ask for the same width; only the height they
    pass differs, and nothing drawn in a panel depends on it (Rich itself drops it below the
    top renderable). The second draw replays the lines of the first.
    """

    def __init__(self, renderable: RenderableType):
        self.renderable = renderable
        self.drawn_for: ConsoleOptions | None = None
        self.lines: list[list[Segment]] = []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        options = options.reset_height()
        key = replace(options, max_height=0)
        if key != self.drawn_for:
            self.lines = console.render_lines(self.renderable, options, pad=False, new_lines=True)
            self.drawn_for = key
        for line in self.lines:
            yield from line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


class ScrollingStatic(SelfScrollingStatic, can_focus=True):
    """A Static that scrolls its own content: what a Static in a VerticalScroll shows, drawn
    the same (width, lines, scrollbar), without a layout of the screen for each new content.

    In a VerticalScroll, content of another height resizes the Static, and that lays the whole
    screen out (two or three passes, ~10 ms); a pass and a fail differ in height, so every
    verdict paid it. Here the content's height is only the scroll range, as in Textual's
    ScrollView: a new one moves the scrollbar's thumb, and a layout is left for when the
    scrollbar comes or goes (the width changes). Focus and keys as a VerticalScroll has them.
    """

    DEFAULT_CSS = """
    ScrollingStatic {
        width: 1fr;
        overflow-x: hidden;
        overflow-y: auto;
    }
    """
    BINDINGS = ScrollableContainer.BINDINGS
    ALLOW_MAXIMIZE = False

    def __init__(self, *, id: str | None = None):
        super().__init__(id=id)
        self.lines: list[Strip] = []
        self.drawn_at: int | None = None  # the width `lines` were drawn at
        self.fitted_to: Size | None = None  # the area `virtual_size` was measured for
        self.key: Hashable = None
        self.drawn: LRUCache[tuple[Hashable, int], list[Strip]] = LRUCache(16)  # (key, width)

    def update(
        self, content: VisualType = "", *, layout: bool = True, key: Hashable = None
    ) -> None:
        """`key`: what the content says, if the caller knows; lines drawn for it are reused
        (verdicts go back and forth between a few contents)."""
        super().update(content, layout=False)
        self.key = key
        self.drawn_at = None
        self.fit()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.drawn_at = None  # the lines carry the old style
        self.drawn.clear()

    def lines_at(self, width: int) -> list[Strip]:
        if width != self.drawn_at:
            lines = self.drawn.get((self.key, width)) if self.key is not None else None
            if lines is None:
                lines = Visual.to_strips(self, self.visual, width, None, self.visual_style)
                if self.key is not None:
                    self.drawn.set((self.key, width), lines)
            self.lines, self.drawn_at = lines, width
        return self.lines

    def fit(self) -> None:
        """Measure the content for the area it is shown in: the scroll range."""
        area = self.scrollable_content_region.size
        if area.width <= 0:
            return  # not laid out yet: region_changed comes back here
        self.fitted_to = area
        width, height = area
        if (len(self.lines_at(width)) > height) != self.show_vertical_scrollbar:
            # The scrollbar comes or goes, and with it two columns: measured at the new width,
            # set_scroll_range shows or hides it, and that lays the screen out.
            gutter = self.styles.scrollbar_size_vertical
            width += gutter if self.show_vertical_scrollbar else -gutter
        size = Size(width, len(self.lines_at(width)))
        if size != self.virtual_size:
            self.set_scroll_range(size)
        self.refresh()

    def anchor_lines(self, name: str) -> tuple[int, int] | None:
        """The first and last line the content's Anchored(name) part is drawn on, or None."""
        width = self.scrollable_content_region.width
        if width <= 0:
            return None  # not laid out (or hidden): nothing drawn yet
        found = [
            y
            for y, line in enumerate(self.lines_at(width))
            if any(seg.style is not None and seg.style.meta.get(ANCHOR) == name for seg in line)
        ]
        return (found[0], found[-1]) if found else None

    def region_changed(self) -> None:
        if self.scrollable_content_region.size != self.fitted_to:
            self.fit()  # a new width wraps the content anew

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        # The lines move in render_line (as in ScrollView): a repaint, no child to move.
        if self.show_vertical_scrollbar:
            self.vertical_scrollbar.position = new_value
        if round(old_value) != round(new_value):
            self.refresh()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        lines = self.lines_at(width)
        y += round(self.scroll_y)
        if y < len(lines):
            return lines[y]
        # Below the content: the background alone, as a VerticalScroll draws it.
        return Strip.blank(
            width, RichStyle.from_color(bgcolor=self.background_colors[1].rich_color)
        )


class DocScroll(VerticalScroll):
    """A VerticalScroll that takes its scrollbar's columns in the layout that finds the content
    taller than the panel.

    Textual lays the content out at the full width, sees the overflow only afterwards (when it
    sizes the widgets) and lays the screen out again at the narrower width: on the first screen
    that was a paint of the lesson text at the wrong width, then a second wrap, layout and paint.
    Here the overflow is seen in `arrange`: the layout goes on at the narrower width with the
    scrollbar shown, as Textual's second pass would have it. (Textual 8 internals: `arrange`,
    the `show_vertical_scrollbar` reactive; hiding the scrollbar is left to Textual.)
    """

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        arrangement = super().arrange(size, optimal)
        styles = self.styles
        if (
            not optimal
            and not self.show_vertical_scrollbar
            and styles.overflow_y == "auto"
            and styles.overflow_x == "hidden"
            and styles.scrollbar_gutter != "stable"
            and arrangement.total_region.bottom > size.height
        ):
            gutter = styles.scrollbar_size_vertical
            if 0 < gutter < size.width:
                # set_reactive: no layout request for it, this layout already has the scrollbar.
                self.set_reactive(Widget.show_vertical_scrollbar, True)
                arrangement = super().arrange(Size(size.width - gutter, size.height), optimal)
        return arrangement


class PassBar(Bar):
    """Textual's bar, each of its looks drawn once: verdicts move it between a few counts,
    and drawing it anew took ~1 ms of each frame where the count changed."""

    def __init__(self, *, id: str | None = None, clock: Clock | None = None) -> None:
        super().__init__(id=id, clock=clock)
        self.drawn: dict[tuple[float, Size, int], Strip] = {}

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.drawn.clear()

    def render_line(self, y: int) -> Strip:
        if self.percentage is None:  # the animated look: always drawn
            return super().render_line(y)
        key = (self.percentage, self.size, y)
        line = self.drawn.get(key)
        if line is None:
            line = self.drawn[key] = super().render_line(y)
        return line


class Progress(ProgressBar):
    """A ProgressBar with only its bar (no percentage, no ETA), a PassBar."""

    def compose(self) -> ComposeResult:
        yield (
            PassBar(id="bar", clock=progress_clock(self))
            .data_bind(ProgressBar.percentage)
            .data_bind(ProgressBar.gradient)
        )


class Footer(Static):
    """Our own key line: Textual's footer cannot switch language. `? help` and `q quit` stay at
    any width; the keys before them are left out from the right when the line is too short."""

    KEPT = 2  # the last FOOTER_KEYS: help and quit

    lang = "en"

    def show(self, lang: str) -> None:
        self.lang = lang
        self.refresh()

    def render(self) -> Text:
        def item(key: str, label: str) -> Text:
            return Text.assemble((key, "reverse bold"), f" {t(f'ui.{label}', self.lang)}  ")

        tail = [item(*k) for k in FOOTER_KEYS[-self.KEPT :]]
        room = self.size.width - sum(part.cell_len for part in tail)
        text = Text(no_wrap=True, overflow="ellipsis")
        for key, label in FOOTER_KEYS[: -self.KEPT]:
            part = item(key, label)
            if part.cell_len > room:
                break
            text.append_text(part)
            room -= part.cell_len
        for part in tail:
            text.append_text(part)
        return text


def step_extra(app: LessonApp, view: list[Any] | None) -> RenderableType | None:
    """What a step shows under its heading, from data only: the view its judge sent (kept from
    the last run while a new one is out), its settings line, its questions."""
    from tutor.render.views import Context, Questions, by_question, draw_questions, draw_view

    step, lang = app.step, app.lang
    keys_line = settings_line(step, app.settings.get(step.id, {}), lang) if step.settings else None
    ctx = Context(lang, app.color_hint, keys_line)
    parts: list[RenderableType] = []
    if app.updating():
        parts.append(Wrapped(t("ui.updating", lang), style="dim"))
    if view is not None:
        if keys_line is not None and not any(
            i.get("kind") == "keys" for i in view if isinstance(i, dict)
        ):
            parts.append(keys_line)  # a view without a place for the keys line: it goes first
        parts += draw_view(view, ctx)
    elif not step.checked:
        # Nothing of an earlier run is kept: a run that failed says so (its reason is in the
        # results below), and before any run the step says what is to come.
        run = app.results.get(step.id)
        if keys_line is not None:
            parts.append(keys_line)
        if run is not None and run.status != "pass":
            parts.append(Wrapped(t("ui.view_failed", lang), style="yellow"))
        elif not step.questions:
            parts.append(Wrapped(t("ui.view_waiting", lang), style="dim"))
    if step.questions.get(lang):
        if parts:
            parts.append(Text(""))
        questions = Questions(
            step.questions[lang],
            app.answers.get(step.id, {}),
            step.answers.get(lang, ()),
            app.show_model,
            app.answers_shown_path(),
            step.question_keys(),
        )
        parts += draw_questions(questions, ctx, by_question(view or []))
    return Group(*parts) if parts else None


def settings_line(step: Step, values: dict[str, SettingValue], lang: str) -> RenderableType:
    """The step's keys and the value each setting has now: "Keys: 1 heads: 12 · 2 batch: 1"."""
    from tutor.render.views import Packed

    items = [
        t(
            "ui.setting",
            lang,
            key=s.key,
            label=s.label.get(lang, s.id),
            value=s.shown(values.get(s.id, s.default), lang),
        )
        for s in step.settings
    ]
    prefix = t("ui.settings_keys", lang, settings="")
    return Packed(prefix, items)


def fits(text: str, width: int) -> str:
    if cell_len(text) <= width:
        return text
    out = ""
    for ch in text:
        if cell_len(out + ch + "…") > width:
            return out + "…"
        out += ch
    return out
