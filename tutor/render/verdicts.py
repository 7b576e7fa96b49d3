"""The results panel's content: a step's verdicts as Rich renderables. Pure: no Textual."""

from __future__ import annotations

import io

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.rule import Rule
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from tutor.model.results import Check, StepResult
from tutor.render.doc import render_markdown
from tutor.render.wrap import Wrapped
from tutor.text.i18n import t
from tutor.text.record_text import check_record_text
from tutor.text.safe_text import visible
from tutor.text.verdict_text import MARKS, check_text, output_dropped_note

STATUS_STYLES = {
    "pass": "bold green",
    "fail": "bold red",
    "error": "bold red",
    "timeout": "bold yellow",
    "todo": "dim",
    "running": "yellow",
}
# The word in the results' first line: reversed when it is bad news, so it shows without colour too.
HEADER_STYLES = {
    **STATUS_STYLES,
    "fail": "bold reverse red",
    "error": "bold reverse red",
    "timeout": "bold reverse yellow",
}


def status_mark(status: str) -> Text:
    return Text(MARKS.get(status, "?"), style=STATUS_STYLES.get(status, ""))


class marked:
    """A mark with its text beside it, wrapped lines hanging under the text, not the mark.

    (A Table.grid does the same at twice the cost, and the step list draws six per frame.)
    """

    def __init__(self, mark: Text, body: RenderableType):
        self.mark, self.body = mark, body

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(1, options.max_width - 2)
        lines = console.render_lines(self.body, options.update(width=width, height=None), pad=False)
        gap = Segment("  ")
        for i, line in enumerate(lines):
            if i == 0:
                # Marks are one glyph in one style; Text.render would drop that style.
                yield Segment(self.mark.plain, console.get_style(self.mark.style or "", default=""))
                yield Segment(" " * max(0, 2 - self.mark.cell_len))
            else:
                yield gap
            yield from line
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(3, options.max_width)


MESSAGE_LINES = 4  # a failing check's message in the results panel, at most (80×24: ~8 rows)


