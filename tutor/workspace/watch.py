"""Watch the learner's solution file and yield its content after each save.

Stdlib, watchfiles and inotify_simple only (the UI process imports this; no torch, no Textual).

Why it is built this way (see DESIGN.md, "Pitfalls"):
- Editors save by renaming a new file over the old one (vim, JetBrains), so a
  watch on the file itself dies after the first save: we watch the parent
  folder, keep only events for the file's exact name (which also drops every
  editor side file: 4913, .X.swp, X~, .#X, #X#, X___jb_tmp___, X___jb_old___)
  and then stat/read the file itself, because one batch can hold both
  "deleted" and "added" for it.
- VS Code truncates, then writes: an empty (or missing) read waits `settle`
  seconds and reads again. An empty file is yielded only if it stays empty;
  a missing file is never yielded (it is about to be re-created).
- A notebook is one JSON document: read while an editor writes it (VS Code truncates, then
  writes; a large one in more than one write), it is not whole. With `whole` given, such a
  read waits `settle` and reads again, a few times; what is still not whole then is yielded
  (the app says the notebook is not valid JSON, and the next write's event reads it again).
- inotify sees nothing on network/FUSE file systems and watchfiles never
  switches to polling by itself there, so we read the mount table (watch.mounts).
- watchfiles' watcher thread wakes every `step` ms, changes or not (1.5 % of a core
  at 2 ms here; a lab machine runs one per learner). On Linux, where inotify can watch
  the folder, its fd is read on the event loop instead (inotify_simple): nothing runs
  while nothing changes. A batch closes `step_ms` (2) after its last event for the
  file, or DEBOUNCE_MS after its first: an editor's save is one burst within that.
  Polling (network file systems) and other systems keep watchfiles.

`Saved.text` is None when the bytes are not valid UTF-8: the checks report
that, and replacing characters would show the learner code they never wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import stat
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import watchfiles

# Types where inotify misses changes made elsewhere (another host, the VM's
# host, a container's host): poll these. Any "fuse*" type is polled as well.
POLL_FS_TYPES = frozenset(
    # afpfs, webdav: macOS's names for a shared folder and a WebDAV mount.
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "sshfs",
        "virtiofs",
        "vboxsf",
        "afs",
        "ceph",
        "afpfs",
        "webdav",
    }
)
DEBOUNCE_MS = 50  # upper bound on grouping a burst of events into one batch
POLL_MS = 100  # polling interval on network file systems
WHOLE_TRIES = 5  # reads of a file not yet whole (a notebook's JSON), `settle` apart


def _inotify() -> ModuleType | None:
    """inotify_simple, where the system has inotify; None elsewhere (macOS, the BSDs)."""
    if not sys.platform.startswith("linux"):
        return None
    import importlib

    try:  # ~5 ms (ctypes): imported with the watch, after the first screen
        return importlib.import_module("inotify_simple")
    except ImportError:
        return None


@dataclass(frozen=True)
class Saved:
    text: str | None  # None when `raw` is not valid UTF-8
    digest: str  # sha256 hex of raw
    raw: bytes


class WatchError(Exception):
    """Watching is impossible (inotify limits, missing folder...): the app says so
    and still offers a manual re-run. `key`/`params` are an i18n message."""

    def __init__(self, path: Path, error: BaseException):
        self.key = "watch.failed"
        self.params = {"path": str(path), "error": str(error)}
        super().__init__(f"cannot watch {path}: {error}")


def read_saved(path: Path) -> Saved | None:
    """The file's content now, or None if it is missing or not a regular file."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the read
            return None
        raw = Path(path).read_bytes()
    except OSError:  # missing, a folder, no permission: nothing to check yet
        return None
    try:
        text: str | None = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    import hashlib  # not at the top: ~3 ms that the first screen does not need

    return Saved(text=text, digest=hashlib.sha256(raw).hexdigest(), raw=raw)


