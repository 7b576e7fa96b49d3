"""The app's keys: steps, hints, language, weights, reset, solution, lessons, the palette, help,
the editor.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

from textual import events, on
from textual.app import SuspendNotSupported, SystemCommand
from textual.screen import Screen
from textual.widgets import OptionList

from tutor.app.checking import CheckingApp
from tutor.text.i18n import t
from tutor.workspace.notebook import is_notebook


class ActionsApp(CheckingApp):
    def go_to(self, index: int) -> None:
        index = max(0, min(index, len(self.lesson.steps) - 1))
        if index == self.step_index:
            return
        self.step_index = index
        self.heatmap_index = 0
        self.render_steps()
        self.render_main()
        self.render_results()
        self.query_one("#doc-scroll").scroll_home(animate=False)
        self.show_first_failure()
        self.remember()
        if self.step.questions:
            self.reread_answers()
        if not self.step.checked and self.source is not None:
            self.run_checks(*self.source)

    def action_step(self, delta: int) -> None:
        self.go_to(self.step_index + delta)

    @on(OptionList.OptionSelected, "#steps")
    def on_step_selected(self, event: OptionList.OptionSelected) -> None:
        self.go_to(event.option_index)

    @on(OptionList.OptionHighlighted, "#steps")
    def on_step_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.go_to(event.option_index)

    def action_rerun(self) -> None:
        if self.worker_state == "gone":
            if self.worker:
                self.worker.close()
            self.start_checker()
        self.rerun_from_disk()

    def action_full_messages(self) -> None:
        """`f`: the failing checks' messages in full, or cut to four lines again."""
        self.full_messages = not self.full_messages
        self.render_results()
        self.show_first_failure()

    def action_hint(self) -> None:
        hints = self.step.hints.get(self.lang, ())
        shown = self.hints_shown.get(self.step.id, 0)
        if not hints:
            self.notify(t("ui.no_hints", self.lang), timeout=2)
            return
        if shown >= len(hints):
            # Said under the last hint (a toast would cover it at 80×24): bring it in view.
            self.show_first_failure(to_hint=True)
            return
        self.hints_shown[self.step.id] = shown + 1
        self.render_results()
        self.show_first_failure(to_hint=True)  # `h` asked for it: in view, even after a pass
        self.remember()

    def action_language(self) -> None:
        self.lang = "zh" if self.lang == "en" else "en"
        self.lang_chosen = True
        if self.store.notice is not None:
            self.notice = t(self.store.notice.key, self.lang, **self.store.notice.params)
        self.refresh_all()
        self.remember()

    def action_weights(self) -> None:
        self.show_weights = not self.show_weights
        self.render_main()
        self.query_one("#doc-scroll").scroll_home(animate=False)

    def action_cycle(self) -> None:
        self.heatmap_index += 1
        if self.show_weights:
            self.render_main()

    def action_mode(self) -> None:
        self.heatmap_mode += 1
        if self.show_weights:
            self.render_main()

    def on_key(self, event: events.Key) -> None:
        """A step's own keys, as lesson.toml declares them: a setting's key cycles it, a
        question's number opens its answer box. Only on the lesson's screen (not in a box)."""
        if len(self.screen_stack) > 1 or self.closing:
            return
        if self.step_key(event.character or event.key):
            event.stop()
            event.prevent_default()

    def step_key(self, key: str) -> bool:
        step = self.step
        setting = step.setting_for_key(key)
        if setting is not None:
            values = self.settings.setdefault(step.id, step.default_settings())
            values[setting.id] = setting.next(values.get(setting.id))
            self.render_main()
            self.remember(wait=False)
            self.rerun_step()
            return True
        if key in step.question_keys() and step.questions.get(self.lang):
            self.open_answer(step.question_keys().index(key))
            return True
        return False

    def action_reset(self) -> None:
        """Put the starter's code back for this step's functions, after a yes; a backup is kept."""
        names = list(self.step.functions)
        if not names:
            self.notify(t("ui.reset_nothing", self.lang), timeout=3)
            return
        if is_notebook(self.path):  # the tutor never writes a notebook
            self.notify(t("ui.reset_notebook", self.lang), timeout=6)
            return
        from tutor.app.confirm import ConfirmScreen

        question = t("ui.reset_question", self.lang, names=", ".join(names), path=self.path.name)
        self.push_screen(
            ConfirmScreen(question, self.lang), lambda yes: self.reset_step(names) if yes else None
        )

    def reset_step(self, names: list[str]) -> None:
        from tutor.workspace.files import reset_function

        try:
            backup = reset_function(self.path, self.lesson.starter_path, names)
        except (OSError, ValueError) as exc:
            self.notify(t("ui.reset_failed", self.lang, error=exc), severity="error", timeout=6)
            return
        self.notify(t("ui.reset_done", self.lang, backup=backup.name), timeout=6)
        self.rerun_from_disk()  # the watcher sees it too; the same content is not run twice

    def action_model_answers(self) -> None:
        if self.step.questions:
            self.show_model = not self.show_model
            self.render_main()

    def action_solution(self) -> None:
        """The reference's code of this step beside the learner's, once the step has passed."""
        from tutor.app.solution import SolutionScreen
        from tutor.workspace.solution import solution_diff, step_solution

        step = self.step
        if not step.functions:
            return
        if self.status_of(step.id) != "pass":
            self.notify(t("ui.solution_locked", self.lang), timeout=4)
            return
        try:
            mine = self.path.read_text(encoding="utf-8", errors="replace")
            reference = step_solution(self.lesson, step.id)
        except OSError:
            return
        if is_notebook(self.path):
            mine = self.source[0] if self.source and self.source[0] else ""
        self.push_screen(
            SolutionScreen(
                self.lang,
                step.title[self.lang],
                solution_diff(mine, self.lesson, step.id),
                reference,
            )
        )

    def action_lessons(self) -> None:
        from tutor.app.lessons import LessonScreen
        from tutor.model.lesson import all_lessons

        progress = {
            lid: entry.get("status", {})
            for lid, entry in self.store.peek().get("lessons", {}).items()
        }
        progress[self.lesson.id] = {
            **self.saved_status,
            **{sid: r.status for sid, r in self.results.items()},
        }
        self.push_screen(
            LessonScreen(self.lang, all_lessons(), progress, self.lesson.id), self.switch_lesson
        )

    def switch_lesson(self, lesson_id: str | None) -> None:
        if lesson_id is None or lesson_id == self.lesson.id:
            return
        self.remember()
        self.switch_to = lesson_id
        self.exit()

    def get_system_commands(self, screen: Screen[Any]) -> Iterator[SystemCommand]:
        from tutor.model.lesson import all_lessons

        for lesson in all_lessons():
            if lesson.id != self.lesson.id:
                yield SystemCommand(
                    # The id in the title: the palette matches what it shows ("lab-02", "02").
                    t("ui.command_lesson", self.lang, title=lesson.title[self.lang], id=lesson.id),
                    lesson.id,
                    lambda lid=lesson.id: self.switch_lesson(lid),
                )
        # The open lesson too, said to be open: its id must not meet "No matches found".
        here = self.lesson
        yield SystemCommand(
            t("ui.command_lesson_open", self.lang, title=here.title[self.lang], id=here.id),
            here.id,
            lambda: None,
        )
        yield SystemCommand(t("ui.key_lang_long", self.lang), "l", self.action_language)
        yield SystemCommand(t("ui.key_help", self.lang), "?", self.action_help)
        yield SystemCommand(t("ui.key_quit", self.lang), "q", self.exit)

    def action_command_palette(self) -> None:
        from textual.command import CommandPalette

        # is_open takes an App[object]: App is invariant in its result type, ours is None.
        if not CommandPalette.is_open(self):  # type: ignore[arg-type]
            self.push_screen(
                CommandPalette(
                    id="--command-palette", placeholder=t("ui.command_search", self.lang)
                )
            )

    def action_help(self) -> None:
        from tutor.app.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
        else:
            self.push_screen(HelpScreen(self.lang))

    def action_edit(self) -> None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            self.notify(t("ui.no_editor", self.lang, path=self.path), timeout=5)
            return
        from tutor.workspace.editor import editor_command, function_line

        try:
            source = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            source = ""
        # A notebook's lines are not the file's: it opens at its top.
        line = None if is_notebook(self.path) else function_line(source, self.step.functions)
        try:
            command = editor_command(editor, self.path, line)
            with self.suspend():
                subprocess.call(command)
        except (OSError, ValueError, SuspendNotSupported) as exc:
            self.notify(
                t("ui.editor_failed", self.lang, editor=editor, error=exc), severity="error"
            )
            return
        self.rerun_from_disk()
