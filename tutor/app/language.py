"""`l` on a box over the lesson (help, lesson switcher, solution): the app switches, the box too."""

from __future__ import annotations

from typing import Any


def switch_language(app: Any) -> str:
    """Switch the app's language (its screen underneath is drawn again) and return the new one."""
    app.action_language()
    return str(app.lang)
