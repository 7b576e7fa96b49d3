"""The Textual app: the lesson's steps, the learner's verdicts, the weights they compute.

It never imports torch: checks run in the worker process (tutor.engine), and
come back as plain data that is rendered here in the current language.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import threading

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from tutor.app import terminal_guard
from tutor.app.actions import ActionsApp
from tutor.app.trace import trace
from tutor.app.widgets import (
    DocScroll,
    Footer,
    Progress,
    ScrollingStatic,
    StepList,
)
from tutor.render.verdicts import (
    load_syntax,
)
from tutor.workspace import notebook
from tutor.workspace.watch import FileWatcher


def breakpoint_class(size: int, breakpoints: list[tuple[int, str]]) -> str | None:
    """The class Textual gives a screen of this width (or height) for these breakpoints: that of
    the largest breakpoint the size reaches, None below them all."""
    reached = [(at, name) for at, name in breakpoints if size >= at]
    return max(reached)[1] if reached else None


class TutorApp(ActionsApp):
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
            whole = notebook.is_whole if notebook.is_notebook(self.path) else None
            watcher = FileWatcher(self.path, poll=self.poll, whole=whole)
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
