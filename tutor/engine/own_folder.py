"""A graded student's own folder, in the child: their other files importable, fresh for each
step. Landlock lets the child read that folder and no other (confine/landlock.restrict); the
worker names it only for `grade`, whose students each have a folder of their own.
"""

from __future__ import annotations

import contextlib
import os
import sys


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


def newest_module() -> str | None:
    """The name sys.modules holds last: what forget_modules scans back to."""
    return next(reversed(sys.modules), None)


def forget_modules(folder: str | None, since: str | None) -> None:
    """The student's other files imported by the last step: the next step imports them afresh
    (each step starts from the state the file's import makes). since: newest_module() before the
    first step. sys.modules keeps the order of insertion, so only the names after it are looked
    at: touching each of torch's ~1,000 module objects (a snapshot, a full scan) costs a fork's
    child a copy-on-write fault per page they sit on, about a thousand of them."""
    if not folder:
        return
    inside = folder.rstrip("/") + "/"
    added = []
    for name in reversed(sys.modules):  # a `since` the learner's code removed: all are looked at
        if name == since:
            break
        added.append(name)
    for name in added:
        module = sys.modules.get(name)
        with contextlib.suppress(Exception):
            if str(getattr(module, "__file__", "") or "").startswith(inside):
                del sys.modules[name]
