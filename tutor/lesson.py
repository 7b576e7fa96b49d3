"""The lesson model and its loader. Pure: no torch, no Textual.

A lesson is a folder under lessons/ with a lesson.toml (steps, titles, hints),
one Markdown text per step and language, a starter file and checks.py (which
only the worker loads).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import toml
from .paths import lessons_dir, reference_dir

LANGS = ("en", "zh")
STEP_KINDS = ("checked", "experiment", "reflect")


@dataclass(frozen=True)
class Step:
    id: str
    kind: str
    title: dict[str, str]
    hints: dict[str, tuple[str, ...]]
    questions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    answers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    functions: tuple[str, ...] = ()  # the learner's top-level names this step is about
    points: float = 1  # what a pass is worth in `attn-tutor grade` (lesson.toml `points`)

    @property
    def checked(self) -> bool:
        return self.kind == "checked"


@dataclass(frozen=True)
class Lesson:
    id: str
    title: dict[str, str]
    file_name: str  # the learner's file, under the workspace folder
    folder: Path
    steps: tuple[Step, ...]
    # lesson.toml `version`: the checks' edition, written beside every grade so that a grade
    # can be traced to the checks that gave it. Authors raise it when a step's verdicts change.
    version: str = "1"

    @property
    def max_points(self) -> float:
        return sum(s.points for s in self.checked_steps)

    @property
    def checked_steps(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.checked)

    def step(self, step_id: str) -> Step:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)

    def step_ids(self) -> list[str]:
        return [s.id for s in self.steps]

    def text(self, step_id: str, lang: str) -> str:
        return (self.folder / "text" / lang / f"{step_id}.md").read_text(encoding="utf-8")

    @property
    def starter_path(self) -> Path:
        return self.folder / "starter.py"

    @property
    def checks_path(self) -> Path:
        return self.folder / "checks.py"

    @property
    def reference_path(self) -> Path:
        # The reference/ folder beside the lessons' folder: reference_dir() for the installed
        # lessons (checkout and wheel alike), and a copy's own for a lesson loaded by path.
        return self.folder.parent.parent / reference_dir().name / self.file_name


def _per_lang(table: dict, key: str, where: str) -> dict:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{where}: '{key}' must be a table with one entry per language")
    return value


def load_lesson(folder: Path) -> Lesson:
    """The lesson in this folder (KeyError, ValueError or a TOML error when lesson.toml is not one)."""
    data = toml.loads((folder / "lesson.toml").read_text(encoding="utf-8"))
    steps = []
    for raw in data["steps"]:
        where = f"{folder.name}/{raw.get('id')}"
        if raw.get("kind") not in STEP_KINDS:
            raise ValueError(f"{where}: unknown kind {raw.get('kind')!r}")
        points = raw.get("points", 1)
        if isinstance(points, bool) or not isinstance(points, (int, float)) or points < 0:
            raise ValueError(f"{where}: 'points' must be a number ≥ 0, not {points!r}")
        steps.append(
            Step(
                id=raw["id"],
                kind=raw["kind"],
                title=dict(_per_lang(raw, "title", where)),
                hints={k: tuple(v) for k, v in _per_lang(raw, "hints", where).items()},
                questions={k: tuple(v) for k, v in _per_lang(raw, "questions", where).items()},
                answers={k: tuple(v) for k, v in _per_lang(raw, "answers", where).items()},
                functions=tuple(raw.get("functions", ())),
                points=points,
            )
        )
    return Lesson(
        id=data["id"],
        title=dict(data["title"]),
        file_name=data["file"],
        folder=folder,
        steps=tuple(steps),
        version=str(data.get("version", "1")),
    )


@lru_cache(maxsize=None)
def all_lessons() -> tuple[Lesson, ...]:
    found = []
    for folder in sorted(lessons_dir().iterdir()):
        if (folder / "lesson.toml").is_file():
            found.append(load_lesson(folder))
    return tuple(sorted(found, key=lambda l: (l.id != "lm3-l3", l.id)))


def get_lesson(lesson_id: str) -> Lesson:
    for lesson in all_lessons():
        if lesson.id == lesson_id:
            return lesson
    raise KeyError(lesson_id)


def lesson_for_file(path: Path) -> Lesson | None:
    """The lesson whose learner or reference file has this name, if any."""
    for lesson in all_lessons():
        if path.name == lesson.file_name:
            return lesson
    return None
