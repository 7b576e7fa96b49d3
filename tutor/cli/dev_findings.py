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


def off_steps(results, order: list[str], wanted: str) -> list[dict]:
    """The steps whose status is not the wanted one, as messages (rendered in the reader's
    language): the status, and the first check that did not pass with its message key."""
    by_id = {r.id: r for r in results}
    off = []
    for step in order:
        r = by_id.get(step)
        if r is None:
            off.append({"key": "dev.step_missing", "params": {"step": step}})
        elif r.status != wanted:
            first = next((c for c in r.checks if c.status != "pass"), None)
            status = {"key": f"status.{r.status}", "params": {}}
            if first is None or r.status == "pass":
                off.append({"key": "dev.step_status", "params": {"step": step, "status": status}})
            else:
                off.append(
                    {
                        "key": "dev.step_failing",
                        "params": {
                            "step": step,
                            "status": status,
                            "check": first.id,
                            "message": first.message.key if first.message else first.status,
                        },
                    }
                )
    return off
