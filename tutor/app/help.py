"""The help screen: every key, in the current language."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tutor.app.language import switch_language
from tutor.render.wrap import Wrapped
from tutor.text.i18n import t

HELP_KEYS = (
    ("n", "key_next"),
    ("p", "key_prev"),
    ("r", "key_run"),
    ("e", "key_edit"),
    ("h", "key_hint"),
    ("l", "key_lang_long"),
    ("w", "key_weights_long"),
    ("b", "key_cycle"),
    ("d", "key_mode"),
    ("1–9", "key_settings"),
    ("m", "key_model"),
    ("f", "key_full"),
    ("R", "key_reset"),
    ("s", "key_solution"),
    ("L", "key_lessons"),
    ("Ctrl+P", "key_commands"),
    ("↑ ↓", "key_scroll"),
    ("PgUp PgDn", "key_page"),
    ("Tab", "key_focus"),
    ("?", "key_help"),
    ("q", "key_quit"),
)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,question_mark,q", "close", id="close-help", show=False),
        Binding("l", "language", id="help-language", show=False),
    ]

    def __init__(self, lang: str):
        super().__init__()
        self.lang = lang

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(no_wrap=True, justify="right")
        table.add_column(ratio=1)
        for key, label in HELP_KEYS:
            table.add_row(Text(key, style="bold cyan"), Wrapped(t(f"ui.{label}", self.lang)))
        with VerticalScroll(id="help-box"):
            yield Static(Wrapped(t("ui.help_title", self.lang), style="bold"))
            yield Static(table)
            yield Static(Wrapped(t("ui.help_close", self.lang), style="dim"))

    def action_close(self) -> None:
        self.app.pop_screen()

    async def action_language(self) -> None:
        """`l` here too: the app and this box change language at once."""
        self.lang = switch_language(self.app)
        await self.recompose()
