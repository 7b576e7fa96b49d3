"""What a kit judge's verdict failed on, for the kit's unit tests."""

from __future__ import annotations

from tutor.kit import Verdict


def failed(v: Verdict) -> tuple[str, str]:
    """(the first check that did not pass, its message key)."""
    check = next(c for c in v.checks if c.status != "pass")
    message = v.failed_message()
    assert message is not None, check
    return check.id, message["key"]
