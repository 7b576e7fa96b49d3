"""A step's settings as its lesson declares them, for a probe run with no one choosing."""

from __future__ import annotations

from pathlib import Path

from tutor.model.lesson import load_lesson


def declared_settings(checks_file: str, step_id: str) -> dict:
    """A step's settings as lesson.toml declares their defaults ({id: default}): what a probe
    gets when no one chose (attn-tutor check); the app sends the learner's current ones."""
    return load_lesson(Path(checks_file).resolve().parent).step(step_id).default_settings()
