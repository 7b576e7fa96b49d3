"""The learner's file, loaded afresh for a step, and what went wrong in it said as data: the
exception's kind, detail and frames in the file, and which confinement refused it (an audit
hook notes the calls the kernel may refuse next)."""

from __future__ import annotations

import errno
import linecache
import os
import sys
import traceback
import types
from typing import Any

from tutor.engine import codec
from tutor.engine.confine import child_confinement, fence
from tutor.engine.confine import syscalls as sc
from tutor.kit import probe_tools

_exec = exec  # as it was before the learner's code ran (see child.py)
# OSError's own slot descriptors (typeshed types them as the values they give).
_OS_ERRNO: Any = OSError.errno
_OS_FILENAME: Any = OSError.filename


class LearnerImportError(Exception):
    def __init__(self, failure: dict):
        super().__init__(failure.get("detail", ""))
        self.failure = failure


def safe_text(obj, limit: int = 1000) -> str:
    try:  # a learner's exception may have a __str__ that raises or loops (the deadline covers loops)
        return str.__str__(str(obj))[:limit]
    except BaseException:
        return f"<{codec.type_name(obj)}>"


def describe_exception(exc: BaseException, filename: str, source: str) -> dict:
    lines = source.splitlines()
    frames = []
    for fs in traceback.extract_tb(exc.__traceback__):
        if fs.filename == filename and fs.lineno:
            code = lines[fs.lineno - 1] if 0 < fs.lineno <= len(lines) else ""
            frames.append({"line": fs.lineno, "function": fs.name, "code": code.rstrip()})
    caret = ""
    if isinstance(exc, SyntaxError) and isinstance(exc.lineno, int):
        text = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else safe_text(exc.text or "")
        col = max((exc.offset or 1) - 1, 0) if isinstance(exc.offset, int) else 0
        caret = f"{exc.lineno:>4} | {text.rstrip()}\n     | {' ' * col}^"
        frames = [{"line": exc.lineno, "function": "<module>", "code": text.rstrip()}]
    try:  # the class's own name, as Python prints it (a metaclass could lie through a property)
        kind = str.__str__(type.__getattribute__(type(exc), "__name__"))
    except Exception:
        kind = "Exception"
    detail = safe_text(exc.msg) if isinstance(exc, SyntaxError) else safe_text(exc)
    if probe_tools.is_out_of_memory(exc):
        kind = "MemoryError"
    described = {"kind": kind, "detail": detail, "frames": frames[-8:], "caret": caret}
    described.update(_import_problem(exc))
    if "refused" not in described:
        described.update(_confinement_problem(exc))
    return described


def _confinement_problem(exc: BaseException) -> dict:
    """{"confined": "network"} for an OSError after the code tried the network (seccomp refuses
    its sockets), "write" or "read" for a file Landlock refused, else {}."""
    seen = 0
    while isinstance(exc, BaseException) and seen < 8:
        seen += 1
        if child_confinement.confined["forks"] and (
            isinstance(exc, BlockingIOError)
            or (type(exc) is RuntimeError and "can't start new thread" in safe_text(exc))
        ):
            return {"confined": "processes"}  # EAGAIN from fork or clone: the pids cgroup's bound
        if isinstance(exc, OSError):
            if child_confinement.confined["network"] and network_tried:
                return {"confined": "network"}
            try:  # the slots' own values: a learner's subclass may lie through properties
                code = _OS_ERRNO.__get__(exc)
                path = _OS_FILENAME.__get__(exc)
            except Exception:
                code, path = None, None
            if child_confinement.confined["syscalls"] and code == errno.EPERM and metadata_tried:
                return {"confined": "metadata"}  # seccomp refuses chmod, utime, chown, setxattr
            if child_confinement.confined["syscalls"] and code == errno.ENOSYS:
                return {"confined": "syscall"}  # a call the allow-list does not name
            if child_confinement.confined["file_size"] and code == errno.EFBIG:
                return {"confined": "file_size"}
            if (
                child_confinement.confined["files"]
                and code in (errno.EACCES, errno.EPERM)
                and isinstance(path, (str, bytes))
                and path
            ):
                return {"confined": "read" if _refuses_reading(path) else "write"}
        try:
            exc = BaseException.__getattribute__(
                exc, "__cause__"
            ) or BaseException.__getattribute__(exc, "__context__")
        except Exception:
            break
    return {}


