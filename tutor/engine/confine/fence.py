"""What the learner's code may not reach in a child: the tutor's reference solutions, the
lessons' folders (their checks, starters and texts) and the judge's cache of the mutants'
outputs.

A file that imports or reads the reference that ships inside the package would pass every
step without a line of its own. So, in the child, before the learner's code runs:

- the modules of those folders leave sys.modules, so an import has to find them again;
- an audit hook (sys.addaudithook: it cannot be removed, and it sees every open(), os.open(),
  io.open_code() — imports, runpy, importlib, linecache and inspect all read through them)
  refuses to open a file or folder that is one of those folders or lies inside one, and the
  import of the packages by name.

A path is judged by what it opens, not by how it is spelt: each folder on the way to the
file is stat()ed (following links, as the kernel does) and its (device, inode) compared with
the protected folders'. So symbolic links, hard links, `..`, /proc/self/root and a changed
working directory lead to the same refusal. A relative path may be meant for a directory fd
(os.open(..., dir_fd=fd)): the audit event does not carry the fd, so the path is also tried
against each directory this process holds open. The folders above the protected ones cannot
be opened as fds at all (a dir_fd pointing at /, say).

What stays reachable is listed in tests/reliability/README.md: another program (a subprocess
runs `cat`), raw syscalls (ctypes), and the harness's own objects in this process.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import posix
import sys

# Import names refused outright (whatever file they would come from); and the checks modules'
# names (worker.load_checks), which no folder on sys.path holds anyway.
BLOCKED_PACKAGES = ("tutor.reference", "tutor.lessons")
_BLOCKED_PREFIXES = tuple(p + "." for p in BLOCKED_PACKAGES) + ("attn_checks_",)
# Events that name a path to judge (args[0], and args[1] for the two-path ones).
_PATH_EVENTS = frozenset(
    {
        "open",
        "os.rename",
        "os.remove",
        "os.rmdir",
        "os.link",
        "os.truncate",
        "os.chmod",
        "os.chown",
        "os.utime",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.rmtree",
    }
)
_TWO_PATHS = frozenset({"os.rename", "os.link", "shutil.copyfile", "shutil.copytree"})
REFUSAL = "attn-tutor keeps its reference solutions and lesson checks away from your code"


class RefusedOpen(PermissionError):
    """A protected file or folder: the file's own code must do the work."""


class RefusedImport(ModuleNotFoundError):
    """A protected package (tutor.reference, tutor.lessons)."""


def protected_folders() -> list[str]:
    """The folders to protect: this tutor's reference/ and lessons/, and those an import of
    tutor.reference / tutor.lessons would find (an editable install may map them to another
    checkout); each as found and as its real path. Worker side, once."""
    from importlib.util import find_spec

    from tutor.model.lesson import all_lessons
    from tutor.paths import lessons_dir, mutant_cache_dir, reference_dir

    found = [str(reference_dir()), str(lessons_dir())]
    # The mutants' outputs the judge keeps: the reference's among them. Made now, so that its
    # folder is there to be judged by (its files come later).
    cache = mutant_cache_dir()
    with contextlib.suppress(OSError):
        cache.mkdir(parents=True, exist_ok=True)
    if cache.is_dir():
        found.append(str(cache))
    # A course's own lessons (--lessons DIR): each folder, and the reference beside it.
    found += [
        str(p)
        for lesson in all_lessons()
        for p in (lesson.folder, lesson.reference_path.parent)
        if p.is_dir()
    ]
    for name in BLOCKED_PACKAGES:
        try:
            spec = find_spec(name)
        except (ImportError, ValueError):
            continue
        found += list((spec.submodule_search_locations or []) if spec else [])
    found += [os.path.realpath(f) for f in found]
    return sorted({os.path.abspath(f) for f in found})


def inventory(folders: list[str]) -> tuple[frozenset, frozenset, tuple[str, ...]]:
    """(inodes inside the folders, inodes of the folders above them, the modules to evict).
    Every file is listed too, so that a hard link to one elsewhere is refused. Worker side."""
    inside, above = set(), set()
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            for name in [*dirs, *files, ""]:
                try:
                    st = os.stat(os.path.join(root, name))
                except OSError:
                    continue
                inside.add((st.st_dev, st.st_ino))
        parent = os.path.dirname(folder)
        while True:
            try:
                st = os.stat(parent)
                above.add((st.st_dev, st.st_ino))
            except OSError:
                pass
            if parent == os.path.dirname(parent):
                break
            parent = os.path.dirname(parent)
    return frozenset(inside), frozenset(above - inside), to_evict(tuple(folders))


