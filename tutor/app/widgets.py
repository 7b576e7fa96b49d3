"""The app's own widgets: the step list, the footer, and per-step extras."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import RenderableType
from rich.text import Text
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..i18n import t

FOOTER_KEYS = (("n", "key_next"), ("p", "key_prev"), ("r", "key_run"), ("e", "key_edit"),
               ("h", "key_hint"), ("w", "key_weights"), ("l", "key_lang"), ("?", "key_help"), ("q", "key_quit"))


class StepList(OptionList):
    """One line per step: a status mark and the title, in the current language."""

    def show(self, lesson, marks: dict, current: int, lang: str) -> None:
        options = []
        for step in lesson.steps:
            line = Text.assemble(marks[step.id], " ", step.title[lang])
            options.append(Option(line, id=step.id))
        with self.prevent(OptionList.OptionHighlighted):
            self.clear_options()
            self.add_options(options)
            self.highlighted = current


class Footer(Static):
    """Our own key line: Textual's footer cannot switch language."""

    def show(self, lang: str) -> None:
        text = Text()
        for key, label in FOOTER_KEYS:
            if text:
                text.append("  ")
            text.append(f" {key} ", style="reverse bold")
            text.append(" " + t(f"ui.{label}", lang))
        self.update(text)


def step_extra(lesson, step, lang: str, results: dict) -> RenderableType | None:
    """What an experiment step shows under its text."""
    if step.id == "memory":
        from ..render.memory import memory_rows, memory_table

        rows = memory_rows([64, 128, 256, 512, 1024], heads=12, batch=1, bytes_per=4)
        labels = {k: t(f"ui.memory_{k}", lang) for k in ("T", "scores", "mb", "measured", "bar")}
        table = memory_table(rows, labels)
        table.title = t("ui.memory_title", lang)
        return table
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
