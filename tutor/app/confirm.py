"""A yes/no question over the app (used before resetting the learner's code)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from tutor.render.wrap import Wrapped
from tutor.text.i18n import t


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [
        Binding("y", "answer(True)", id="confirm-yes", show=False),
        Binding("n,escape", "answer(False)", id="confirm-no", show=False),
    ]

    def __init__(self, question: str, lang: str):
        super().__init__()
        self.question, self.lang = question, lang

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(Wrapped(self.question, style="bold"))
            yield Static(Wrapped(t("ui.confirm_keys", self.lang), style="dim"))

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
