"""Removing a folder a learner's child has filled, whatever it made there. Standard library only.

shutil.rmtree recurses in Python (a tree 3,000 deep raised RecursionError and stayed) and gives
up on a folder its child made unreadable. Here the walk is a loop with one folder open at a
time: each level is opened relative to its parent with O_NOFOLLOW (a symbolic link is removed,
never entered, so nothing outside the folder is touched), and the way back up is "..", so depth
costs neither stack nor file descriptors. Names are never joined into paths (a name may hold a
newline; a path 3,000 deep is longer than PATH_MAX). A folder whose modes keep us out (000,
0500) is made ours again first: the child ran as our user.
"""

from __future__ import annotations

import contextlib
import os
import stat

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _open_dir(name: str, dir_fd: int | None) -> int:
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=dir_fd)  # a folder (lstat said so), not a link
        return os.open(name, _DIR, dir_fd=dir_fd)


def _empty_out(fd: int) -> list[str]:
    """Unlink everything in the open folder but its sub-folders; return those."""
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o700)  # write and search, for a folder the child set 0500 or 0000
    folders = []
    with os.scandir(fd) as entries:
        names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
    for name, is_dir in names:
        if is_dir:
            folders.append(name)
            continue
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        except IsADirectoryError:  # replaced by a folder since the scan
            folders.append(name)
    return folders


def remove_tree(path: str, tries: int = 3) -> bool:
    """Remove path and all under it; a link at path is removed itself. True when it is gone.
    Never raises: what cannot be removed is left, and the caller says so. A pass cut short (an
    entry that came or went under it) is followed by another."""
    return any(_remove_once(os.fspath(path)) for _ in range(tries))


def _remove_once(path: str) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(path)
            return True
        fd = _open_dir(path, None)
    except OSError:
        return False
    # stack[i]: the sub-folders of level i still to remove; names[i]: the folder fd is in at i+1
    stack: list[list[str]] = []
    names: list[str] = []
    try:
        stack.append(_empty_out(fd))
        while stack:
            pending = stack[-1]
            if pending:
                name = pending.pop()
                try:
                    child = _open_dir(name, fd)
                except FileNotFoundError:
                    continue
                except OSError:
                    continue  # left: rmdir of its parent fails below, and we report it
                os.close(fd)
                fd = child
                names.append(name)
                stack.append(_empty_out(fd))
                continue
            stack.pop()
            if not names:
                break
            parent = os.open("..", _DIR, dir_fd=fd)
            os.close(fd)
            fd = parent
            name = names.pop()
            try:
                os.rmdir(name, dir_fd=fd)
            except FileNotFoundError:
                pass
            except OSError:
                pass  # something stayed in it; the folder at path then stays too
    except OSError:
        pass
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True
