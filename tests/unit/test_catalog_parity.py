"""Both catalogs say the same thing: for every key, engine and lessons alike, the en and zh texts
have the same placeholders and the same code spans (text in backticks, which is never translated)."""

from __future__ import annotations

import re
from collections import Counter

from tutor.text import i18n
from tutor.text.i18n import placeholders

EN = i18n.catalog("en")  # the engine's keys and every lesson's, under its id
ZH = i18n.catalog("zh")
CODE = re.compile(r"`[^`\n]+`")
PENDING: set[str] = set()  # keys known to differ, each with its reason: none now


def code_spans(text: str) -> Counter:
    return Counter(m.group() for m in CODE.finditer(text))


def test_the_merged_catalogs_hold_the_lessons_keys():
    assert any(k.startswith("lm3-l3.") for k in EN) and any(k.startswith("lab-02.") for k in EN)


def test_en_and_zh_give_the_same_placeholders_and_code():
    def problem(key):
        en, zh = EN[key], ZH[key]
        if placeholders(en) != placeholders(zh):
            return f"placeholders {placeholders(en)} ≠ {placeholders(zh)}"
        if code_spans(en) != code_spans(zh):
            return (
                f"code spans differ; en only: {sorted((code_spans(en) - code_spans(zh)).elements())}"
                f", zh only: {sorted((code_spans(zh) - code_spans(en)).elements())}"
            )
        return None

    found = {key: why for key in sorted(set(EN) & set(ZH)) if (why := problem(key))}
    assert set(found) == PENDING, [f"{k}: {why}" for k, why in found.items() if k not in PENDING]
