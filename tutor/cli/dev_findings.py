"""What `attn-tutor dev check` reports: a Line per finding (a dev.* catalog key, its
parameters), and the wrong variants of mistakes.toml it runs."""

from __future__ import annotations

from dataclasses import dataclass, field

FORMAT_VERSION = 1


@dataclass
class Line:
    ok: bool
    key: str  # a dev.* catalog key
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Mistake:
    id: str
    step: str
    function: str
    code: str
    expect_check: str
    expect_keys: tuple[str, ...]
    header: str = ""
