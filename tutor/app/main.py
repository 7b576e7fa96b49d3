"""Start-up for the app: workspace, remembered state, language; then run it."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.model.lesson import all_lessons, get_lesson
from tutor.text.i18n import choose
from tutor.workspace.files import ensure_solution, folder_lesson, workspace_dir
from tutor.workspace.store import Store

if TYPE_CHECKING:
    from tutor.app.app import TutorApp
    from tutor.engine.client import EngineClient


def _app_for(
    store: Store,
    worker: EngineClient,
    *,
    lesson_id: str | None,
    step_id: str | None,
    file: str | Path | None,
    lang: str | None,
    poll: bool,
    timeout: float | None,
) -> TutorApp:
    cwd = Path.cwd()
    state = store.load()
    lesson = get_lesson(lesson_id or folder_lesson(cwd, state.get("lesson"), all_lessons()))
    if file is not None:
        path, created = Path(file).absolute(), False
    else:
        path, created = ensure_solution(cwd, lesson)
    remembered = state.get("lessons", {}).get(lesson.id, {})
    if step_id is None or step_id not in lesson.step_ids():
        step_id = (
            remembered.get("step")
            if remembered.get("step") in lesson.step_ids()
            else lesson.steps[0].id
        )
    from tutor.app.app import TutorApp

    return TutorApp(
        lesson=lesson,
        path=path,
        created=created,
        step_id=step_id,
        lang=choose(lang, state.get("lang")),
        store=store,
        poll=True if poll else None,
        timeout=timeout,
        worker=worker,
        lang_chosen=lang is not None,
    )


def run_app(
    *,
    lesson_id: str | None = None,
    step_id: str | None = None,
    file: str | Path | None = None,
    lang: str | None = None,
    poll: bool = False,
    timeout: float | None = None,
) -> int:
    # Textual's import and start-up make ~80k long-lived objects, and the cyclic GC scanned them
    # again and again before the first screen (~90 ms of collections, one full pass ~45 ms). The app
    # turns it back on after its first screen (TutorApp.resume_gc), those objects frozen out of it.
    gc.disable()
    cwd = Path.cwd()
    store = Store(workspace_dir(cwd))
    # The worker first: its start overlaps the UI's; it imports torch (~3 s) once the app has
    # painted its first screen (TutorApp.on_mount calls go()). A switch of lesson keeps it.
    from tutor.engine.client import DEFAULT_TIMEOUT, EngineClient

    # The lesson _app_for will open: the worker's first spares warm up on it alone.
    first = lesson_id or folder_lesson(cwd, store.peek().get("lesson"), all_lessons())
    worker = EngineClient(
        None, timeout=timeout or DEFAULT_TIMEOUT, log=store.folder / "worker.log", lesson=first
    )
    worker.start(defer=True)
    from tutor.app import terminal_guard

    terminal_guard.install()  # the app cannot outlive its terminal
    terminal_guard.DEADLINE.cleanup.append(worker.close)
    try:
        while True:
            app = _app_for(
                store,
                worker,
                lesson_id=lesson_id,
                step_id=step_id,
                file=file,
                lang=lang,
                poll=poll,
                timeout=timeout,
            )
            app.run()
            if app.switch_to is None:
                break
            terminal_guard.DEADLINE.cancel()  # the app ended itself; the next has its own
            # The lesson switcher (L, Ctrl+P): the same worker, the other lesson's own file and step.
            lesson_id, step_id, file = app.switch_to, None, None
            lang = app.lang if app.lang_chosen else lang
    finally:
        worker.close()
    # Progress is on disk (the app waits for its saver when it closes). Textual's input thread is
    # not a daemon: if the terminal went away while the app closed (an SSH link dropped, a tmux
    # pane killed), it spins on the dead tty and a normal exit would wait for it forever.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(app.return_code or 0)
