"""Where the lessons and reference solutions live, installed or in a checkout."""

from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    # An installed wheel maps lessons/ and reference/ into the package; a checkout
    # (or an editable install) keeps them beside it.
    for candidate in (_HERE / name, _HERE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"attn-tutor is missing its {name}/ folder")


def lessons_dir() -> Path:
    return _data_dir("lessons")


def reference_dir() -> Path:
    return _data_dir("reference")


def locales_dir() -> Path:
    return _HERE / "locales"


def mutant_cache_dir() -> Path:
    """Where the judge keeps its lessons' mutants' outputs (engine/mutant_cache.py): the user's
    cache folder. Learner code may not read it (it holds the reference's outputs)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "attn-tutor" / "mutants"
