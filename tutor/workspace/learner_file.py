"""The learner's file as the Python the checks run: a `.py` as it is, a notebook's code cells
(notebook.py); or why nothing can be run. One door for the app, `check` and `grade`, so that
the three read a file, and say its positions, the same way. No torch, no Textual."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tutor.model.results import JSONDict, StepResult
from tutor.workspace import notebook as nb


@dataclass(frozen=True)
class LearnerText:
    text: str | None  # None: nothing can be run, `problem` says why
    problem: tuple[str, JSONDict] | None = None  # a failure message key and its parameters
    notebook: nb.NotebookSource | None = None  # the places of the text's lines in the notebook


def learner_text(path: Path | str, raw: bytes) -> LearnerText:
    from tutor.engine.client import decode_source, too_large

    if nb.is_notebook(path):
        try:
            source = nb.read_notebook(raw, Path(path).absolute().parent)
        except nb.NotebookError as error:
            return LearnerText(None, (error.key, error.params))
        # The limit is on the code: a notebook's stored outputs (plots) are never run.
        big = too_large(len(source.text.encode("utf-8")))
        if big is not None:
            return LearnerText(None, ("failure.too_large", big), source)
        return LearnerText(source.text, None, source)
    big = too_large(len(raw))
    if big is not None:
        return LearnerText(None, ("failure.too_large", big))
    text, bad = decode_source(raw)
    if text is None:
        return LearnerText(None, ("failure.encoding", bad or {}))
    return LearnerText(text)


_needs: dict[str, nb.Needs] = {}


def lesson_needs(lesson: Any) -> nb.Needs:
    """The signatures of the lesson's functions, as its starter has them (read once)."""
    key = str(lesson.starter_path)
    if key not in _needs:
        _needs[key] = _read_needs(lesson)
    return _needs[key]


def _read_needs(lesson: Any) -> nb.Needs:
    names = {f for s in lesson.steps for f in s.functions}
    try:
        starter = Path(lesson.starter_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        starter = ""
    return nb.needs_of(starter, names)


def placed(results: list[StepResult], learner: LearnerText, lesson: Any) -> list[StepResult]:
    """The verdicts with their positions said in the learner's file (cells, for a notebook)."""
    if learner.notebook is None:
        return results
    needs = lesson_needs(lesson)
    return [nb.placed(r, learner.notebook, needs) for r in results]
