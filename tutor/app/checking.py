"""The app and the checks: saves sent to the worker, verdicts stored as they come and drawn in
one frame, the file watched (and said gone when it is).
"""

from __future__ import annotations

import errno
import json
import os
import time

from textual import on, work
from textual.message import Message

from tutor.app.answering import AnswersApp
from tutor.app.base import ANSWERS_EVERY, GATHER, SPINNER_AFTER
from tutor.app.trace import digest, trace
from tutor.app.trace import enabled as trace_enabled
from tutor.engine.client import (
    DEFAULT_TIMEOUT,
    EngineClient,
    WorkerGone,
    decode_source,
    too_large,
    unreadable_results,
)
from tutor.engine.protocol import Done, Event, Gone, Ready, StepVerdict
from tutor.model.results import JSONDict, StepResult
from tutor.workspace.learner_file import LearnerText, learner_text, placed
from tutor.workspace.notebook import NotebookSource, is_notebook
from tutor.workspace.watch import FileWatcher, WatchError


class WorkerEvent(Message):
    def __init__(self, event: Event):
        super().__init__()
        self.event = event


class CheckingApp(AnswersApp):
    notebook: NotebookSource | None = None  # the notebook's places of the lines checked now

    def start_checker(self) -> None:
        self.worker_state = "loading"
        if self.worker is None or self.worker.proc is None or self.worker.proc.poll() is not None:
            self.worker = EngineClient(
                None,
                timeout=self.timeout or DEFAULT_TIMEOUT,
                log=self.store.folder / "worker.log",
                lesson=self.lesson.id,
            )
            self.worker.start()
        self.worker.attach(self._post_event)
        if self.worker.ready.is_set():  # a worker kept from the lesson before a switch
            self.worker_state = "ready"

    def _post_event(self, event: Event) -> None:  # from the worker's reader thread
        self.post_message(WorkerEvent(event))

    def run_checks(self, text: str | None, raw: bytes) -> None:
        saved = text  # the file's text: what the trace names a save by
        if is_notebook(self.path):  # its code cells, and where each line of them is
            learner = learner_text(self.path, raw)
            text, self.notebook = learner.text, learner.notebook
        self.source = (text, raw)
        checked = [s.id for s in self.lesson.checked_steps]
        # An experiment runs the learner's code too, but only while it is on screen.
        extra = [] if self.step.checked else [self.step.id]
        big = None if self.notebook is not None else too_large(len(raw))
        if text is None or big is not None:
            problem: JSONDict | None
            if big:
                key, problem = "failure.too_large", big
            elif is_notebook(self.path):
                key, problem = learner.problem or ("failure.notebook_invalid", {"detail": ""})
            else:
                key, problem = "failure.encoding", decode_source(raw)[1]
                assert problem is not None  # the text is None: decode_source says why
            self.notebook = None  # these verdicts have no lines to place
            for result in unreadable_results(self.lesson, key, problem):
                self.store_result(result)
            self.running.clear()
            self.after_results()
            return
        if trace_enabled():
            self.running_digest = digest(saved if saved is not None else text)
        if self.worker is None or self.worker_state == "gone":
            return
        settings = self.settings_texts()
        if self.notebook is None:  # a notebook's verdicts carry places that move with its cells
            checked = [s for s in checked if s not in self.passed.unchanged(text, settings)]
        # The step the learner is looking at first: its verdict comes before the others'.
        checked.sort(key=lambda sid: sid != self.step.id)
        try:
            # Even with nothing to run: the run in flight is for a content the file no longer has.
            self.worker.submit(
                self.lesson.id, str(self.path), text, checked + extra, params=self.params()
            )
        except WorkerGone:
            self.worker_state = "gone"
            self.render_fileinfo()
            return
        self.submitted = (text, settings)
        self.running = set(checked + extra)
        self.run_started = time.monotonic()
        if not self.running:  # every step as it was: its verdicts, drawn again at once
            self.after_results()
            return
        self.render_steps()
        self.render_results()
        self.render_fileinfo()
        self.trace_current_verdict()  # the learner's step kept its verdict: on screen now

    def settings_texts(self) -> dict[str, str]:
        """Each step's settings as JSON text: a pass is shown again only under the same."""
        return {sid: json.dumps(values, sort_keys=True) for sid, values in self.params().items()}

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
        self.submitted = (self.source[0], self.settings_texts())
        if not self.running:
            self.run_started = time.monotonic()
        self.running |= set(steps)
        self.render_steps()
        self.render_results()

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
            text, settings = self.submitted
            if self.notebook is None and text:
                self.passed.note(event.result, text, settings.get(event.result.id, "null"))
            if not self.running & self.checked_ids or event.result.id == self.step.id:
                self.flush()  # the last verdict of the save, or the one on screen: draw now
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
        self.passed.forget(result.id)  # noted again by the caller if it is a run's pass
        if self.notebook is not None:
            result = placed([result], LearnerText(None, None, self.notebook), self.lesson)[0]
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
        self.trace_current_verdict()
        if self.running_digest and not self.running & self.checked_ids:
            self.call_after_refresh(
                trace,
                "verdicts",
                digest=self.running_digest,
                statuses={s: r.status for s, r in self.results.items()},
            )
            self.running_digest = ""

    def trace_current_verdict(self) -> None:
        """For the benchmarks' trace: the learner's step shows this save's verdict, once drawn."""
        if self.running_digest and self.step.id not in self.running:
            self.call_after_refresh(trace, "current-verdict", digest=self.running_digest)

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
