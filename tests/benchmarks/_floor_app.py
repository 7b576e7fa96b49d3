"""The floor app (issue #31): the least a Textual app can do for a save, to measure the real
app against in the same run (bench_latency.py starts it in a tmux pane of its own).

    ATTN_TUTOR_TRACE=FILE python tests/benchmarks/_floor_app.py PATH

It watches PATH with the real app's watcher (tutor/workspace/watch.py's FileWatcher: the
folder, not the file, so a rename over it is seen; only events for its name; the same
batching; inotify on the event loop on Linux), and redraws one widget with each new content:
its digest and its last line. After the refresh that shows a new content it appends the real
app's "verdicts" event for that digest to the trace (tutor/app/trace.py), so the benchmark
waits for both apps the same way. No checks, no worker, no lesson: what is left of a save's
time is the watch, the read and one Textual frame. q quits.
"""

from __future__ import annotations

import sys
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import Static

from tutor.app.trace import digest, trace
from tutor.workspace.watch import FileWatcher


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
        async for saved in FileWatcher(self.path).changes(initial=True):
            self.show(saved.raw)

    def show(self, raw: bytes) -> None:
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