def to_evict(folders: tuple[str, ...]) -> tuple[str, ...]:
    """Names in sys.modules of the protected packages, or of modules loaded from the folders.
    Worker side, once, before any child is forked: walking ~1100 modules in each spare touched
    (and so copied) their pages, ~10 ms a save."""
    # Paths as the import system wrote them, against the folders as found and as real paths.
    prefixes = tuple(f.rstrip(os.sep) + os.sep for f in folders)
    dotted = _BLOCKED_PREFIXES
    names = []
    for name, module in list(sys.modules.items()):
        blocked = name in BLOCKED_PACKAGES or name.startswith(dotted)
        if not blocked:
            attrs = getattr(module, "__dict__", None)  # not getattr(module, "__file__"): a lazy
            file = (
                attrs.get("__file__") if isinstance(attrs, dict) else None
            )  # module __getattr__ runs
            blocked = isinstance(file, str) and file.startswith(prefixes)
        if blocked:
            names.append(name)
    return tuple(names)


def evict(names: tuple[str, ...]) -> None:
    """Out of sys.modules (and off their parent package), so that no import finds them without
    reading the files."""
    for name in names:
        if sys.modules.pop(name, None) is not None:
            parent, _, child = name.rpartition(".")
            if parent in sys.modules:
                with contextlib.suppress(AttributeError):
                    delattr(sys.modules[parent], child)


def install(fence: tuple[frozenset, frozenset, tuple[str, ...]], on_import=None) -> None:
    """The child side, before the learner's code: evict, then hook. For the rest of the process.
    on_import(name): called for each module imported from then on (the sandbox watches for
    torch.compile's)."""
    inside, above, names = fence
    evict(names)
    # The hook's tools, taken now: the learner's code may patch os, os.path or str afterwards.
    stat, getcwd, readlink, listdir, fspath = (
        posix.stat,
        posix.getcwd,
        posix.readlink,
        posix.listdir,
        os.fspath,
    )
    fsdecode, isinstance_, str_, bytes_, type_ = os.fsdecode, isinstance, str, bytes, type
    # open() and os.open() hand the hook the path they will use; other calls may pass a path
    # object, asked again after the hook: only pathlib's (unpatched) are trusted to answer the same.
    trusted = {
        cls: cls.__fspath__ for cls in (pathlib.PurePosixPath, pathlib.PosixPath, os.DirEntry)
    }
    path_events, two_paths, packages, dotted = (
        _PATH_EVENTS,
        _TWO_PATHS,
        BLOCKED_PACKAGES,
        _BLOCKED_PREFIXES,
    )

    def key(path: str):
        try:
            st = stat(path)
        except (OSError, ValueError):
            return None
        return st.st_dev, st.st_ino

    def protected(path: str, as_fd_dir: bool) -> bool:
        """Is path, or a folder on its way, protected? (path absolute, not normalised: each
        prefix is stat()ed as the kernel would walk it)."""
        k = key(path)
        if k is not None and (k in inside or (as_fd_dir and k in above)):
            return True
        head = path
        while True:
            cut = head.rstrip("/").rfind("/")
            if cut <= 0:
                return False
            head = head[:cut]
            k = key(head)
            if k is not None and k in inside:
                return True

    def refused(raw, as_fd_dir: bool) -> bool:
        kind = type_(raw)
        if kind is int:
            return False  # an fd already open: it was judged when opened
        try:
            if isinstance_(raw, str_):
                path = str_.__str__(raw)  # a subclass's raw text: what the system call gets
            elif isinstance_(raw, bytes_):
                path = fsdecode(bytes_.__getitem__(raw, slice(None)))
            elif trusted.get(kind) is not None and kind.__fspath__ is trusted[kind]:
                path = fspath(raw)
                path = fsdecode(path) if type_(path) is bytes_ else path
            elif hasattr(kind, "__fspath__"):  # noqa: SIM103 (each kind of path its own branch)
                return (
                    True  # a path object of the learner's: asked again, it could answer otherwise
                )
            else:
                return False  # not a path: the call itself fails
        except Exception:
            return False
        if not path:
            return False
        if path[0] == "/":
            return protected(path, as_fd_dir)
        try:
            if protected(getcwd() + "/" + path, as_fd_dir):
                return True
            # Perhaps meant for a directory fd (dir_fd=): try it against each directory held open.
            fds = listdir("/proc/self/fd")
        except OSError:
            fds = []
        for fd in fds:
            try:
                where = readlink("/proc/self/fd/" + fd)
            except OSError:
                continue
            if where[:1] == "/" and protected(where + "/" + path, as_fd_dir):
                return True
        return False

    def hook(event, args):
        if event in path_events:
            if not args:
                return
            if refused(args[0], event == "open") or (
                event in two_paths and len(args) > 1 and refused(args[1], False)
            ):
                raise RefusedOpen(
                    errno.EACCES, REFUSAL, args[0] if isinstance_(args[0], str_) else str_(args[0])
                )
        elif event == "import" and args:
            name = args[0]
            if isinstance_(name, str_) and (name in packages or name.startswith(dotted)):
                raise RefusedImport(f"No module named {name!r} ({REFUSAL})", name=name)
            if on_import is not None:
                on_import(name)

    sys.addaudithook(hook)
