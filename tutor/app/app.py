"""The Textual app: the lesson's steps, the learner's verdicts, the weights they compute.

It never imports torch: checks run in the worker process (tutor.engine), and
come back as plain data that is rendered here in the current language.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult, SuspendNotSupported, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.visual import visualize
from textual.widgets import OptionList, ProgressBar, Static

from tutor.app import terminal_guard
from tutor.app.trace import digest, trace
from tutor.app.trace import enabled as trace_enabled
from tutor.app.widgets import (
    DocScroll,
    DrawnOnce,
    Footer,
    Progress,
    ScrollingStatic,
    StepList,
    step_extra,
)
from tutor.engine.client import (
    DEFAULT_TIMEOUT,
    Worker,
    WorkerGone,
    decode_source,
    too_large,
    unreadable_results,
)
from tutor.engine.protocol import Done, Event, Gone, Ready, StepVerdict
from tutor.model.lesson import Lesson, SettingValue, Step
from tutor.model.progress import step_status
from tutor.model.results import JSONDict, StepResult
from tutor.model.view_items import Item
from tutor.render.doc import render_markdown
from tutor.render.heatmap import heatmap
from tutor.render.verdicts import (
    MESSAGE_LINES,
    hints_block,
    load_syntax,
    shown_of,
    status_mark,
    step_results,
)
from tutor.render.views import Packed, heatmap_words, panel_word, text_of
from tutor.render.wrap import Wrapped
from tutor.text.i18n import t
from tutor.text.safe_text import one_line, visible
from tutor.workspace.store import AnswerSheet, Section, State, Store
from tutor.workspace.watch import FileWatcher, WatchError

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


def breakpoint_class(size: int, breakpoints: list[tuple[int, str]]) -> str | None:
    """The class Textual gives a screen of this width (or height) for these breakpoints: that of
    the largest breakpoint the size reaches, None below them all."""
    reached = [(at, name) for at, name in breakpoints if size >= at]
    return max(reached)[1] if reached else None


class WorkerEvent(Message):
    def __init__(self, event: Event):
        super().__init__()
        self.event = event


class TutorApp(App[None]):
    CSS_PATH = "tutor.tcss"
    TITLE = "attn-tutor"
    # Ctrl+P: the command palette, with our own commands in the learner's language (see
    # get_system_commands) and our own placeholder: Textual's are English only.
    COMMAND_PALETTE_BINDING = "ctrl+p"
    # Classes on the screen by its size, for the layout in tutor.tcss.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (72, "-normal"), (100, "-wide"), (120, "-xwide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]

    BINDINGS = [
        Binding("n", "step(1)", id="next", show=False),
        Binding("p", "step(-1)", id="prev", show=False),
        Binding("r", "rerun", id="rerun", show=False),
        Binding("e", "edit", id="edit", show=False),
        Binding("h", "hint", id="hint", show=False),
        Binding("l", "language", id="language", show=False),
        Binding("w", "weights", id="weights", show=False),
        Binding("b", "cycle", id="cycle", show=False),
        Binding("d", "mode", id="mode", show=False),
        # A step's own keys (its settings, its questions' 1–N) are declared in lesson.toml:
        # see on_key and step_key.
        Binding("m", "model_answers", id="model-answers", show=False),
        Binding("R", "reset", id="reset", show=False),
        Binding("s", "solution", id="solution", show=False),
        Binding("L", "lessons", id="lessons", show=False),
        Binding("f", "full_messages", id="full-messages", show=False),
        Binding("question_mark", "help", id="help", show=False),
        Binding("q", "quit", id="quit", show=False),
        Binding("ctrl+c", "quit", id="quit-ctrl-c", show=False, priority=True),
    ]

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
        worker: Worker | None = None,
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
        self.worker: Worker | None = worker  # may come already started (see main.run_app)
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
        self.saver = ThreadPoolExecutor(max_workers=1, thread_name_prefix="save")  # see remember
        if store.notice is not None:
            self.notice = t(store.notice.key, lang, **store.notice.params)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        # Textual sets the breakpoint classes on the first resize, after the first layout: set
        # them now, so that the lesson text is laid out once, at its final width.
        width, height = self.size
        on = {
            breakpoint_class(width, self.HORIZONTAL_BREAKPOINTS),
            breakpoint_class(height, self.VERTICAL_BREAKPOINTS),
        }
        self.screen.update_classes(
            {
                name: name in on
                for _, name in self.HORIZONTAL_BREAKPOINTS + self.VERTICAL_BREAKPOINTS
            },
            animate=False,
        )
        yield Static(id="title")
        with Horizontal(id="body"):
            with Vertical(id="side"):
                yield StepList(id="steps")
                yield Progress(total=len(self.lesson.checked_steps), id="progress")
                yield Static(id="progress-label")
                yield Static(id="fileinfo")
            with Vertical(id="main"):
                with DocScroll(id="doc-scroll"):
                    yield Static(id="doc")
                yield ScrollingStatic(id="results")
        yield Footer(id="footer")

    def on_mount(self) -> None:
        self.title = "attn-tutor"
        if self.start_worker:
            self.start_checker()
            watcher = FileWatcher(self.path, poll=self.poll)
            self.watch_state = watcher.mode  # on the first screen already
        self.refresh_all()
        # The text has the focus: the arrows and PageUp/PageDown scroll what the learner reads;
        # the step list moves with n/p, or with the arrows once Tab has focused it.
        self.query_one("#doc-scroll").focus()
        self.set_interval(0.1, self.tick)
        self.call_after_refresh(trace, "first_screen")
        self.call_after_refresh(self.resume_gc)
        if self.start_worker and self.worker is not None:  # start_checker made it
            self.call_after_refresh(self.worker.go)  # torch's import waited for this (main.run_app)
            # The OS watch takes tens of ms to set up, pygments ~100 ms to load: after the
            # first screen, while the worker imports torch.
            self.call_after_refresh(self.watch_file, watcher)
            self.call_after_refresh(threading.Thread(target=load_syntax, daemon=True).start)
        # A closed SSH link (SIGHUP) or a kill (SIGTERM) ends the app like q does:
        # terminal restored, worker stopped, progress saved; and, however the terminal
        # behaves, within terminal_guard's deadline.
        loop = asyncio.get_running_loop()
        if terminal_guard.installed:
            terminal_guard.watch(self, loop)
            return
        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                loop.add_signal_handler(sig, self.exit)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread (tests), or no such signal here

    @staticmethod
    def resume_gc() -> None:
        """After the first screen: the GC that main.run_app paused, without the start-up's objects
        (a few thousand of them are garbage cycles, never freed: ~0.3 MB)."""
        if not gc.isenabled():
            gc.freeze()
            gc.enable()

    def exit(
        self,
        result: None = None,
        return_code: int = 0,
        message: RenderableType | None = None,
    ) -> None:
        self.closing = (
            True  # late worker events and timer ticks must not touch a screen being torn down
        )
        if terminal_guard.installed:
            terminal_guard.DEADLINE.arm(terminal_guard.QUIT_GRACE)  # a quit ends, whatever
        super().exit(result, return_code, message)

    def on_unmount(self) -> None:
        self.closing = True
        if self.worker and self.switch_to is None:  # on a switch the next lesson's app keeps it
            self.worker.close()
        self.saver.shutdown(wait=True)  # the last progress is on disk before the app ends

    # ------------------------------------------------------------------ state helpers

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

    # ------------------------------------------------------------------ rendering
    # A layout of the screen costs more than drawing a panel: panels are updated only when
    # what they show has changed, and lay the screen out only when their height changes.

    def update_panel(
        self, widget_id: str, signature: object, make: Callable[[], RenderableType]
    ) -> None:
        if self.shown.get(widget_id) == signature:
            return
        self.shown[widget_id] = signature
        self.show_in(widget_id, make())

    def show_in(self, widget_id: str, content: RenderableType, key: object = None) -> None:
        """Put `content` in a Static, with a layout only if that changes the Static's height."""
        widget = self.query_one(widget_id, Static)
        if isinstance(widget, ScrollingStatic):
            widget.update(content, key=key)  # never a layout for its height: see ScrollingStatic
            return
        content = DrawnOnce(content)
        width, height = widget.content_size
        fixed = (
            widget.styles.height is not None and not widget.styles.height.is_auto
        )  # #fileinfo: 1fr
        # Measured the way the layout would measure it; DrawnOnce keeps the lines for the paint.
        same = bool(width) and (
            fixed
            # Textual's own layout passes a widget's styles here (Widget._get_content_height)
            or visualize(widget, content).get_height(widget.styles, width) == height  # type: ignore[arg-type]
        )
        widget.update(content, layout=not same)

    def refresh_all(self) -> None:
        self.shown.clear()
        self.render_title()
        self.render_steps()
        self.render_progress()
        self.render_fileinfo()
        self.render_main()
        self.render_results()
        self.query_one("#footer", Footer).show(self.lang)

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

    def render_title(self) -> None:
        lesson = self.lesson
        text = Text.assemble(
            ("attn-tutor", "bold"), " · ", (lesson.id, "cyan"), " · ", lesson.title[self.lang]
        )
        self.query_one("#title", Static).update(text)

    def render_steps(self) -> None:
        marks: dict[str, Text] = {}
        for s in self.lesson.steps:
            status = self.status_of(s.id)
            if not s.checked:
                # Dim: it does not count towards progress. A step with questions is done once
                # each has an answer; an experiment shows how its run on the learner's code went.
                # · until then (see tutor.model.progress).
                run = self.results.get(s.id)
                shown_status = step_status(
                    s, run.status if run else None, self.answers.get(s.id, {})
                )
                marks[s.id] = (
                    Text("·", style="dim")
                    if shown_status in (None, "todo")
                    else Text(
                        status_mark(shown_status).plain,
                        style="dim " + str(status_mark(shown_status).style),
                    )
                )
            elif status == "running" and time.monotonic() - self.run_started > SPINNER_AFTER:
                marks[s.id] = Text(SPINNER[self.spin % len(SPINNER)], style="yellow")
            elif status == "running":
                marks[s.id] = status_mark(self.shown_status.get(s.id, "todo"))
            else:
                marks[s.id] = status_mark(status)
        self.query_one("#steps", StepList).show(self.lesson, marks, self.step_index, self.lang)

    def render_progress(self) -> None:
        checked = [s.id for s in self.lesson.checked_steps]
        passed = sum(self.status_of(s) == "pass" for s in checked)
        self.query_one("#progress", ProgressBar).update(progress=passed)
        self.update_panel(
            "#progress-label",
            (passed, self.lang),
            lambda: Wrapped(
                t("ui.progress", self.lang, passed=passed, total=len(checked)), style="dim"
            ),
        )

    def render_fileinfo(self) -> None:
        lang = self.lang
        parts: list[RenderableType] = [
            Wrapped(t("ui.file", lang, path=self.shown_path()), style="bold")
        ]
        watch = {"inotify": "ui.watch_inotify", "polling": "ui.watch_polling"}.get(self.watch_state)
        if self.watch_state == "failed":
            parts.append(
                Wrapped(t("ui.watch_failed", lang, error=self.watch_error), style="bold red")
            )
        elif watch:
            parts.append(Wrapped(t(watch, lang), style="dim"))
        worker = {
            "loading": "ui.worker_loading",
            "ready": "ui.worker_ready",
            "gone": "ui.worker_gone",
        }[self.worker_state]
        if (
            self.running
            and self.worker_state == "ready"
            and time.monotonic() - self.run_started > SPINNER_AFTER
        ):
            worker = "ui.worker_running"
        parts.append(
            Wrapped(t(worker, lang), style="bold red" if self.worker_state == "gone" else "dim")
        )
        if self.notice:
            parts.append(Text(self.notice, style="yellow"))
        signature = (lang, self.watch_state, self.watch_error, worker, self.notice)
        self.update_panel("#fileinfo", signature, lambda: Group(*parts))

    def render_main(self) -> None:
        step = self.step
        signature = (
            step.id,
            self.lang,
            self.show_weights,
            self.versions.get(step.id),
            self.versions.get(step.weights_from),
            self.heatmap_index,
            self.heatmap_mode,
            repr(self.settings.get(step.id)),
            repr(sorted(self.answers.get(step.id, {}).items())),
            self.show_model,
            self.updating(),
        )
        if self.shown.get("#doc") == signature:
            return
        self.shown["#doc"] = signature
        if self.show_weights and self.draws_weights():
            self.show_in("#doc", self.weights_view())
            return
        text = self.lesson.text(self.step.id, self.lang)
        heading, _, rest = text.partition("\n") if text.startswith("# ") else ("", "", text)
        body: list[RenderableType] = []
        if self.show_weights:  # `w` is on, and this step has none: its text, and why
            body += [Wrapped(t("ui.weights_none_here", self.lang), style="dim"), Text("")]
        if self.step_index == 0 and self.created:
            body.append(
                Wrapped(t("ui.file_created", self.lang, path=self.shown_path()), style="bold green")
            )
        if heading:
            body.append(render_markdown(heading))
        extra = step_extra(self, self.views.get(self.step.id))
        if extra is not None:
            # The step's introduction (its first paragraph), then the live view, which is what
            # the step is about, then the rest: the learner reads what the view is before it.
            intro, _, rest = rest.strip("\n").partition("\n\n")
            body += [render_markdown(intro), Text(""), extra, Text("")]
        body.append(render_markdown(rest))
        self.show_in("#doc", Group(*body))

    def render_results(self) -> None:
        step = self.step
        lang = self.lang
        # "Running" is shown only for runs long enough to notice.
        running = step.id in self.running and time.monotonic() - self.run_started > SPINNER_AFTER
        hints_shown = self.hints_shown.get(step.id, 0)
        shown = shown_of(self.results.get(step.id))
        lines = self.message_lines()
        signature = (step.id, lang, shown, running, hints_shown, self.full_messages, lines)
        if self.shown.get("#results") == signature:
            return  # the same verdicts as on screen (a save that changed nothing they say)
        self.shown["#results"] = signature
        # A checked step's last hint is its code, whole (lesson.toml's convention).
        hints = hints_block(
            step.hints.get(lang, ()),
            self.hints_shown.get(step.id, 0),
            lang,
            last_is_solution=step.checked and bool(step.functions),
        )
        failed = self.results.get(step.id) if not step.checked else None
        if failed is not None and failed.status == "pass":
            failed = None  # an experiment that ran: its view is on screen, nothing to say here
        if step.checked or failed is not None:
            content = step_results(
                self.results.get(step.id),
                lang,
                running=running,
                hints=hints,
                full=self.full_messages,
                after_pass=self.after_pass(step),
                message_lines=lines,
            )
        else:
            content = Group(
                *(
                    x
                    for x in (Wrapped(t("ui.not_checked", lang), style="dim"), hints)
                    if x is not None
                )
            )
        self.show_in("#results", content, key=signature)
        # An experiment has no verdicts: its screen gets the whole height unless a hint is open
        # or its run failed.
        self.query_one("#results").display = step.checked or failed is not None or hints is not None

    def message_lines(self) -> int:
        """How many lines a failing check's message may take: four at 80×24 (the panel holds
        about eight), the room there is less the status line and a hint's start on a larger
        screen."""
        panel = self.query_one("#results", ScrollingStatic)
        return max(MESSAGE_LINES, panel.size.height - 4)

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.render_results)  # the panel's new height, once laid out

    def show_first_failure(self, *, to_hint: bool = False) -> None:
        """Scroll the results to what to act on: the first failing check near the top (under the
        step's status line), then the newest hint as far as it fits without pushing that check out
        of view. After each run (an old scroll position would hide the new failure), a step
        change and `h`."""
        panel = self.query_one("#results", ScrollingStatic)
        failure = panel.anchor_lines("failure")
        y = max(0, failure[0] - 1) if failure else 0
        hint = panel.anchor_lines("hint")
        result = self.results.get(self.step.id)
        if result is not None and result.status == "pass" and not to_hint:
            hint = None  # passed: what to act on is the line that says what next, at the top
        if hint is not None:
            # The hints run oldest first: the newest is in view whole if it fits, else from its
            # start.
            first, last = hint
            height = panel.scrollable_content_region.height
            y = max(y, min(last - height + 1, first))
            # After a run the failure comes first; after `h` the hint, if both do not fit.
            if failure is not None and (not to_hint or last < failure[0] + height):
                y = min(y, failure[0])
        panel.scroll_to(y=y, animate=False, immediate=True)

    def draws_weights(self) -> bool:
        """Whether this step has weights to draw, or to wait for: lesson.toml names their step,
        or this step's results have had some."""
        return bool(self.step.weights_declared) or self.step.weights_from in self.drew_weights

    def heatmaps_for_step(self) -> list[Item] | None:
        """The weights panel's entries: from the step lesson.toml names (weights_from), its own
        by default; None while that step has given no result yet."""
        result = self.results.get(self.step.weights_from)
        return None if result is None else (result.visuals.get("heatmaps") or [])

    def weights_view(self) -> RenderableType:
        lang = self.lang
        maps = self.heatmaps_for_step()
        if not maps:
            # Weights are to come here (render_main asks only then): none has run yet, or the
            # last run did not get that far.
            if self.worker_state == "loading":
                return Wrapped(
                    t("ui.worker_loading", lang), style="dim"
                )  # not "no weights yet": nothing ran
            return Wrapped(t("ui.weights_waiting", lang), style="dim")
        index = self.heatmap_index % len(maps)
        entry = maps[index]
        mode = ("learner", "reference", "diff")[self.heatmap_mode % 3]
        learner = entry.get("learner")
        note = None
        if learner is None:
            learner, mode = entry["reference"], "reference"
            # The judge may say why it has none (kit.weights(..., why=...)).
            why = (
                text_of(entry["why"], lang)
                if entry.get("why")
                else t("ui.weights_unavailable", lang)
            )
            note = Wrapped(why, style="yellow")
        nan = float("nan")

        def as_floats(m: list[list[float | None]]) -> list[list[float]]:
            return [[nan if v is None else v for v in row] for row in m]

        label = t(entry["label"]["key"], lang, **entry["label"]["params"])
        # The panel's words, or the entry's own where its matrix is not attention weights.
        words = entry.get("words") or {}
        axes, legend = heatmap_words(lang, words)
        title = t(
            "ui.weights_title",
            lang,
            title=panel_word(lang, words, "weights"),
            label=label,
            n=index + 1,
            total=len(maps),
        )
        renderable = heatmap(
            as_floats(learner),
            reference=as_floats(entry["reference"]),
            mode=mode,
            title=title,
            axis_labels=axes,
            color_system_hint=self.color_hint,
            legend=legend,
        )
        next_key = (
            [t("ui.weights_key_next", lang, what=t("ui.batch_or_head", lang))]
            if len(maps) > 1
            else []
        )
        # b only where it changes the map
        keys = Packed(
            "",
            [
                t("ui.weights_key_text", lang),
                *next_key,
                panel_word(lang, words, "weights_key_mode"),
            ],
        )
        return Group(*(x for x in (note, renderable, keys) if x is not None))

    # ------------------------------------------------------------------ the checker

    def start_checker(self) -> None:
        self.worker_state = "loading"
        if self.worker is None or self.worker.proc is None or self.worker.proc.poll() is not None:
            self.worker = Worker(
                None, timeout=self.timeout or DEFAULT_TIMEOUT, log=self.store.folder / "worker.log"
            )
            self.worker.start()
        self.worker.attach(self._post_event)
        if self.worker.ready.is_set():  # a worker kept from the lesson before a switch
            self.worker_state = "ready"

    def _post_event(self, event: Event) -> None:  # from the worker's reader thread
        self.post_message(WorkerEvent(event))

    def run_checks(self, text: str | None, raw: bytes) -> None:
        self.source = (text, raw)
        checked = [s.id for s in self.lesson.checked_steps]
        # An experiment runs the learner's code too, but only while it is on screen.
        extra = [] if self.step.checked else [self.step.id]
        big = too_large(len(raw))
        if text is None or big is not None:
            problem: JSONDict | None
            if big:
                key, problem = "failure.too_large", big
            else:
                key, problem = "failure.encoding", decode_source(raw)[1]
                assert problem is not None  # the text is None: decode_source says why
            for result in unreadable_results(self.lesson, key, problem):
                self.store_result(result)
            self.running.clear()
            self.after_results()
            return
        if trace_enabled():
            self.running_digest = digest(text)
        if self.worker is None or self.worker_state == "gone":
            return
        try:
            self.worker.submit(
                self.lesson.id, str(self.path), text, checked + extra, params=self.params()
            )
        except WorkerGone:
            self.worker_state = "gone"
            self.render_fileinfo()
            return
        self.running = set(checked + extra)
        self.run_started = time.monotonic()
        self.render_steps()
        self.render_results()
        self.render_fileinfo()

    def params(self) -> dict[str, JSONDict]:
        """Each step's current settings, as its probe reads them (ctx.params)."""
        return {sid: dict(values) for sid, values in self.settings.items()}

    def rerun_step(self) -> None:
        """The current step again with its new settings, and whatever else is still running (a
        new run supersedes the one in flight)."""
        if (
            self.source is None
            or self.source[0] is None
            or self.worker is None
            or self.worker_state == "gone"
        ):
            return
        steps = [s.id for s in self.lesson.steps if s.id in self.running or s.id == self.step.id]
        try:
            self.worker.submit(
                self.lesson.id, str(self.path), self.source[0], steps, params=self.params()
            )
        except WorkerGone:
            self.worker_state = "gone"
            self.render_fileinfo()
            return
        if not self.running:
            self.run_started = time.monotonic()
        self.running |= set(steps)
        self.render_steps()
        self.render_results()

    def updating(self) -> bool:
        """A run of the current step is out while an older view of it is on screen (shown dim
        "updating…" after SPINNER_AFTER, as the spinner is)."""
        return (
            self.step.id in self.running
            and self.step.id in self.views
            and time.monotonic() - self.run_started > SPINNER_AFTER
        )

    @on(WorkerEvent)
    def on_worker_event(self, message: WorkerEvent) -> None:
        if self.closing:
            return
        event = message.event
        if isinstance(event, Ready):
            self.worker_state = "ready"
            if event.off and not self.said_protections:  # once: the worker may be restarted
                self.said_protections = True
                from tutor.engine.confine.platform_probe import describe_off

                self.notify(describe_off(event.off, self.lang), severity="warning", timeout=10)
        elif isinstance(event, StepVerdict):
            self.store_result(event.result)
            if not self.running & self.checked_ids:
                self.flush()  # the last verdict of the save: draw now
            elif self.flush_timer is None:
                self.flush_timer = self.set_timer(GATHER, self.flush)
            return
        elif isinstance(event, Done):
            # The step that emptied `running` was drawn (and saved, and traced) at once: unless a
            # step never came back or a gathered frame is still pending, there is nothing to draw.
            if self.running or self.flush_timer is not None:
                self.running.clear()
                self.flush()
            return
        elif isinstance(event, Gone):
            self.worker_state = "gone"
            self.running.clear()
        self.render_fileinfo()
        self.render_steps()

    def store_result(self, result: StepResult) -> None:
        if result.id == self.step.id:
            self.new_verdict = True  # after_results scrolls to its first failure
        self.results[result.id] = result
        # What is on screen belongs to the file as it is now: a run without a view (the code
        # raised, the file does not load) takes the last one away.
        if "view" in result.visuals:
            self.views[result.id] = result.visuals["view"]
        else:
            self.views.pop(result.id, None)
        if result.visuals.get("heatmaps"):
            self.drew_weights.add(result.id)
        self.versions[result.id] = self.versions.get(result.id, 0) + 1
        self.running.discard(result.id)

    def apply_results(self, results: list[StepResult]) -> None:
        """Show verdicts that came from elsewhere (tests and snapshots feed recorded ones)."""
        for result in results:
            self.store_result(result)
        self.running.clear()
        self.worker_state = "ready"
        self.after_results()

    def flush(self) -> None:
        if self.flush_timer is not None:
            self.flush_timer.stop()
            self.flush_timer = None
        if not self.closing:
            self.after_results()

    def after_results(self) -> None:
        self.shown_status.update({sid: r.status for sid, r in self.results.items()})
        self.render_steps()
        self.render_progress()
        self.render_results()
        if self.new_verdict:
            self.new_verdict = False
            self.show_first_failure()
        self.render_fileinfo()
        self.render_main()  # drawn again only if what it shows has changed (its signature)
        if not self.running:
            self.call_after_refresh(
                self.remember, wait=False
            )  # after the paint, and not in the way of the next
        checked_running = self.running & {s.id for s in self.lesson.checked_steps}
        if self.running_digest and not checked_running:
            self.call_after_refresh(
                trace,
                "verdicts",
                digest=self.running_digest,
                statuses={s: r.status for s, r in self.results.items()},
            )
            self.running_digest = ""

    @work(exclusive=True, group="watch")
    async def watch_file(self, watcher: FileWatcher) -> None:
        try:
            async for saved in watcher.changes(initial=True, missing=True):
                if saved is None:
                    self.file_gone(self.read_error())
                else:
                    self.run_checks(saved.text, saved.raw)
        except WatchError as exc:
            self.watch_state = "failed"
            self.watch_error = str(exc.params.get("error", exc))
            self.render_fileinfo()
            self.rerun_from_disk()

    def rerun_from_disk(self) -> None:
        try:
            raw = self.path.read_bytes()
        except OSError as exc:
            self.file_gone(str(exc.strerror or exc))
            return
        text, _ = decode_source(raw)
        self.run_checks(text, raw)

    def read_error(self) -> str:
        """Why the file cannot be read now, as the OS says it."""
        try:
            self.path.read_bytes()
        except OSError as exc:
            return str(exc.strerror or exc)
        return os.strerror(errno.ENOENT)  # gone while the watcher looked, back since

    def file_gone(self, error: str) -> None:
        """The file cannot be read (moved away, deleted): no verdict, view or weights of the
        content it had stays on screen; each checked step says so until it is back."""
        self.source = None
        self.views.clear()
        for step in self.lesson.steps:
            if not step.checked and self.results.pop(step.id, None) is not None:
                self.versions[step.id] = self.versions.get(step.id, 0) + 1  # redrawn
        params = {"path": self.shown_path(), "error": error}
        for result in unreadable_results(self.lesson, "failure.missing", params):
            self.store_result(result)
        self.running.clear()
        self.after_results()

    def tick(self) -> None:
        if (
            self.step.questions
            and not self.closing
            and time.monotonic() - self.answers_checked > ANSWERS_EVERY
        ):
            self.reread_answers()  # edits made in the file show up while the step is on screen
        if (
            self.running
            and not self.closing
            and time.monotonic() - self.run_started > SPINNER_AFTER
        ):
            self.spin += 1
            self.render_steps()
            self.render_results()
            self.render_fileinfo()
            if not self.step.checked or self.step.settings:
                self.render_main()  # its "updating…" line (drawn only when it changes)

    # ------------------------------------------------------------------ actions

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

    def open_answer(self, index: int) -> None:
        from tutor.app.answer import AnswerScreen  # TextArea: imported when first asked for

        step = self.step
        questions = step.questions.get(self.lang, ())
        if index >= len(questions):
            return
        self.reread_answers()  # the learner may have edited the file since
        # An answer that could not be saved is offered again, against what the file held then.
        if (step.id, index) in self.unsaved:
            text, base = self.unsaved[(step.id, index)]
        else:
            text = base = self.answers.get(step.id, {}).get(index, "")
        self.push_screen(
            AnswerScreen(index + 1, questions[index], text, self.lang),
            lambda new: self.save_answer(step.id, index, new, base),
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

    def reread_answers(self) -> None:
        """The answers as the file holds them now: the learner may edit it in their editor.
        Read, not watched: a plain read also sees edits made on NFS, where no event comes."""
        self.answers_checked = time.monotonic()
        answers = self.read_answers()
        for (step, index), (text, _) in self.unsaved.items():
            answers.setdefault(step, {})[index] = text
        if answers != self.answers:
            self.answers = answers
            self.render_main()
            self.render_steps()  # a step's mark says whether its questions are answered

    def save_answer(self, step: str, index: int, text: str | None, base: str) -> None:
        """The answer box closed: merge its text into the file (Store.save_answer keeps what the
        learner wrote there meanwhile; if both changed this answer, both versions go in)."""
        if text is None:
            return
        lang = self.lang

        def both(theirs: str, mine: str) -> str:
            return t("ui.answer_both", lang, file=theirs.strip("\n"), app=mine.strip("\n"))

        try:
            saved = self.store.save_answer(
                self.answer_sheet(), step, index, text, base=base, both=both
            )
        except (OSError, ValueError) as exc:
            self.unsaved[(step, index)] = (text, base)
            self.answers.setdefault(step, {})[index] = text
            self.notify(
                t("ui.os_error", lang, error=getattr(exc, "strerror", None) or exc),
                severity="error",
            )
            self.render_main()
            self.render_steps()
            return
        self.unsaved.pop((step, index), None)
        self.answers = saved.answers
        for (s, i), (unsaved, _) in self.unsaved.items():
            self.answers.setdefault(s, {})[i] = unsaved
        self.answers_checked = time.monotonic()
        if saved.kept_both:
            self.notify(
                t("ui.answer_kept_both", lang, n=index + 1, path=saved.path.name),
                severity="warning",
                timeout=8,
            )
        elif saved.written:
            self.notify(t("ui.answer_saved", lang, path=saved.path.name), timeout=2)
        self.render_main()
        self.render_steps()

    def action_reset(self) -> None:
        """Put the starter's code back for this step's functions, after a yes; a backup is kept."""
        names = list(self.step.functions)
        if not names:
            self.notify(t("ui.reset_nothing", self.lang), timeout=3)
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
        line = function_line(source, self.step.functions)
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
