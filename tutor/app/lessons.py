"""The lesson switcher: every lesson with its progress; Enter opens one, Escape stays."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tutor.app.language import switch_language
from tutor.model.lesson import Lesson
from tutor.render.wrap import Wrapped
from tutor.text.i18n import t


class LessonScreen(ModalScreen[str | None]):
    BINDINGS = [
        Binding("escape,L", "close", id="close-lessons", show=False),
        Binding("l", "language", id="lessons-language", show=False),
    ]

    def __init__(
        self,
        lang: str,
        lessons: Sequence[Lesson],
        progress: dict[str, dict[str, str]],
        current: str,
    ):
        super().__init__()
        self.lang, self.lessons, self.progress, self.current = lang, lessons, progress, current

    def compose(self) -> ComposeResult:
        options = []
        for lesson in self.lessons:
            passed = sum(
                self.progress.get(lesson.id, {}).get(s.id) == "pass" for s in lesson.checked_steps
            )
            line = Text.assemble(
                ("▸ " if lesson.id == self.current else "  "),
                (lesson.title[self.lang], "bold"),
                f"  {lesson.id} · ",
                t("cli.list_progress", self.lang, passed=passed, total=len(lesson.checked_steps)),
            )
            options.append(Option(line, id=lesson.id))
        with Vertical(id="lessons-box"):
            yield Static(Wrapped(t("ui.lessons_title", self.lang), style="bold"))
            yield OptionList(*options, id="lessons-list")
            yield Static(Wrapped(t("ui.lessons_keys", self.lang), style="dim"))

    def on_mount(self) -> None:
        listed = self.query_one("#lessons-list", OptionList)
        listed.highlighted = [lesson.id for lesson in self.lessons].index(self.current)
        listed.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        self.dismiss(None)

    async def action_language(self) -> None:
        """`l` here too: the list is drawn again in the new language, the same lesson lit."""
        listed = self.query_one("#lessons-list", OptionList)
        lit = listed.highlighted
        self.lang = switch_language(self.app)
        await self.recompose()
        self.query_one("#lessons-list", OptionList).highlighted = lit
        self.query_one("#lessons-list", OptionList).focus()
