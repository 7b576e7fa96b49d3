"""What `attn-tutor dev check` reports: a Line per finding (a dev.* catalog key, its
parameters): ✓ or ✗, or ! for a warning, which passes."""

from __future__ import annotations

from dataclasses import dataclass, field

FORMAT_VERSION = 1


@dataclass
class Line:
    ok: bool
    key: str  # a dev.* catalog key
    params: dict = field(default_factory=dict)
    warn: bool = False  # ok, but the author should look: shown with "!"
