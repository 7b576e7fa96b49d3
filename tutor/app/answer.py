"""Writing one reflection answer: a text area over the lesson, saved on Ctrl+S or Escape."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from tutor.render.doc import render_markdown
from tutor.render.wrap import Wrapped
from tutor.text.i18n import t


class AnswerScreen(ModalScreen[str | None]):
    # Escape saves too: closing the box must never lose what was typed.
    BINDINGS = [Binding("ctrl+s,escape", "save", id="save-answer", show=False)]

    def __init__(self, number: int, question: str, answer: str, lang: str):
        super().__init__()
        self.number, self.question, self.answer, self.lang = number, question, answer, lang

    def compose(self) -> ComposeResult:
        with Vertical(id="answer-box"):
            yield Static(Wrapped(t("ui.answer_title", self.lang, n=self.number), style="bold"))
            yield Static(render_markdown(self.question))
            yield TextArea(self.answer, id="answer-text", soft_wrap=True)
            yield Static(Wrapped(t("ui.answer_help", self.lang), style="dim"))

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        self.dismiss(self.query_one(TextArea).text)
