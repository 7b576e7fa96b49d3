"""The reference solution of a passed step, as a diff against the learner's own code."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tutor.app.language import switch_language
from tutor.render.code_block import CodeBlock
from tutor.render.wrap import Wrapped
from tutor.text.i18n import t


class SolutionScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,s,q", "close", id="close-solution", show=False),
        Binding("l", "language", id="solution-language", show=False),
    ]

    def __init__(self, lang: str, title: str, diff: str, reference: str):
        super().__init__()
        self.lang, self.title_text, self.diff, self.reference = lang, title, diff, reference

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="solution-box"):
            yield Static(
                Wrapped(t("ui.solution_title", self.lang, title=self.title_text), style="bold")
            )
            if self.diff:
                yield Static(Wrapped(t("ui.solution_diff", self.lang), style="dim"))
                yield Static(CodeBlock(self.diff, "diff"))
            else:
                yield Static(Wrapped(t("ui.solution_same", self.lang), style="dim"))
                yield Static(CodeBlock(self.reference, "python"))
            yield Static(Wrapped(t("ui.solution_close", self.lang), style="dim"))

    def action_close(self) -> None:
        self.app.pop_screen()

    async def action_language(self) -> None:
        """`l` here too; the step's title comes in the new language."""
        self.lang = switch_language(self.app)
        self.title_text = self.app.step_title()  # type: ignore[attr-defined]
        await self.recompose()