def _refuses_reading(path) -> bool:
    """Was the refused call a read? Told by the last path event the audit hook saw for this path
    (open's flags; every other call there is a change); for a call it did not see (ctypes),
    by whether this child may read the path at all."""
    writes = _last_path.get(path) if isinstance(path, str) else None
    if writes is not None:
        return not writes
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (PermissionError, fence.RefusedOpen):
        return True
    except (OSError, ValueError):
        return False  # not there: the code was making it
    os.close(fd)
    return False


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# Calls that change the file system, their path first (audit events); listing a folder reads it.
_CHANGE_EVENTS = frozenset(
    {
        "os.mkdir",
        "os.rename",
        "os.remove",
        "os.rmdir",
        "os.link",
        "os.symlink",
        "os.truncate",
        "os.chmod",
        "os.chown",
        "os.utime",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.rmtree",
        "shutil.move",
    }
)
_READ_EVENTS = frozenset({"os.listdir", "os.scandir"})
# path -> did the last call on it write? (by the path as given: what OSError.filename holds).
# Not just the last call: describing the error reads source files (linecache) before this is asked.
_last_path: dict = {}
_PATHS_KEPT = 256


_NETWORK_EVENTS = frozenset({"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr"})
network_tried: list = []  # non-empty once the step's code tried the network
# Calls that change a file's metadata (fchmod's path is its fd): refused by seccomp.
_METADATA_EVENTS = frozenset({"os.chmod", "os.chown", "os.utime", "os.setxattr", "os.removexattr"})
metadata_tried: list = []  # non-empty once the step's code made one


def _remember(path, writes: bool) -> None:
    if type(path) is str:
        if len(_last_path) >= _PATHS_KEPT:
            _last_path.clear()
        _last_path[path] = writes


def watch(event: str, args) -> None:
    """Audit hook: what the kernel may refuse next, for the message: the last path call (was it
    a write?), and whether the code reached for the network."""
    if event == "open":
        if args:
            flags = args[2] if len(args) > 2 and type(args[2]) is int else 0
            mode = args[1] if len(args) > 1 and type(args[1]) is str else ""
            _remember(args[0], bool(flags & _WRITE_FLAGS) or any(c in mode for c in "wax+"))
    elif event in _CHANGE_EVENTS or event in _READ_EVENTS:
        if args:
            _remember(args[0], event in _CHANGE_EVENTS)
        if event in _METADATA_EVENTS and not metadata_tried:
            metadata_tried.append(event)
    elif event in _METADATA_EVENTS and not metadata_tried:
        metadata_tried.append(event)
    elif event == "socket.__new__":
        if len(args) > 1 and args[1] != sc.AF_UNIX and not network_tried:
            network_tried.append(event)
    elif event in _NETWORK_EVENTS and not network_tried:
        network_tried.append(event)


def _import_problem(exc: BaseException) -> dict:
    """{"refused": True} when the fence refused something on the way (runpy and importlib wrap
    its error in their own), {"module": name} for a package Python could not find, else {}."""
    seen = 0
    module: dict[str, object] = {}
    imports = True  # a ValueError raised while handling an ImportError is not about a package
    while isinstance(exc, BaseException) and seen < 8:
        seen += 1
        if isinstance(exc, (fence.RefusedOpen, fence.RefusedImport)):
            return {"refused": True}  # the tutor's reference or checks: a message of its own
        imports = imports and isinstance(exc, ImportError)
        if imports and not module and isinstance(exc, ModuleNotFoundError):
            try:  # ImportError.name: the module Python could not find
                name = BaseException.__getattribute__(exc, "name")
            except Exception:
                name = None
            if isinstance(name, str) and name:
                name = str.__str__(name)
                # Not found where it is not shipped (a checkout: reference/ lies beside tutor/),
                # but the same refusal as where it is.
                if name in fence.BLOCKED_PACKAGES or name.startswith(fence._BLOCKED_PREFIXES):
                    return {"refused": True}
                module = {"module": name[:200]}
        try:
            exc = BaseException.__getattribute__(
                exc, "__cause__"
            ) or BaseException.__getattribute__(exc, "__context__")
        except Exception:
            break
    return module


def compile_learner(source: str, filename: str):
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except BaseException as exc:  # SyntaxError, or a MemoryError on a huge file
        raise LearnerImportError(describe_exception(exc, filename, source)) from None


def load_learner(source: str, filename: str, code=None) -> types.ModuleType:
    """A fresh module from the file: every step starts from the state the file's import makes."""
    if code is None:
        code = compile_learner(source, filename)
    module = types.ModuleType("learner")
    module.__file__ = filename
    # The source the file had when it was saved, for torch.jit.script (it reads a function's
    # source through linecache) even where the file is not on disk or has changed since.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules["learner"] = module
    try:
        _exec(code, module.__dict__)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: the file is at fault
        # Free what the file built (a memory bomb's list) before describing it needs memory.
        sys.modules.pop("learner", None)
        module.__dict__.clear()
        traceback.clear_frames(exc.__traceback__)
        raise LearnerImportError(describe_exception(exc, filename, source)) from None
    return module
