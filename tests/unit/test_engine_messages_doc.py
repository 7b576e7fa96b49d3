"""docs/engine-messages.md lists every message key of the engine's catalog a lesson's checks may
use, with its placeholders and its English text: it must be the catalog's. After a change of
tutor/locales/en.toml, write it again with

    python tests/unit/test_engine_messages_doc.py
"""

from __future__ import annotations

import string
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "engine-messages.md"
CATALOG = ROOT / "tutor" / "locales" / "en.toml"
# The catalog's sections a judge's messages come from, in the order the page gives them.
SECTIONS = {
    "check": "A failing check's message: `v.expect(check_id, ok, key, **params)`.",
    "likely": "A likely mistake: the `likely` parameter of a check's message.",
    "context": "Where a failure found inside another check happened (nested as `reason`).",
    "value": "What came, in a message (`describe(value)` makes these).",
    "region": "The name of a hidden region (`Region`, `judge_leak_map`).",
    "state": "What changed in a module's state (`state_unchanged`).",
    "story": "A stage of the training story (`judge_training_story`).",
    "checkname": "A passing check, by its id; a lesson's own `[checkname]` comes first.",
}
HEAD = """# The engine's messages

Generated from `tutor/locales/en.toml` by `tests/unit/test_engine_messages_doc.py`, which fails
when this page and the catalog differ. A lesson's checks may use every key here (each has its
twin in `zh.toml`, with the same placeholders) besides its own catalog's; see
[writing-a-lesson.md](writing-a-lesson.md). A placeholder given no value is shown as written.
"""


def placeholders(template: str) -> list[str]:
    names = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    return list(dict.fromkeys(names))


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def page() -> str:
    catalog = tomllib.loads(CATALOG.read_text(encoding="utf-8"))
    out = [HEAD]
    for section, what in SECTIONS.items():
        out += [f"\n## {section}\n\n{what}\n\n| key | placeholders | English |\n|---|---|---|"]
        for key, text in catalog[section].items():
            names = " ".join(f"`{{{n}}}`" for n in placeholders(text)) or "—"
            out.append(f"| `{section}.{key}` | {names} | {cell(text)} |")
    return "\n".join(out) + "\n"


def test_the_page_is_the_catalogs():
    assert DOC.read_text(encoding="utf-8") == page(), (
        "docs/engine-messages.md differs from the catalog: python tests/unit/test_engine_messages_doc.py"
    )


def test_the_guide_links_the_page():
    guide = (ROOT / "docs" / "writing-a-lesson.md").read_text(encoding="utf-8")
    assert "(engine-messages.md)" in guide


if __name__ == "__main__":
    DOC.write_text(page(), encoding="utf-8")
    sys.stdout.write(f"wrote {DOC.relative_to(ROOT)}\n")