def _unescape(field: str) -> str:
    # /proc/mounts writes space, tab, newline and backslash as \040 \011 \012 \134
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts() -> list[tuple[str, str]]:
    """(mount point, file-system type) of every mount, in mount order. Linux: /proc/mounts, read
    here (the watch mode is on the first screen, and importing psutil costs it ~18 ms); elsewhere
    (macOS, the BSDs: getfsstat) from psutil."""
    try:
        with open("/proc/mounts", encoding="utf-8", errors="surrogateescape") as f:
            return parse_mounts(f.read())
    except OSError:
        pass
    try:
        import psutil

        return [(p.mountpoint, p.fstype) for p in psutil.disk_partitions(all=True)]
    except (ImportError, OSError, RuntimeError):
        return []  # unknown: the native watcher is the right guess


def parse_mounts(text: str) -> list[tuple[str, str]]:
    """/proc/mounts' text as mounts() gives it (for tests, and machines read elsewhere)."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            found.append((_unescape(fields[1]), fields[2]))
    return found


def needs_polling(path: Path, mounts_text: str | None = None) -> bool:
    """True when the file's folder lives on a file system inotify cannot watch."""
    table = mounts() if mounts_text is None else parse_mounts(mounts_text)
    folder = os.path.realpath(Path(path).parent)
    best, best_type = -1, ""
    for point, fstype in table:
        inside = folder == point or folder.startswith(point.rstrip("/") + "/")
        # >= : a later mount on the same point hides the earlier one
        if inside and len(point) >= best:
            best, best_type = len(point), fstype
    return best_type in POLL_FS_TYPES or best_type.startswith("fuse")


def _env_poll() -> bool | None:
    # watchfiles' own switch, honoured as an escape hatch for odd set-ups
    value = os.environ.get("WATCHFILES_FORCE_POLLING")
    if not value:
        return None
    return value.lower() not in {"false", "disable", "disabled"}


