"""A graded student's own folder, in the child: their other files importable, fresh for each
step. Landlock lets the child read that folder and no other (confine/landlock.restrict); the
worker names it only for `grade`, whose students each have a folder of their own.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping


def enter(job: dict, cwd: str) -> str | None:
    """The folder the job names, absolute, with the learner's file's folder put first on
    sys.path (`import helpers` finds its neighbours, as `python file.py` would); None when the
    job names none. Bytecode is not written there: it is the student's submission."""
    folder, filename = job.get("folder"), job.get("filename")
    if not isinstance(folder, str) or not folder or not isinstance(filename, str):
        return None
    folder = os.path.join(cwd, folder)
    if not os.path.isdir(folder):
        return None
    sys.path.insert(0, os.path.dirname(os.path.join(cwd, filename)))
    sys.dont_write_bytecode = True
    return folder


def forget_modules(folder: str | None, before: Mapping[str, object]) -> None:
    """The student's other files imported by the last step: the next step imports them afresh
    (each step starts from the state the file's import makes). before: sys.modules as it was
    before the first step; a module still there as it was is not theirs, and is not looked at
    (reading __file__ of each of torch's ~1,000 modules cost 2.6 ms a step)."""
    if not folder:
        return
    inside = folder.rstrip("/") + "/"
    for name, module in list(sys.modules.items()):
        if before.get(name) is module:
            continue
        with contextlib.suppress(Exception):
            if str(getattr(module, "__file__", "") or "").startswith(inside):
                del sys.modules[name]
