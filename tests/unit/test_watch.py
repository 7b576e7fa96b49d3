"""The file watcher against real files, real editors' save sequences, the real watcher."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tutor.workspace.watch import FileWatcher, Saved, WatchError, needs_polling

WAIT = 3.0  # no single expectation may take longer than this
QUIET = 0.25  # how long "nothing more arrives" is watched for
NAME = "attention.py"


class Watching:
    def __init__(self, watcher: FileWatcher):
        self.watcher = watcher
        self.queue: asyncio.Queue = asyncio.Queue()

    async def run(self) -> None:
        try:
            async for saved in self.watcher.changes(initial=True):
                self.queue.put_nowait(saved)
        except Exception as error:  # surface it to the test instead of hanging
            self.queue.put_nowait(error)

    async def next(self) -> Saved:
        item = await asyncio.wait_for(self.queue.get(), WAIT)
        if isinstance(item, Exception):
            raise item
        return item

    async def expect(self, text: str) -> Saved:
        saved = await self.next()
        assert saved.text == text
        return saved

    async def quiet(self, seconds: float = QUIET) -> None:
        await asyncio.sleep(seconds)
        assert self.queue.empty(), [getattr(s, "text", s) for s in self.queue._queue]


@contextlib.asynccontextmanager
async def watching(path: Path, **kwargs):
    w = Watching(FileWatcher(path, **kwargs))
    task = asyncio.create_task(w.run())
    try:
        if path.exists():
            await w.next()  # the initial content: from here on the watch is live
        yield w
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, WAIT)


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / NAME
    path.write_text("v0\n")
    return path


async def test_plain_write(target: Path):
    async with watching(target) as w:
        assert w.watcher.mode == "inotify"
        target.write_text("v1\n")
        saved = await w.expect("v1\n")
        assert saved.raw == b"v1\n" and len(saved.digest) == 64
        target.write_text("v2\n")
        await w.expect("v2\n")
        await w.quiet()


async def test_initial_yield_then_immediate_write_is_seen(tmp_path: Path):
    path = tmp_path / NAME
    path.write_text("first\n")
    w = FileWatcher(path)
    gen = w.changes(initial=True)
    try:
        assert (await asyncio.wait_for(gen.__anext__(), WAIT)).text == "first\n"
        path.write_text("second\n")  # no gap between "read" and "watching"
        assert (await asyncio.wait_for(gen.__anext__(), WAIT)).text == "second\n"
    finally:
        await gen.aclose()


async def test_without_initial_the_first_save_is_the_first_yield(target: Path):
    gen = FileWatcher(target).changes()
    try:
        first = asyncio.ensure_future(gen.__anext__())
        await asyncio.sleep(0.1)
        assert not first.done()  # the content at start is the baseline, not a save
        target.write_text("v1\n")
        assert (await asyncio.wait_for(first, WAIT)).text == "v1\n"
    finally:
        await gen.aclose()


async def test_vim_save_rename_over(target: Path):
    folder = target.parent
    async with watching(target) as w:
        swap = folder / f".{NAME}.swp"
        swap.write_bytes(b"swap" * 100)  # while editing: the swap file churns
        swap.write_bytes(b"swap" * 200)
        await w.quiet()
        probe = folder / "4913"  # vim checks it may create files here
        probe.write_bytes(b"")
        probe.unlink()
        (folder / f"{NAME}~").write_text(target.read_text())  # the backup
        new = folder / f".{NAME}.new"
        new.write_text("vim 1\n")
        os.replace(new, target)
        (folder / f"{NAME}~").unlink()
        swap.unlink()
        await w.expect("vim 1\n")
        await w.quiet()


async def test_vim_save_backup_by_rename(target: Path):
    folder = target.parent
    async with watching(target) as w:
        (folder / "4913").write_bytes(b"")
        (folder / "4913").unlink()
        os.replace(target, folder / f"{NAME}~")  # the old file becomes the backup
        target.write_text("vim 2\n")  # the new file is written fresh
        (folder / f"{NAME}~").unlink()
        await w.expect("vim 2\n")
        await w.quiet()


async def test_jetbrains_safe_write(target: Path):
    folder = target.parent
    async with watching(target) as w:
        tmp = folder / f"{NAME}___jb_tmp___"
        old = folder / f"{NAME}___jb_old___"
        tmp.write_text("jb 1\n")
        os.replace(target, old)
        os.replace(tmp, target)
        old.unlink()
        await w.expect("jb 1\n")
        await w.quiet()


async def test_vscode_truncate_then_write(target: Path):
    async with watching(target) as w:
        for i in range(8):  # a few rounds: the race is timing-dependent
            await asyncio.sleep(0.1)
            with open(target, "w"):
                pass  # truncated: the file is empty for a moment
            await asyncio.sleep(0.010)
            with open(target, "a") as f:
                f.write(f"code {i}\n")
            await w.expect(f"code {i}\n")  # never the empty in-between state
        await w.quiet()


async def test_a_file_left_empty_is_yielded(target: Path):
    async with watching(target) as w:
        target.write_text("")
        saved = await w.expect("")
        assert saved.raw == b""
        await w.quiet()


async def test_emacs_lock_backup_and_autosave(target: Path):
    folder = target.parent
    async with watching(target) as w:
        lock = folder / f".#{NAME}"
        os.symlink(f"learner@host.{os.getpid()}:1700000000", lock)  # dangling, as emacs does
        autosave = folder / f"#{NAME}#"
        autosave.write_text("half typed")
        await w.quiet()
        os.replace(target, folder / f"{NAME}~")  # backup-by-renaming, emacs' default
        target.write_text("emacs 1\n")
        autosave.unlink()
        lock.unlink()
        await w.expect("emacs 1\n")
        await w.quiet()


async def test_delete_then_recreate(target: Path):
    async with watching(target) as w:
        target.unlink()
        await w.quiet()  # a missing file is not a state to check
        target.write_text("back\n")
        await w.expect("back\n")
        target.unlink()
        target.write_text("back\n")  # re-created with the same content: nothing new
        await w.quiet()


async def test_same_content_twice_yields_once(target: Path):
    async with watching(target) as w:
        target.write_text("same\n")
        await w.expect("same\n")
        target.write_text("same\n")
        await w.quiet()
        target.write_text("v0\n")  # back to an earlier content is a change again
        await w.expect("v0\n")


async def test_invalid_utf8_has_no_text_but_keeps_bytes(target: Path):
    async with watching(target) as w:
        target.write_bytes(b"x = '\xff'\n")
        saved = await w.next()
        assert saved.text is None and saved.raw == b"x = '\xff'\n"


async def test_missing_file_at_start_then_created(tmp_path: Path):
    path = tmp_path / NAME
    async with watching(path) as w:
        await w.quiet(0.1)
        path.write_text("new\n")
        await w.expect("new\n")


async def test_polling_mode_sees_saves(target: Path):
    async with watching(target, poll=True, poll_ms=50) as w:
        assert w.watcher.mode == "polling"
        target.write_text("p1\n")
        await w.expect("p1\n")
        # a second save within the same second (format-on-save) must not be lost
        target.write_text("p2\n")
        await w.expect("p2\n")
        tmp = target.parent / f"{NAME}___jb_tmp___"
        tmp.write_text("p3\n")
        os.replace(tmp, target)
        await w.expect("p3\n")
        await w.quiet()


async def test_missing_folder_raises_watch_error(tmp_path: Path):
    gen = FileWatcher(tmp_path / "nowhere" / NAME).changes()
    with pytest.raises(WatchError) as info:
        await asyncio.wait_for(gen.__anext__(), WAIT)
    assert info.value.key == "watch.failed" and "nowhere" in info.value.params["path"]


def test_watcher_that_cannot_start_raises_watch_error(tmp_path: Path):
    # Out of file descriptors, inotify_init fails as it does at the inotify
    # instance limit; run in a child so the test process keeps its limits.
    script = textwrap.dedent(
        """
        import asyncio, os, resource, sys
        from tutor.workspace.watch import FileWatcher, WatchError

        async def main():
            gen = FileWatcher(sys.argv[1]).changes()
            resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
            held = []
            try:
                while True:
                    held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                pass
            try:
                await gen.__anext__()
            except WatchError as error:
                print("WatchError", error.params["error"])

        asyncio.run(main())
        """
    )
    target = tmp_path / NAME
    target.write_text("x")
    out = subprocess.run(
        [sys.executable, "-c", script, str(target)],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.startswith("WatchError"), out.stderr


MOUNTS = """\
sysfs /sys sysfs rw,nosuid 0 0
/dev/vda1 / ext4 rw,relatime 0 0
server:/export/home /home nfs4 rw,vers=4.2 0 0
//nas/share /mnt/share cifs rw 0 0
drvfs /mnt/c 9p rw,dirsync 0 0
learner@host:/lab /mnt/remote fuse.sshfs rw,nosuid 0 0
/dev/vdb /home/local ext4 rw 0 0
/dev/vdc /mnt/my\\040disk ext4 rw 0 0
server:/x /mnt/my\\040disk/net nfs rw 0 0
"""


@pytest.mark.parametrize(
    "path, polled",
    [
        ("/home/ana/attn-lab/attention.py", True),  # nfs4
        ("/mnt/share/attn-lab/attention.py", True),  # cifs
        ("/mnt/c/Users/ana/attn-lab/attention.py", True),  # 9p (WSL)
        ("/mnt/remote/attn-lab/attention.py", True),  # fuse.sshfs
        ("/srv/attn-lab/attention.py", False),  # ext4 root
        ("/home/local/attn-lab/attention.py", False),  # longest prefix wins over /home
        ("/home/localx/attn-lab/attention.py", True),  # a prefix of a name is not a parent
        ("/mnt/my disk/attn-lab/attention.py", False),  # \040 unescaped
        ("/mnt/my disk/net/attention.py", True),
    ],
)
def test_needs_polling(path: str, polled: bool):
    assert needs_polling(Path(path), MOUNTS) is polled


def test_needs_polling_later_mount_on_same_point_wins():
    mounts = "/dev/vda / ext4 rw 0 0\nserver:/h /home nfs rw 0 0\n/dev/vdb /home ext4 rw 0 0\n"
    assert needs_polling(Path("/home/a/x.py"), mounts) is False
    assert needs_polling(Path("/home/a/x.py"), "/dev/vda / ext4 rw 0 0\n") is False


def test_needs_polling_reads_this_machine(tmp_path: Path):
    assert needs_polling(tmp_path / NAME) in (True, False)  # parses the real /proc/mounts


def test_poll_argument_decides_the_mode(tmp_path: Path):
    assert FileWatcher(tmp_path / NAME, poll=True).mode == "polling"
    assert FileWatcher(tmp_path / NAME, poll=False).mode == "inotify"


async def test_a_file_moved_away_and_back_is_said_gone_then_yielded_again(target: Path):
    """Issue #28, 2: moved away and back with the same bytes, the file was never seen again (the
    same digest), and its going away was never said. With missing=True: None once, then the
    content, even the same."""
    w = FileWatcher(target)
    gen = w.changes(initial=True, missing=True)
    try:
        assert (await asyncio.wait_for(gen.__anext__(), WAIT)).text == "v0\n"
        away = target.with_name("elsewhere.py")
        target.replace(away)
        assert await asyncio.wait_for(gen.__anext__(), WAIT) is None
        away.replace(target)
        assert (await asyncio.wait_for(gen.__anext__(), WAIT)).text == "v0\n"
    finally:
        await gen.aclose()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
async def test_on_linux_a_local_watch_runs_nothing_between_saves(target: Path):
    """The watch is inotify's fd on the event loop: no thread of its own (watchfiles' wakes
    every 2 ms, about 1.5 % of a core per learner), and saves are still seen. The reads run
    in the loop's executor (asyncio_N threads, asleep on their queue between saves)."""
    import threading

    before = set(threading.enumerate())
    async with watching(target, poll=False) as w:
        assert w.watcher.mode == "inotify"
        target.write_text("v1\n")
        await w.expect("v1\n")
        await w.quiet()
        new = set(threading.enumerate()) - before
        assert all(t.name.startswith("asyncio_") for t in new), new


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
async def test_the_folder_moved_away_ends_the_watch_with_a_watch_error(tmp_path: Path):
    """The app then says watching stopped (and keeps the manual re-run)."""
    folder = tmp_path / "lab"
    folder.mkdir()
    (folder / NAME).write_text("v0\n")
    gen = FileWatcher(folder / NAME, poll=False).changes(initial=True)
    try:
        assert (await asyncio.wait_for(gen.__anext__(), WAIT)).text == "v0\n"
        folder.rename(tmp_path / "elsewhere")
        with pytest.raises(WatchError):
            await asyncio.wait_for(gen.__anext__(), WAIT)
    finally:
        await gen.aclose()
