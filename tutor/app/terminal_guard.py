"""The app does not outlive its terminal: a shutdown the terminal cannot hold up.

Over SSH a dropped link closes the terminal. Textual writes through a thread with a queue of 30
writes; a write to a hung-up pty raises EIO in that thread, which then dies, the queue fills,
and the main thread blocks for good in `queue.put` (seen from `_disable_mouse_support` during
`App._shutdown`). asyncio's signal handlers run on that blocked loop, so SIGTERM did nothing.

Three parts, each bounded:

- BoundedWriter, Textual's writer thread with its failures caught: a terminal that raises or
  hangs up is marked gone, what is queued is dropped, and a write waits in short slices (a slow
  but live terminal keeps every byte; one that hung up is noticed in a slice).
- A deadline: from a hang-up (SIGHUP, SIGTERM, or the writer finding the terminal gone) the
  process is gone within HANGUP_GRACE s, from a quit within QUIT_GRACE s, whatever the main
  thread is blocked in: a timer thread stops the worker (its own bound) and calls os._exit.
- Signal handlers set with signal.signal, not the loop's: Python runs them on the main thread
  even while it waits on a lock or a write, so they arm the deadline before asking the loop.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import threading
import time
from collections.abc import Callable

HANGUP_GRACE = 2.0  # after the terminal went away: a clean exit takes well under this
QUIT_GRACE = 10.0  # after q: restoring the terminal, stopping the worker, saving progress
SLICE = 0.25  # a write waits this long at a time, then looks whether the terminal is still there


class Deadline:
    """A process-wide end: once armed, os._exit at the latest by then (the earliest wins)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._at: float | None = None
        self.hung_up = False
        self.cleanup: list[Callable[[], None]] = []  # e.g. the worker's close: it has its own bound

    def arm(self, seconds: float, *, hang_up: bool = False) -> None:
        with self._lock:
            self.hung_up = self.hung_up or hang_up
            at = time.monotonic() + seconds
            if self._at is not None and self._at <= at:
                return
            if self._timer is not None:
                self._timer.cancel()
            self._at = at
            self._timer = threading.Timer(seconds, self._expire)
            self._timer.daemon = True
            self._timer.name = "attn-deadline"
            self._timer.start()

    def cancel(self) -> None:
        """An app that ended by itself (a switch of lesson runs the next one): no quit deadline.
        A hang-up's stays: there is no terminal for the next one."""
        with self._lock:
            if self.hung_up or self._timer is None:
                return
            self._timer.cancel()
            self._timer, self._at = None, None

    @property
    def armed(self) -> bool:
        return self._at is not None

    def _expire(self) -> None:
        for fn in self.cleanup:
            with contextlib.suppress(BaseException):
                fn()
        os._exit(0 if self.hung_up else 1)


DEADLINE = Deadline()
_on_gone: list[Callable[[], None]] = []  # how to ask the app to exit, from any thread


def terminal_gone() -> None:
    """The terminal went away: end soon, however the main thread is doing."""
    DEADLINE.arm(HANGUP_GRACE, hang_up=True)
    for fn in list(_on_gone):
        with contextlib.suppress(BaseException):
            fn()


def hung_up(fd: int) -> bool:
    """Has the terminal on fd hung up (its pty's other end closed)?"""
    try:
        p = select.poll()
        p.register(fd, select.POLLOUT)
        return any(ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, ev in p.poll(0))
    except (OSError, ValueError):
        return True


def watch(app, loop) -> None:
    """Arm the deadline on SIGHUP and SIGTERM, and let a lost terminal ask the app to exit.
    From the main thread only (signal.signal); elsewhere (tests) it does nothing."""

    def ask_exit() -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed
            loop.call_soon_threadsafe(app.exit)

    def on_signal(signum, frame) -> None:
        terminal_gone()

    _on_gone[:] = [ask_exit]
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, on_signal)


# ------------------------------------------------------------------ Textual's private parts
# Everything below leans on Textual internals (checked with textual 8.2): LinuxDriver builds its
# writer as `WriterThread(self._file)` from the name in textual.drivers.linux_driver, inside
# start_application_mode, and WriterThread keeps `_queue` and `_file`. Textual has no public
# hook for the writer; should these names change, install() leaves Textual as it is.


installed = False


def install() -> bool:
    """Bound Textual's writer, for the real app's run (main.run_app); True if it is."""
    global installed
    installed = _install_writer()
    return installed


def _install_writer() -> bool:
    try:
        from textual.drivers import linux_driver
        from textual.drivers._writer_thread import WriterThread
    except ImportError:
        return False
    if getattr(linux_driver, "WriterThread", None) is not WriterThread:
        return getattr(linux_driver.WriterThread, "bounded", False)

    class BoundedWriter(WriterThread):
        bounded = True

        def __init__(self, file) -> None:
            super().__init__(file)
            self.gone = False

        def _lost(self) -> None:
            if not self.gone:
                self.gone = True
                terminal_gone()

        def _fd(self) -> int:
            try:
                return self._file.fileno()
            except (OSError, ValueError):
                return -1

        def write(self, text: str) -> None:
            waited = 0.0
            while not self.gone:
                try:
                    self._queue.put(text, timeout=SLICE)
                    return
                except queue.Full:
                    waited += SLICE
                    # A slow terminal keeps its bytes; one that hung up, or a quit's last
                    # writes that wait past a second, are dropped, and all after them.
                    if (
                        hung_up(self._fd())
                        or not self.is_alive()
                        or (DEADLINE.armed and waited >= 1)
                    ):
                        self._lost()

        def run(self) -> None:
            get, qsize = self._queue.get, self._queue.qsize
            while True:
                text = get()
                if text is None:
                    break
                if self.gone:
                    continue  # drained, so that no put waits on a terminal that is gone
                try:
                    self._file.write(text)
                    if qsize() == 0:
                        self._file.flush()
                except (OSError, ValueError):  # EIO from a hung-up pty, a closed file
                    self._lost()
            if not self.gone:
                with contextlib.suppress(OSError, ValueError):
                    self._file.flush()

        def stop(self) -> None:
            end = time.monotonic() + 2 * SLICE * 4
            while time.monotonic() < end:
                try:
                    self._queue.put(None, timeout=SLICE)
                    break
                except queue.Full:
                    if hung_up(self._fd()) or not self.is_alive():
                        self._lost()
            self.join(timeout=max(0.0, end - time.monotonic()))  # a daemon: never waited for

    linux_driver.WriterThread = BoundedWriter
    return True
