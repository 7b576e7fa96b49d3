"""What the grade tests share."""

from __future__ import annotations

import signal

import pytest


@pytest.fixture
def ctrl_c_reaches_the_grade():
    """A Ctrl+C that reaches the `grade` the test starts. A suite started with SIGINT ignored
    (a background job of a shell without job control) hands that on to its children, and a
    Python started so leaves SIGINT ignored; a handler here is reset to the default in them."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)