class Clipped:
    """A renderable cut to its first `lines` lines: the last one kept says what was left out
    and which key shows it (`more`, a dim line in the message's hanging indent)."""

    def __init__(self, renderable: RenderableType, lines: int, more: str):
        self.renderable, self.lines, self.more = renderable, lines, more

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rendered = console.render_lines(self.renderable, options.update(height=None), pad=False)
        if len(rendered) <= self.lines:
            shown, more = rendered, None
        else:
            shown, more = rendered[: self.lines - 1], self.more
        for line in shown:
            yield from line
            yield Segment.line()
        if more:
            yield from console.render(marked(Text(""), Wrapped(more, style="dim italic")), options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


ANCHOR = "anchor"  # the style meta key Anchored tags its segments with


class Anchored:
    """A renderable drawn as it is, each of its segments tagged {"anchor": name} in its style's
    meta, so that the panel showing it can tell which lines it was drawn on (to scroll there)."""

    def __init__(self, name: str, renderable: RenderableType):
        self.name, self.renderable = name, renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        tag = Style(meta={ANCHOR: self.name})
        for line in console.render_lines(self.renderable, options, pad=False):
            yield from Segment.apply_style(line, post_style=tag)
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


def frame_code(code: str) -> RenderableType:
    """A line of the learner's code in a traceback, highlighted."""
    from rich.syntax import Syntax  # pygments: imported by load_syntax, or here when first needed

    return Syntax(code.strip() or " ", "python", theme="monokai", word_wrap=True)


def load_syntax() -> None:
    """Import pygments and load its Python lexer and theme (~100 ms, once), so that the first
    traceback does not wait for them. The app calls it in a thread after its first screen."""
    Console(width=40, file=io.StringIO()).render_lines(frame_code("pass"))


def shown_of(result: StepResult | None) -> str | None:
    """What step_results draws of a result, as a key: the same key, the same lines (the run's
    time and the visuals it does not draw left out). Saves often bring back the same verdicts."""
    if result is None:
        return None
    return repr(
        (
            result.status,
            result.checks,
            result.failure,
            result.output,
            result.output_dropped,
            result.visuals.get("leak"),
        )
    )


def step_results(
    result: StepResult | None,
    lang: str,
    *,
    running: bool = False,
    hints: RenderableType | None = None,
    full: bool = False,
    after_pass: str | None = None,
    message_lines: int = MESSAGE_LINES,
) -> RenderableType:
    """The verdicts, the first failing check tagged Anchored("failure"); `hints` go right
    after the failures (the hints are about them), before the checks that pass. A failing
    check's message takes at most message_lines lines unless `full` (the `f` key). after_pass:
    what to do once the step has passed (the next step, the solution), said under the header."""
    if result is None:
        waiting = Wrapped(t("ui.running" if running else "ui.no_results", lang), style="dim")
        return waiting if hints is None else Group(waiting, hints)
    parts: list[RenderableType] = []
    # The word reversed when it is bad news, without padding: padded, it reads "✗  failed" with no colour.
    header = Text.assemble(
        status_mark(result.status),
        " ",
        (t(f"status.{result.status}", lang), HEADER_STYLES.get(result.status, "")),
    )
    if running:
        header.append("  " + t("ui.running", lang), style="yellow")
    parts.append(header)
    if result.status == "pass" and after_pass and not running:
        parts.append(render_markdown(after_pass))
    failing = [c for c in result.checks if c.status != "pass"]
    passing = [c for c in result.checks if c.status == "pass"]
    # Failures first and in full: they are what the learner acts on.
    for i, check in enumerate(failing):
        line: RenderableType = marked(status_mark(check.status), failure_block(check, lang))
        if not full:
            line = Clipped(line, message_lines, t("ui.message_more", lang))
        parts.append(Anchored("failure", line) if i == 0 else line)
    failure = result.failure
    if failure and (failure.frames or failure.caret) and result.status != "todo":
        parts.append(Wrapped(t("ui.traceback", lang), style="bold"))
        if failure.caret:
            parts.append(Text(visible(failure.caret)))
        else:
            for frame in failure.frames[-3:]:
                parts.append(
                    Wrapped(
                        t("report.frame", lang, line=frame.line, function=visible(frame.function)),
                        style="dim",
                    )
                )
                parts.append(frame_code(visible(frame.code)))
    rest: list[RenderableType] = []
    for check in passing:
        rest.append(marked(status_mark("pass"), Wrapped(check_text(check, lang))))
    leak = result.visuals.get("leak")
    if leak:
        # Four decimals, as the unmasked figure; a movement as small as rounding as 1.2e-07.
        v = leak["yours"]
        yours = "0" if v == 0 else f"{v:.4f}" if v >= 1e-3 else f"{v:.2e}"
        rest.append(
            render_markdown(
                t(
                    "ui.leak_demo_leaks" if leak.get("leaks") else "ui.leak_demo",
                    lang,
                    yours=yours,
                    unmasked=f"{leak['unmasked']:.4f}",
                )
            )
        )
    if result.output.strip() or result.output_dropped:
        rest.append(Wrapped(t("ui.output", lang), style="bold"))
        note = output_dropped_note(result, lang)
        if note:
            rest.append(Wrapped(note, style="dim italic"))
        tail = visible(result.output.rstrip()).splitlines()[-8:]
        rest.append(Text("\n".join(tail), style="dim"))
    if hints is not None:
        parts.append(hints)
        if rest:
            parts.append(Rule(style="dim"))  # the hints end here
    return Group(*parts, *rest)


def failure_block(check: Check, lang: str) -> RenderableType:
    """A failing check: the diagnosis (its fix in it) first, then what was found and where,
    then the raw error, dim, after a sentence that says what it means; cut to MESSAGE_LINES
    lines around it, the diagnosis is what stays in view."""
    said = check_record_text(check, lang)
    parts: list[RenderableType] = [render_markdown(x) for x in (said.diagnosis, said.finding) if x]
    if said.code:
        parts.append(render_markdown(said.code))
    parts += [Wrapped(x, style="dim") for x in said.raw]
    return Group(*parts)


def hints_block(
    hints: tuple[str, ...], shown: int, lang: str, *, last_is_solution: bool = False
) -> RenderableType | None:
    """The hints shown so far, oldest first, as they were given; the newest is anchored (the
    app scrolls to it). Under them, what `h` does next: the last hint is the whole solution
    (last_is_solution) is said before it is shown, and that none is left once all are."""
    if shown <= 0 or not hints:
        return None
    shown = min(shown, len(hints))
    parts: list[RenderableType] = [Rule(style="dim")]
    for i in range(1, shown):
        parts.append(_hint(hints, i, lang))
    newest: list[RenderableType] = [_hint(hints, shown, lang)]
    if shown == len(hints):
        newest.append(Wrapped(t("ui.no_more_hints", lang), style="dim"))
    elif shown == len(hints) - 1 and last_is_solution:
        newest.append(Wrapped(t("ui.hint_last_is_solution", lang, n=len(hints)), style="yellow"))
    parts.append(Anchored("hint", Group(*newest)))
    return Group(*parts)


def _hint(hints: tuple[str, ...], n: int, lang: str) -> RenderableType:
    label = t(
        "ui.hint", lang, n=n, total=len(hints)
    )  # ends with its colon: "Hint 1/3:", 「提示 1/3：」
    gap = "" if label[-1:] == "：" else " "
    return render_markdown(f"**{label}**{gap}{hints[n - 1]}")
