"""The glossary decides the terms: a term it rules out ("Not used — 不用") appears in no catalog,
lesson text or lesson.toml, in the language it is ruled out for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "lessons" / "GLOSSARY.md"
RULE = re.compile(r"^- (en|zh|any): (.+?) — (.+)$")


def ruled_out() -> list[tuple[str, str, str]]:
    """(lang, term, instead) of every line of the glossary's "Not used" section."""
    text = GLOSSARY.read_text(encoding="utf-8")
    section = re.search(r"^## Not used — 不用\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert section, "lessons/GLOSSARY.md has no section '## Not used — 不用'"
    rules = [m.groups() for m in map(RULE.match, section.group(1).splitlines()) if m]
    assert rules, "the glossary's 'Not used' section lists no term as '- lang: term — use instead'"
    return rules


def texts() -> list[tuple[str, Path]]:
    """(lang, file): every catalog, step text and lesson.toml; 'both' for a file with both languages."""
    out: list[tuple[str, Path]] = []
    for lang in ("en", "zh"):
        out.append((lang, ROOT / "tutor" / "locales" / f"{lang}.toml"))
    for folder in sorted(p.parent for p in (ROOT / "lessons").glob("*/lesson.toml")):
        out.append(("both", folder / "lesson.toml"))
        for lang in ("en", "zh"):
            out += [(lang, p) for p in sorted(folder.glob(f"messages.{lang}.toml"))]
            out += [(lang, p) for p in sorted((folder / "text" / lang).glob("*.md"))]
    return out


def _strip_comments(path: Path, text: str) -> str:
    # A catalog's comments describe keys, they are not shown: only the values count.
    return (
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        if path.suffix == ".toml"
        else text
    )


@pytest.mark.parametrize(
    "lang,term,instead", ruled_out(), ids=lambda x: x if len(x) < 30 else x[:30]
)
def test_no_text_uses_a_term_the_glossary_rules_out(lang, term, instead):
    found = []
    for file_lang, path in texts():
        if lang != "any" and file_lang not in (lang, "both"):
            continue
        text = _strip_comments(path, path.read_text(encoding="utf-8"))
        for n, line in enumerate(text.splitlines(), 1):
            hit = term.lower() in line.lower() if lang == "en" else term in line
            if hit:
                found.append(f"{path.relative_to(ROOT)}:{n}")
    assert not found, f"{term!r} is ruled out by the glossary (use: {instead}); found in {found}"


def test_the_glossary_lists_the_calques_the_review_found():
    terms = {term for _, term, _ in ruled_out()}
    assert {"对角线严格以上", "严格为 0", "泄漏"} <= terms
