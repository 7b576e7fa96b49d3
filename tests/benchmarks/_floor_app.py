"""The floor app (issue #31): the least a Textual app can do for a save, to measure the real
app against in the same run (bench_latency.py starts it in a tmux pane of its own).

    ATTN_TUTOR_TRACE=FILE python tests/benchmarks/_floor_app.py PATH

It watches PATH's folder with watchfiles as the real app does (tutor/workspace/watch.py: the
folder, not the file, so a rename over it is seen; only events for its name; the same debounce
and step), rereads the file on each change, and redraws one widget with what it read: the
content's digest and its last line. After the refresh that shows a new content it appends the
real app's "verdicts" event for that digest to the trace (tutor/app/trace.py), so the benchmark
waits for both apps the same way. No checks, no worker, no lesson: what is left of a save's
time is watchfiles, the read and one Textual frame. q quits.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import Static
from watchfiles import awatch

from tutor.app.trace import digest, trace


class FloorApp(App[None]):
    BINDINGS = [("q", "quit", "quit")]

    def __init__(self, path: Path):
        super().__init__()
        self.path = path.absolute()
        self.shown: str | None = None  # the digest on screen

    def compose(self) -> ComposeResult:
        yield Static("attn-tutor floor", id="title")
        yield Static(id="content")

    def on_mount(self) -> None:
        self.call_after_refresh(trace, "first_screen")
        self.run_worker(self.watch(), exclusive=True)

    async def watch(self) -> None:
        name = self.path.name
        batches = awatch(
            self.path.parent,
            watch_filter=lambda _change, changed: os.path.basename(changed) == name,
            recursive=False,
            debounce=50,  # tutor.workspace.watch.DEBOUNCE_MS
            step=2,  # FileWatcher's step_ms
        )
        # As FileWatcher.changes: awatch's first step builds the watcher at once, so after one
        # turn of the loop the watch is live, and what the file holds now can be shown.
        pending = asyncio.ensure_future(anext(batches))
        await asyncio.sleep(0)
        self.show()
        while True:
            await pending
            self.show()
            pending = asyncio.ensure_future(anext(batches))

    def show(self) -> None:
        try:
            raw = self.path.read_bytes()
        except OSError:
            return  # gone for a moment (a rename): the next event reads it again
        text = raw.decode("utf-8", errors="surrogateescape")
        d = digest(text)
        if d == self.shown:
            return
        self.shown = d
        lines = text.strip().splitlines() or [""]
        self.query_one("#content", Static).update(f"{d}\n{lines[-1]}")
        self.call_after_refresh(trace, "verdicts", digest=d)


if __name__ == "__main__":
    FloorApp(Path(sys.argv[1])).run()
