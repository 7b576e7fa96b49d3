"""The lesson's mutants' outputs kept on disk, so that each is run once per machine and version,
not once per judge: every `check`, every app started, every grading run shares them.

A file's name is a hash of all that could change what the mutant computes (the tutor's code,
the lesson's files, torch's and Python's versions, the inputs, the step, the mutant's source), so a file is
never stale: a change makes new names, and the folders of old versions are pruned. What is
kept is the codec's payload (no pickle); a file that does not decode is removed and run again.
Any error of the disk (read-only home, quota, NFS) costs the cache, never the verdict.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from tutor.engine import codec

KEEP = 3  # versions kept: a second install, a checkout beside it
_TUTOR = Path(__file__).resolve().parents[1]
MISSING = object()


def _files(folder: Path, pattern: str) -> list[Path]:
    return sorted(p for p in folder.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts)


def fingerprint(lesson_folder: Path, reference: str) -> str:
    import torch

    h = hashlib.sha256()
    h.update(f"{torch.__version__}\0{sys.version}\0".encode())
    for base, pattern in ((_TUTOR, "*.py"), (lesson_folder, "*")):
        for path in _files(base, pattern):
            h.update(f"{path.relative_to(base)}\0".encode())
            h.update(path.read_bytes())
    h.update(reference.encode())
    return h.hexdigest()[:24]


def inputs_digest(inputs) -> str:
    """A hash of the judge's inputs (a `grade --seed` makes others): tensors by their bytes,
    generators by their state, containers by their items."""
    import torch

    h = hashlib.sha256()

    def walk(x) -> None:
        if isinstance(x, torch.Tensor):
            t = x.detach().cpu().contiguous()
            h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
        elif isinstance(x, torch.Generator):
            walk(x.get_state())
        elif isinstance(x, dict):
            for k in sorted(x, key=repr):
                h.update(repr(k).encode())
                walk(x[k])
        elif isinstance(x, (list, tuple)):
            h.update(f"{type(x).__name__}{len(x)}".encode())
            for v in x:
                walk(v)
        elif x is None or isinstance(x, (bool, int, float, str)):
            h.update(repr(x).encode())
        else:
            h.update(type(x).__qualname__.encode())

    walk(inputs)
    return h.hexdigest()[:16]


class MutantCache:
    def __init__(self, root: Path, version: str, inputs: str):
        """version: fingerprint(); inputs: inputs_digest() of the judge's inputs."""
        self.folder = root / version
        self.inputs = inputs

    def path(self, step: str, name: str, source: str) -> Path:
        key = f"{step}\0{name}\0{source}\0{self.inputs}"
        key = hashlib.sha256(key.encode()).hexdigest()[:32]
        return self.folder / f"{key}.bin"

    def load(self, path: Path) -> object:
        """The kept outputs (None where the mutant gave none), or MISSING."""
        try:
            data = path.read_bytes()
        except OSError:
            return MISSING
        try:
            head, blob = codec.unpack_payload(data)
            assert isinstance(head, dict) and "tree" in head  # what store writes
            return None if head["tree"] is None else codec.decode(head["tree"], blob)
        except (ValueError, TypeError, KeyError, RecursionError, AssertionError):
            path.unlink(missing_ok=True)
            return MISSING


def store(path: Path, data: bytes) -> None:
    """data: the payload of {"tree": ...}; written whole or not at all (another process may
    read it at once)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass


def prune(root: Path, keep: int = KEEP) -> None:
    """Remove all but the `keep` versions last written to."""
    try:
        folders = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for old in folders[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