class FileWatcher:
    def __init__(
        self,
        path: Path,
        *,
        poll: bool | None = None,
        settle: float = 0.03,
        step_ms: int = 2,
        poll_ms: int = POLL_MS,
        whole: Callable[[bytes], bool] | None = None,
    ):
        self.path = Path(path).absolute()
        self.whole = whole  # is this content whole (not an editor's write caught half way)?
        self.folder = self.path.parent
        self.settle = settle
        self.step_ms = step_ms
        self.poll_ms = poll_ms
        if poll is None:
            poll = _env_poll()
        if poll is None:
            poll = needs_polling(self.path)
        self.mode = "polling" if poll else "inotify"

    def _is_target(self, _change: watchfiles.Change, changed: str) -> bool:
        return os.path.basename(changed) == self.path.name and changed != str(self.folder)

    async def _read(self) -> Saved | None:
        # off the event loop: a read on a network mount can stall
        return await asyncio.to_thread(read_saved, self.path)

    async def _read_settled(self) -> Saved | None:
        saved = await self._read()
        if saved is None or not saved.raw:  # maybe mid truncate-then-write
            await asyncio.sleep(self.settle)
            saved = await self._read()
        tries = 0
        while (
            self.whole is not None
            and saved is not None
            and saved.raw
            and tries < WHOLE_TRIES
            and not self.whole(saved.raw)
        ):
            tries += 1
            await asyncio.sleep(self.settle)
            saved = await self._read()
        return saved

    async def changes(
        self, *, initial: bool = False, missing: bool = False
    ) -> AsyncIterator[Saved | None]:
        """Yield the file's content once per distinct content, after each save.

        With initial=True the current content is yielded first, read after the
        watch is live, so no save can fall between "checked" and "watching".
        With missing=True, None is yielded once when the file is gone (moved away, deleted,
        unreadable) and still gone after the settle time; the next content is yielded then
        even if it is the same as before, so a file moved away and back is checked again.
        Raises WatchError if the folder cannot be watched.
        """
        # Imported here (~10 ms with anyio): the app starts the watch after its first screen.
        try:
            from watchfiles import awatch
        except OSError as error:  # out of file descriptors already: as when inotify_init fails
            raise WatchError(self.path, error) from error

        polling = self.mode == "polling"
        batches: AsyncIterator[object]
        if not polling and _inotify() is not None:
            batches = self._inotify_batches()
        else:
            batches = awatch(
                self.folder,
                watch_filter=self._is_target,
                recursive=False,
                debounce=DEBOUNCE_MS,
                step=self.step_ms,
                force_polling=polling,
                poll_delay_ms=self.poll_ms,
                # notify's poller compares whole-second mtimes, so it misses a second
                # save within the same second (format-on-save): when polling we also
                # wake every poll_ms and read the file ourselves (digests dedupe).
                rust_timeout=self.poll_ms if polling else None,
                yield_on_timeout=polling,
            )
        # Start the batches now: their first step builds the watch synchronously, so
        # after one loop turn the watch is live and reading the baseline is safe.
        first = asyncio.ensure_future(batches.__anext__())
        pending: asyncio.Future[object] | None = first
        try:
            await asyncio.sleep(0)
            if first.done() and first.exception() is not None:
                await self._next(first)  # raises WatchError
            last = None
            if initial:
                saved = await self._read_settled()
                if saved is not None:
                    last = saved.digest
                    yield saved
                elif missing:
                    last = ""
                    yield None
            else:
                saved = await self._read()
                last = saved.digest if saved is not None else None
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(batches.__anext__())
                if not await self._next(pending):
                    return
                pending = None
                saved = await self._read_settled()
                if saved is not None and saved.digest != last:
                    last = saved.digest
                    yield saved
                elif saved is None and missing and last != "":
                    last = ""  # no digest is "": whatever comes back is new
                    yield None
        finally:
            if pending is not None and not pending.done():
                pending.cancel()
                with contextlib.suppress(BaseException):
                    await pending
            await batches.aclose()  # type: ignore[attr-defined]

    async def _inotify_batches(self) -> AsyncIterator[object]:
        """One item per burst of events for the file's name in its folder, read from inotify's
        fd when the event loop sees it readable. OSError (no folder, inotify's limits) comes
        out of the first step; the folder itself removed or moved ends the watch with one."""
        inotify_simple = _inotify()
        assert inotify_simple is not None
        flags = inotify_simple.flags
        watch = inotify_simple.INotify(nonblocking=True)
        try:
            # Whatever can change what the file's name holds, and the folder's own end.
            changed = flags.MODIFY | flags.ATTRIB | flags.CLOSE_WRITE | flags.CREATE | flags.DELETE
            ended = flags.DELETE_SELF | flags.MOVE_SELF
            watch.add_watch(self.folder, changed | flags.MOVED_FROM | flags.MOVED_TO | ended)
            loop = asyncio.get_running_loop()
            readable = asyncio.Event()
            loop.add_reader(watch.fileno(), readable.set)
            try:
                while True:
                    await readable.wait()
                    if not self._drain(watch, readable, flags):
                        continue
                    closes = loop.time() + DEBOUNCE_MS / 1000
                    while (left := closes - loop.time()) > 0:
                        try:
                            await asyncio.wait_for(readable.wait(), min(left, self.step_ms / 1000))
                        except TimeoutError:
                            break  # quiet for step_ms: the save is over
                        self._drain(watch, readable, flags)
                    yield True
            finally:
                loop.remove_reader(watch.fileno())
        finally:
            watch.close()

    def _drain(self, watch: Any, readable: asyncio.Event, flags: Any) -> bool:
        """Read every queued event; True when one is about the file (or some were lost)."""
        readable.clear()
        hit = False
        for event in watch.read(timeout=0):
            if event.mask & (flags.IGNORED | flags.DELETE_SELF | flags.MOVE_SELF):
                raise OSError(f"the folder {self.folder} was removed or moved")
            hit = hit or event.name == self.path.name or bool(event.mask & flags.Q_OVERFLOW)
        return hit

    async def _next(self, pending: asyncio.Future[object]) -> bool:
        try:
            await pending
        except StopAsyncIteration:
            return False
        except Exception as error:  # OSError (inotify limits), Rust errors, a dead watch thread
            raise WatchError(self.path, error) from error
        return True
