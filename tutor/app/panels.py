"""The app's panels: the title, the step list, the progress, the file, the text (or the weights)
and the results, each redrawn only when what it shows has changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.visual import visualize
from textual.widgets import ProgressBar, Static

from tutor.app.base import SPINNER, SPINNER_AFTER, LessonApp
from tutor.app.widgets import (
    DrawnOnce,
    Footer,
    ScrollingStatic,
    StepList,
    step_extra,
)
from tutor.model.progress import step_status
from tutor.render.doc import render_markdown, split_for_view
from tutor.render.heatmap import heatmap
from tutor.render.verdicts import (
    MESSAGE_LINES,
    hints_block,
    shown_of,
    status_mark,
    step_results,
)
from tutor.render.views import Packed, heatmap_words, panel_word, text_of
from tutor.render.wrap import Wrapped
from tutor.text.i18n import t


class PanelsApp(LessonApp):
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
        # The live view, which is what the step is about, where its text puts it.
        intro, rest = split_for_view(rest)
        if extra is not None:
            body += [render_markdown(intro), Text(""), extra, Text("")]
        else:
            rest = "\n\n".join(part for part in (intro, rest) if part)
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
        # What comes after a pass says whether every step passes: another step's verdict moves it.
        after = self.after_pass(step)
        signature = (step.id, lang, shown, running, hints_shown, self.full_messages, lines, after)
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
                after_pass=after,
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
            hidden=entry.get("hidden"),
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
