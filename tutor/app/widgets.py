"""The app's own widgets: the step list, the footer, and per-step extras."""

from __future__ import annotations

from dataclasses import replace

from rich.cells import cell_len
from rich.console import RenderableType
from rich.measure import Measurement
from rich.text import Text
from textual.cache import LRUCache
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..i18n import t
from ..render.verdicts import marked
from ..render.wrap import Wrapped

FOOTER_KEYS = (("n", "foot_next"), ("p", "foot_prev"), ("r", "foot_run"), ("e", "foot_edit"), ("h", "foot_hint"),
               ("w", "foot_weights"), ("l", "foot_lang"), ("?", "foot_help"), ("q", "foot_quit"))


class StepList(OptionList):
    """One line per step: a status mark and the title, in the current language."""

    shown_key: tuple = ()
    shown_marks: dict = {}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.drawn: LRUCache = LRUCache(1024)

    def show(self, lesson, marks: dict, current: int, lang: str) -> None:
        key = (lesson.id, lang)
        seen = {sid: (m.plain, str(m.style)) for sid, m in marks.items()}
        with self.prevent(OptionList.OptionHighlighted):
            if key != self.shown_key:
                self.clear_options()
                self.add_options([Option(marked(marks[s.id], Wrapped(s.title[lang])), id=s.id) for s in lesson.steps])
            else:
                # Only the lines whose mark changed: rebuilding all of them costs a full layout.
                for i, step in enumerate(lesson.steps):
                    if self.shown_marks.get(step.id) != seen[step.id]:
                        self.replace_option_prompt_at_index(i, marked(marks[step.id], Wrapped(step.title[lang])))
            if self.highlighted != current:
                self.highlighted = current
        self.shown_key, self.shown_marks = key, seen

    def _replace_option_prompt(self, index: int, prompt) -> None:
        # OptionList's own version forgets every option's height and drawn lines, so each
        # new mark re-measured and redrew the whole list. A mark never changes a line's height
        # (`marked` wraps the title at the same width whatever the mark): repaint this option only.
        self.get_option_at_index(index)._set_prompt(prompt)
        self._option_render_cache.clear()  # a memo by option, now stale; `drawn` keeps the rest
        line = self._line_cache.index_to_line.get(index)
        if line is None:  # not laid out yet: nothing drawn to keep
            self._clear_caches()
        else:
            self.refresh_lines(line, self._line_cache.heights[index])

    def _get_option_render(self, option: Option, style) -> list:
        # Marks go back and forth (todo, spinner, pass, fail) with every run: keep each line as
        # drawn per mark, so a verdict only copies lines already drawn.
        width = self.scrollable_content_region.width
        key = (option.id, self.shown_marks.get(option.id), self.shown_key, style, width)
        strips = self.drawn.get(key)
        if strips is None:
            strips = super()._get_option_render(option, style)
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
        self.drawn_for = None
        self.lines: list = []

    def __rich_console__(self, console, options):
        options = options.reset_height()
        key = replace(options, max_height=0)
        if key != self.drawn_for:
            self.lines = console.render_lines(self.renderable, options, pad=False, new_lines=True)
            self.drawn_for = key
        for line in self.lines:
            yield from line

    def __rich_measure__(self, console, options):
        return Measurement.get(console, options, self.renderable)


class Footer(Static):
    """Our own key line: Textual's footer cannot switch language."""

    def show(self, lang: str) -> None:
        text = Text(no_wrap=True, overflow="ellipsis")
        for key, label in FOOTER_KEYS:
            text.append(key, style="reverse bold")
            text.append(f" {t(f'ui.{label}', lang)}  ")
        self.update(text)


def step_extra(app) -> RenderableType | None:
    """What an experiment or reflection step shows under its text, from the worker's data."""
    from ..render.experiments import exercises_view, memory_view, reflect_view, weights_pair

    step, lang, results = app.step, app.lang, app.results
    visuals = results[step.id].visuals if step.id in results else {}
    hint = app.color_hint
    if step.id == "memory":
        data = visuals.get("memory")
        measured = {t: b for t, b in data["measured"]} if data and data["settings"] == app.memory_settings else None
        return memory_view(app.memory_settings, measured, lang)
    if step.id == "reflect":
        return reflect_view(step.questions.get(lang, ()), app.answers, app.show_model,
                            step.answers.get(lang, ()), visuals.get("reflect"), lang)
    if step.id == "heatmap":
        maps = visuals.get("heatmaps")
        return weights_pair(maps, lang, hint) if maps else Text(t("ui.weights_waiting", lang), style="dim")
    if step.id == "exercises":
        data = visuals.get("exercises")
        if data is None:
            return Text(t("ui.weights_waiting", lang), style="dim")
        return exercises_view(data, app.exercise_variant, lang, hint)
    return None


def fits(text: str, width: int) -> str:
    if cell_len(text) <= width:
        return text
    out = ""
    for ch in text:
        if cell_len(out + ch + "…") > width:
            return out + "…"
        out += ch
    return out
