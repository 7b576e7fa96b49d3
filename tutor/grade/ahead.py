"""The similarity fingerprints (similar.py), made in a thread while the class is graded: the
grading process waits for the worker most of the time (its torch import, then the children's
runs), so the report's similarity costs the run almost nothing at the end. Pure: no torch.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from tutor.grade.similar import MAX_BYTES, code_text, fingerprint


class Ahead:
    def __init__(self, paths: list[Path]):
        # path -> (sha256, text, k-grams); a file that cannot be read is left out
        self._done: dict[str, tuple[str, str, dict[int, list[int]]]] = {}
        self._stopped = False
        self._thread = threading.Thread(target=self._run, args=(paths,), daemon=True)
        self._thread.start()

    def _run(self, paths: list[Path]) -> None:
        for path in paths:
            if self._stopped:
                return
            try:  # never through a link, as the grade read it (collect.read_no_link)
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                with os.fdopen(fd, "rb") as f:
                    raw = f.read(MAX_BYTES + 1)
                text = code_text(path, raw) if len(raw) <= MAX_BYTES else None
            except OSError:
                continue
            if text is not None:
                digest = hashlib.sha256(raw).hexdigest()
                self._done[str(path)] = (digest, text, fingerprint(text))

    def stop(self) -> None:
        """A stopped run: what is done is used, the rest is made when needed."""
        self._stopped = True

    def get(self, path: str, sha256: str) -> tuple[str, dict[int, list[int]]] | None:
        """(text, k-grams) of the file as it was graded, if this made them."""
        self._thread.join()
        found = self._done.get(path)
        return (found[1], found[2]) if found and found[0] == sha256 else None
