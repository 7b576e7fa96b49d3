"""The app's state and what is read from it: the lesson, the current step, the results, the
answers, the settings, the progress saved (one class; the panels, the checker and the keys
build on it).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from textual.app import App
from textual.timer import Timer

from tutor.engine.client import (
    EngineClient,
)
from tutor.model.lesson import Lesson, SettingValue, Step
from tutor.model.results import JSONDict, StepResult
from tutor.model.view_items import Item
from tutor.text.i18n import t
from tutor.text.safe_text import one_line, visible
from tutor.workspace.store import AnswerSheet, Section, State, Store
from tutor.workspace.unchanged import PassedSteps

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPINNER_AFTER = 0.15  # s: a run that ends sooner shows no spinner at all, just the new marks
GATHER = 0.08  # s: step results arriving this close together are drawn in one frame
ANSWERS_EVERY = 1.0  # s: how often a step with questions reads the answers file again


def chosen_settings(step: Step, saved: object) -> dict[str, SettingValue]:
    """A step's settings: the saved values that are still among its values, the defaults else."""
    values = step.default_settings()
    for setting in step.settings:
        if isinstance(saved, dict) and saved.get(setting.id) in setting.values:
            values[setting.id] = saved[setting.id]
    return values


class LessonApp(App[None]):
    def __init__(
        self,
        *,
        lesson: Lesson,
        path: Path,
        created: bool,
        step_id: str,
        lang: str,
        store: Store,
        poll: bool | None = None,
        timeout: float | None = None,
        start_worker: bool = True,
        worker: EngineClient | None = None,
        lang_chosen: bool = False,
    ):
        super().__init__()
        self.lesson = lesson
        self.path = path
        self.created = created
        self.lang = lang
        # Only a language the learner chose (`l`, --lang) is remembered: one taken from the
        # locale or the default must not override LANG for the next run (or --help).
        self.lang_chosen = lang_chosen
        self.store = store
        self.poll = poll
        self.timeout = timeout
        self.start_worker = start_worker
        self.step_index = lesson.step_ids().index(step_id)
        self.results: dict[str, StepResult] = {}
        self.running: set[str] = set()
        self.worker_state = "loading"
        self.full_messages = (
            False  # failing checks' messages cut to four lines (`f` shows them whole)
        )
        self.watch_state = "starting"
        self.watch_error = ""
        self.show_weights = False
        self.heatmap_index = 0
        self.heatmap_mode = 0
        self.spin = 0
        self.notice = ""
        self.said_protections = False  # which protections are off on this platform: said once
        self.worker: EngineClient | None = worker  # may come already started (see main.run_app)
        self.closing = False
        self.switch_to: str | None = (
            None  # a lesson chosen in the switcher: main.run_app opens it next
        )
        self.shown: dict[str, object] = {}  # widget id -> what it shows now (see update_panel)
        self.versions: dict[str, int] = {}  # step id -> how many results it has had
        self.shown_status: dict[
            str, str
        ] = {}  # the last verdict drawn, kept while a new run is out
        self.checked_ids = {s.id for s in lesson.checked_steps}
        self.flush_timer: Timer | None = None
        self.run_started = 0.0
        self.running_digest = (
            ""  # the content the checks in flight belong to (for the benchmark's trace)
        )
        self.new_verdict = False  # the current step has had a verdict not yet scrolled to
        saved = store.load().get("lessons", {}).get(lesson.id, {})
        self.hints_shown: dict[str, int] = dict(saved.get("hints", {}))
        # step id -> its settings now ({setting id: value}), the saved ones where still valid
        self.settings: dict[str, dict[str, SettingValue]] = {
            s.id: chosen_settings(s, saved.get("settings", {}).get(s.id))
            for s in lesson.steps
            if s.settings
        }
        self.drew_weights: set[str] = set()  # steps whose results have had weights to draw
        self.views: dict[
            str, list[Item]
        ] = {}  # step id -> the last view its judge sent (kept through a re-run)
        self.show_model = False
        self.answers: dict[str, dict[int, str]] = self.read_answers()  # step id -> {index: answer}
        self.answers_checked = 0.0  # when the answers file was last read (see tick)
        self.unsaved: dict[
            tuple[str, int], tuple[str, str]
        ] = {}  # (step, index) -> (text, base) of a save that failed
        # Textual converts colours for the terminal itself: the heatmap can always paint in full colour.
        self.color_hint = "none" if os.environ.get("NO_COLOR") else "truecolor"
        self.source: tuple[str | None, bytes] | None = (
            None  # the file content the current verdicts are for
        )
        self.saved_status: dict[str, str] = dict(saved.get("status", {}))
        # Steps whose last run passed, and on what code: a save that leaves it as it was shows
        # that pass again instead of running the step (workspace/unchanged.py).
        self.passed = PassedSteps(path.parent)
        self.submitted: tuple[str, dict[str, str]] = ("", {})  # the last run's text, settings
        self.saver = ThreadPoolExecutor(max_workers=1, thread_name_prefix="save")  # see remember
        if store.notice is not None:
            self.notice = t(store.notice.key, lang, **store.notice.params)

    @property
    def step(self) -> Step:
        return self.lesson.steps[self.step_index]

    def step_title(self) -> str:
        return self.step.title[self.lang]

    def after_pass(self, step: Step) -> str:
        """What comes after this step has passed: the next step, or the end of the lab; once every
        checked step passes, the lab's summary (the questions left, the other labs)."""
        lang, steps = self.lang, self.lesson.steps
        index = steps.index(step)
        parts = [
            t("ui.after_pass_next", lang, title=steps[index + 1].title[lang])
            if index + 1 < len(steps)
            else t("ui.after_pass_last", lang)
        ]
        checked = self.lesson.checked_steps
        if all(self.status_of(s.id) == "pass" for s in checked):
            asked = [s for s in steps if s.questions.get(lang)]
            done = {
                s.id: sum(1 for a in self.answers.get(s.id, {}).values() if a.strip())
                for s in asked
            }
            total = sum(len(s.questions[lang]) for s in asked)
            left = [s.title[lang] for s in asked if done[s.id] < len(s.questions[lang])]
            if left:
                parts.append(
                    t(
                        "ui.lab_done",
                        lang,
                        n=len(checked),
                        answered=sum(done.values()),
                        total=total,
                        left=t("cli.ids_sep", lang).join(left),
                    )
                )
            else:
                parts.append(t("ui.lab_done_all", lang, n=len(checked)))
        return "\n\n".join(parts)

    def status_of(self, step_id: str) -> str:
        if step_id in self.running:
            return "running"
        if step_id in self.results:
            return self.results[step_id].status
        return self.saved_status.get(step_id, "todo")

    def remember(self, wait: bool = True) -> None:
        lesson_id = self.lesson.id
        step_id = self.step.id
        status = {s: r.status for s, r in self.results.items()}
        hints = dict(self.hints_shown)
        settings = {sid: dict(v) for sid, v in self.settings.items()}
        lang = self.lang
        lang_chosen = self.lang_chosen

        def change(state: State) -> None:
            if lang_chosen:
                state["lang"] = lang
            state["lesson"] = lesson_id
            entry = state.setdefault("lessons", {}).setdefault(lesson_id, {})
            entry["step"] = step_id
            entry.setdefault("status", {}).update(status)
            entry.setdefault("hints", {}).update(hints)
            if settings:
                entry.setdefault("settings", {}).update(settings)

        def save() -> None:
            try:
                self.store.update(change)
            except OSError as exc:  # a full disk or a read-only home must not stop the lesson
                self.notice = t("ui.os_error", lang, error=exc.strerror or exc)

        # A save fsyncs twice (ms on a local disk, more on NFS), after a verdict it need not hold
        # up the next frame. One writer thread keeps the saves in order; a key waits for its own,
        # so what it changed is on disk when it returns.
        try:
            saved = self.saver.submit(save)
        except RuntimeError:  # the app has closed its writer: save here
            save()
            return
        if wait:
            saved.result()
        else:  # a bug in the save still stops the app, as it did when saves ran here
            saved.add_done_callback(self._raise_save_error)

    def _raise_save_error(self, done: Future[None]) -> None:
        if done.exception() is not None:
            self.call_later(done.result)

    def answers_shown_path(self) -> str:
        """The answers file as the learner finds it from here (attn-lab/lm3-l3-answers.md)."""
        path = self.store.workspace / self.lesson.answers_file
        try:
            return str(path.relative_to(Path.cwd()))
        except ValueError:
            return str(path)

    def shown_path(self) -> str:
        try:
            return one_line(self.path.relative_to(Path.cwd()))
        except ValueError:
            return one_line(self.path)

    def notify(self, message: str, **kwargs: Any) -> None:
        # A toast says an error's text (a file name, an OS message): shown, never sent raw.
        super().notify(visible(message), **kwargs)

    def draws_weights(self) -> bool:
        """Whether this step has weights to draw, or to wait for: lesson.toml names their step,
        or this step's results have had some."""
        return bool(self.step.weights_declared) or self.step.weights_from in self.drew_weights

    def heatmaps_for_step(self) -> list[Item] | None:
        """The weights panel's entries: from the step lesson.toml names (weights_from), its own
        by default; None while that step has given no result yet."""
        result = self.results.get(self.step.weights_from)
        return None if result is None else (result.visuals.get("heatmaps") or [])

    def params(self) -> dict[str, JSONDict]:
        """Each step's current settings, as its probe reads them (ctx.params)."""
        return {sid: dict(values) for sid, values in self.settings.items()}

    def updating(self) -> bool:
        """A run of the current step is out while an older view of it is on screen (shown dim
        "updating…" after SPINNER_AFTER, as the spinner is)."""
        return (
            self.step.id in self.running
            and self.step.id in self.views
            and time.monotonic() - self.run_started > SPINNER_AFTER
        )

    def answer_sheet(self) -> AnswerSheet:
        """The lesson's answers file, its headings in the current language."""
        lang = self.lang
        asked = [s for s in self.lesson.steps if s.questions]
        return AnswerSheet(
            name=self.lesson.answers_file,
            title=t("store.answers_title", lang, lesson=self.lesson.id),
            note=t("store.answers_note", lang),
            sections=tuple(
                Section(s.id, s.title.get(lang, s.id), tuple(s.questions.get(lang, ())))
                for s in asked
            ),
            question=t("store.answers_question", lang),  # "{n}" left in: the store numbers them
            legacy_step=asked[0].id if asked else "",
        )

    def read_answers(self) -> dict[str, dict[int, str]]:
        try:
            return self.store.read_answers(self.answer_sheet())
        except (OSError, ValueError):
            return {}
