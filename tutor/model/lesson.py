"""The lesson model and its loader. Pure: no torch, no Textual.

A lesson is a folder with a lesson.toml (steps, titles, hints), one Markdown text per step and
language, its messages (messages.<lang>.toml), a starter file and checks.py (which only the
worker loads). The built-in ones are under lessons/; a course adds its own folders of lessons
with --lessons DIR or ATTN_TUTOR_LESSONS (folders separated by the path separator).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from tutor import toml
from tutor.paths import lessons_dir, reference_dir

LANGS = ("en", "zh")
LESSONS_ENV = "ATTN_TUTOR_LESSONS"  # a course's own folders of lessons, beside the built-in ones
STEP_KINDS = ("checked", "experiment", "reflect")

# A setting's value as lesson.toml has it, arrays as lists (see _plain).
SettingValue = Any


@dataclass(frozen=True)
class Setting:
    """One setting of a step's run, cycled by its key in the app ([[steps.settings]]): the probe
    reads the current value as ctx.params[id]."""

    id: str
    key: str  # the key that moves it to the next value
    values: tuple[
        SettingValue, ...
    ]  # ints, strings, or lists (a range such as [64, 1024]) as lesson.toml has them
    default: SettingValue
    label: dict[str, str]  # per language
    names: dict[str, tuple[str, ...]] = field(
        default_factory=dict
    )  # per language, one per value (optional)

    def next(self, value: SettingValue) -> SettingValue:
        """The value after `value` (the default's successor if value is not one of them)."""
        values = list(self.values)
        start = values.index(value) if value in values else values.index(self.default)
        return values[(start + 1) % len(values)]

    def shown(self, value: SettingValue, lang: str) -> str:
        """How the value reads in the settings line: its name, or the value (a range as a–b)."""
        names = self.names.get(lang, ())
        if value in self.values and list(self.values).index(value) < len(names):
            return names[list(self.values).index(value)]
        if isinstance(value, (list, tuple)):
            return "–".join(str(v) for v in value)
        return str(value)


def _plain(value: Any) -> Any:
    """A TOML value as it crosses to the probe (JSON): arrays as lists."""
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


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
    settings: tuple[Setting, ...] = ()
    # The step whose result's visuals["heatmaps"] the weights panel (`w`) draws, as lesson.toml
    # names it (weights_from = "output"; its own id for a step that draws its own). Without it,
    # the panel draws whatever heatmaps the step's own results carry.
    weights_declared: str = ""

    @property
    def weights_from(self) -> str:
        return self.weights_declared or self.id

    @property
    def checked(self) -> bool:
        return self.kind == "checked"

    def default_settings(self) -> dict[str, SettingValue]:
        return {s.id: _plain(s.default) for s in self.settings}

    def setting_for_key(self, key: str) -> Setting | None:
        return next((s for s in self.settings if s.key == key), None)

    def question_keys(self) -> tuple[str, ...]:
        """The key of each question: 1, 2, ... (dev check reports a setting on one of them)."""
        n = max((len(v) for v in self.questions.values()), default=0)
        return tuple(str(i + 1) for i in range(n))


@dataclass(frozen=True)
class Lesson:
    id: str
    title: dict[str, str]
    file_name: str  # the learner's file, under the workspace folder
    folder: Path
    steps: tuple[Step, ...]
    answers_name: str = ""  # the answers file's name in the workspace ([answers] file)

    @property
    def answers_file(self) -> str:
        return self.answers_name or f"{self.id}-answers.md"

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

    def messages(self, lang: str) -> dict[str, str]:
        """The lesson's own catalog in lang, keys as its checks write them (no prefix)."""
        return _messages(self.folder / f"messages.{lang}.toml")

    def message_keys(self) -> frozenset[str]:
        return frozenset(k for lang in LANGS for k in self.messages(lang))

    def text(self, step_id: str, lang: str) -> str:
        return (self.folder / "text" / lang / f"{step_id}.md").read_text(encoding="utf-8")

    @property
    def starter_path(self) -> Path:
        return self.folder / "starter.py"

    @property
    def warmup_path(self) -> Path:
        """Optional: what a spare child runs before a learner's file arrives (warm_up_path)."""
        return self.folder / "warmup.py"

    @property
    def warm_up_path(self) -> Path:
        """The file a spare warms up on: warmup.py, deliberately no solution, or the starter."""
        return self.warmup_path if self.warmup_path.is_file() else self.starter_path

    @property
    def checks_path(self) -> Path:
        return self.folder / "checks.py"

    @property
    def reference_path(self) -> Path:
        # The reference/ folder beside the lessons' folder: reference_dir() for the installed
        # lessons (checkout and wheel alike), and a copy's own for a lesson loaded by path; a
        # course's lesson may keep it in its own folder instead, as reference.py.
        own = self.folder / "reference.py"
        if own.is_file():
            return own
        return self.folder.parent.parent / reference_dir().name / self.file_name


def _per_lang(table: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{where}: '{key}' must be a table with one entry per language")
    return value


@cache
def _messages(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    return toml.flatten(toml.loads(path.read_text(encoding="utf-8")))


# folder (resolved) -> a lesson given, not read: see preload.
_preloaded: dict[Path, Lesson] = {}


def preload(lessons: Iterable[Lesson]) -> None:
    """load_lesson(folder) returns these from now on, without reading lesson.toml: the check
    worker's processes get the lessons without their model answers (without_answers), and a
    checks file's declared_settings must not read them back in."""
    _preloaded.update({Path(lesson.folder).resolve(): lesson for lesson in lessons})


def without_answers(lesson: Lesson) -> Lesson:
    """The lesson with no step's model answers: the check worker never needs them."""
    from dataclasses import replace

    return replace(lesson, steps=tuple(replace(s, answers={}) for s in lesson.steps))


def load_lesson(folder: Path) -> Lesson:
    """The lesson in this folder (KeyError, ValueError or a TOML error when lesson.toml is not one)."""
    if _preloaded:
        known = _preloaded.get(Path(folder).resolve())
        if known is not None:
            return known
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
                settings=tuple(_setting(s, where) for s in raw.get("settings", ())),
                weights_declared=str(raw.get("weights_from", "")),
                points=points,
            )
        )
    return Lesson(
        id=data["id"],
        title=dict(data["title"]),
        file_name=data["file"],
        folder=folder,
        steps=tuple(steps),
        answers_name=str(data.get("answers", {}).get("file", "")),
        version=str(data.get("version", "1")),
    )


def _setting(raw: dict[str, Any], where: str) -> Setting:
    values = tuple(_plain(v) for v in raw["values"])
    default = _plain(raw.get("default", values[0] if values else None))
    if default not in values:
        raise ValueError(
            f"{where}: setting {raw.get('id')!r} has a default that is not one of its values"
        )
    return Setting(
        id=raw["id"],
        key=str(raw["key"]),
        values=values,
        default=default,
        label=dict(_per_lang(raw, "label", where)),
        names={k: tuple(v) for k, v in _per_lang(raw, "names", where).items()},
    )


def extra_dirs(environ: Mapping[str, str] = os.environ) -> tuple[Path, ...]:
    return tuple(
        Path(p).expanduser().resolve() for p in environ.get(LESSONS_ENV, "").split(os.pathsep) if p
    )


def _lesson_folders(root: Path) -> list[Path]:
    """root's sub-folders that hold a lesson, or root itself when it is one lesson's folder."""
    if (root / "lesson.toml").is_file():
        return [root]
    return [f for f in sorted(root.iterdir()) if (f / "lesson.toml").is_file()]


def lessons_in(root: Path) -> list[Lesson]:
    """The lessons in root's sub-folders, or root itself when it is one lesson's folder."""
    return [load_lesson(f) for f in _lesson_folders(root)]


# A course's lessons that could not be loaded: (folder, why), filled by all_lessons.
_skipped: list[tuple[Path, str]] = []


def _course_lessons(root: Path) -> list[Lesson]:
    """lessons_in(root), less the lessons that do not load (lesson.toml or a catalog that is
    not valid TOML, a field missing): each is skipped and said (skipped_lessons), so that one
    course lesson with a typo leaves the tutor and the other lessons working."""
    loaded = []
    for folder in _lesson_folders(root):
        name = "lesson.toml"
        try:
            lesson = load_lesson(folder)
            for lang in LANGS:
                name = f"messages.{lang}.toml"
                lesson.messages(lang)
        except Exception as exc:  # anything in a course's files: that lesson's, not the tutor's
            _skipped.append((folder, f"{name}: {exc}"))
            continue
        loaded.append(lesson)
    return loaded


def skipped_lessons() -> tuple[tuple[Path, str], ...]:
    """The course's lesson folders all_lessons left out, each with why."""
    all_lessons()
    return tuple(_skipped)


@cache
def all_lessons() -> tuple[Lesson, ...]:
    """The built-in lessons, then a course's own (ATTN_TUTOR_LESSONS); a course's lesson with a
    built-in one's id takes its place. A course's lesson that does not load is skipped."""
    found = {lesson.id: lesson for lesson in lessons_in(lessons_dir())}
    builtin = list(found)
    _skipped.clear()
    for root in extra_dirs():
        if root.is_dir():
            found.update({lesson.id: lesson for lesson in _course_lessons(root)})
    order = {"lm3-l3": 0, "lab-02": 1}  # the course's order; others after, by id
    return tuple(
        sorted(
            found.values(),
            key=lambda lesson: (lesson.id not in builtin, order.get(lesson.id, 2), lesson.id),
        )
    )


def lesson_ids() -> frozenset[str]:
    return frozenset(lesson.id for lesson in all_lessons())


def get_lesson(lesson_id: str) -> Lesson:
    for lesson in all_lessons():
        if lesson.id == lesson_id:
            return lesson
    raise KeyError(lesson_id)


def lesson_for_source(text: str) -> Lesson | None:
    """The lesson whose learner's names (its steps' functions) this source defines at top level
    the most of; None when it defines none, or two lessons tie."""
    defined = set(re.findall(r"^(?:async\s+)?(?:def|class)\s+(\w+)", text, re.M))
    scores = sorted(
        (
            (len(defined & {f for s in lesson.steps for f in s.functions}), lesson)
            for lesson in all_lessons()
        ),
        key=lambda pair: -pair[0],
    )
    if not scores or scores[0][0] == 0 or (len(scores) > 1 and scores[1][0] == scores[0][0]):
        return None
    return scores[0][1]


def lesson_for_file(path: Path) -> Lesson | None:
    """The lesson whose learner or reference file has this name, if any."""
    for lesson in all_lessons():
        if path.name == lesson.file_name:
            return lesson
    return None
