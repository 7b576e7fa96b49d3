"""The message catalogs: zh.toml covers en.toml key for key, with the same placeholders,
actually in Chinese, and with Chinese punctuation after Chinese text."""

from __future__ import annotations

import re

import pytest
from rich.cells import cell_len

from tutor.text import i18n
from tutor.text.i18n import placeholders, t

EN = i18n.catalog("en")
ZH = i18n.catalog("zh")
ALL_KEYS = sorted(set(EN) | set(ZH))

# Keys whose Chinese text may legitimately contain no Chinese character
# (pure code, a bare number...). Each entry must still be a real key.
NO_CJK_OK = {
    "ui.app_title",  # the app's name
    "ui.key_lang",  # names the other language: "English" in the Chinese catalog
    "ui.foot_lang",  # the same, in the footer
    "visual.memory_T",  # a column headed by the symbol T
    "visual.memory_mb",  # the unit MB
    "visual.memory_qkv",  # a column headed by the code names q, k, v (with the Chinese enumeration comma)
    "ui.setting",  # a settings line's item: key, label and value, all placeholders
    "grade.test_name",  # a step's title and id, in full-width brackets in zh
    "value.none",  # Python's None, as the learner's code returned it
    "ui.weights_title",  # only placeholders and Chinese punctuation: 注意力权重——样本 0（1/2）
}

# Keys that are deliberately empty in en.toml (and so may be in zh.toml too).
EMPTY_OK: set[str] = (
    set()
)  # keys whose text may be empty (none now: a bar column's header is "" in the view)

HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Han characters plus CJK and full-width punctuation: none of these may be followed by , . : ;
CJK_TEXT = HAN + r"\u3000-\u303f\uff00-\uffef"
HAS_HAN = re.compile(f"[{HAN}]")
ASCII_PUNCT_AFTER_CJK = re.compile(f"[{CJK_TEXT}][,.:;]")
# A Han character touching a Latin letter, a digit, inline code or a placeholder, with no space.
NO_SPACE = re.compile(f"[{HAN}][A-Za-z0-9`{{]|[A-Za-z0-9`}}][{HAN}]")


def test_catalogs_are_not_empty():
    assert EN and ZH


@pytest.mark.parametrize("lang", i18n.LANGS)
def test_every_key_exists_in_every_language(lang):
    missing = [k for k in ALL_KEYS if k not in i18n.catalog(lang)]
    assert not missing, f"{lang}.toml lacks: {missing}"


def offenders(problem) -> list[str]:
    """Every key's problem under one rule, so that a failure lists them all at once."""
    return [f"{key}: {found}" for key in ALL_KEYS if (found := problem(key))]


def test_values_are_non_empty_strings():
    def problem(key):
        for lang in i18n.LANGS:
            value = i18n.catalog(lang).get(key)
            if not isinstance(value, str):
                return f"{lang} is {type(value).__name__}"
            if key not in EMPTY_OK and not value.strip():
                return f"{lang} is empty"
        return None

    assert not offenders(problem)


def test_empty_whitelist_names_real_keys():
    assert set(EN) >= EMPTY_OK, EMPTY_OK - set(EN)


def test_zh_keeps_the_order_of_en():
    shared = [k for k in EN if k in ZH]
    assert [k for k in ZH if k in EN] == shared


def test_placeholders_match():
    def problem(key):
        en, zh = EN.get(key), ZH.get(key)
        if en is None or zh is None:
            return None  # reported by test_every_key_exists_in_every_language
        if placeholders(zh) != placeholders(en):
            return f"en {placeholders(en)} vs zh {placeholders(zh)}"
        return None

    assert not offenders(problem)


def test_likely_stays_at_the_end():
    def problem(key):
        en, zh = EN.get(key), ZH.get(key)
        if en is None or zh is None or not en.rstrip().endswith("{likely}"):
            return None
        return None if zh.rstrip().endswith("{likely}") else "zh must end with {likely} as en does"

    assert not offenders(problem)


def test_zh_is_chinese():
    def problem(key):
        en, zh = EN.get(key), ZH.get(key)
        if en is None or zh is None or key in NO_CJK_OK or not re.search(r"[A-Za-z]", en):
            return None
        return None if HAS_HAN.search(zh) else f"zh has no Chinese character: {zh!r}"

    assert not offenders(problem)


def test_whitelist_names_real_keys():
    assert set(EN) >= NO_CJK_OK, NO_CJK_OK - set(EN)


FOOTER_KEYS = [k for k in EN if k.startswith("ui.foot_")]


@pytest.mark.parametrize("key", FOOTER_KEYS)
def test_footer_labels_are_short(key):
    """The footer is one line of nine keys: a label is at most 4 CJK characters (8 cells)."""
    for lang in i18n.LANGS:
        assert cell_len(i18n.catalog(lang)[key]) <= 8, f"{lang}:{key} is too long for the footer"


@pytest.mark.parametrize("lang", i18n.LANGS)
def test_footer_fits_80_columns(lang):
    from tutor.app.widgets import FOOTER_KEYS as KEYS

    line = "".join(f"{key} {t(f'ui.{label}', lang)}  " for key, label in KEYS).rstrip()
    assert cell_len(line) <= 80, f"{lang}: the footer is {cell_len(line)} cells wide: {line!r}"


def test_memory_note_names_the_zh_column_headers():
    """The note under the memory table quotes the column headers; it must quote the ones shown."""
    note = ZH["visual.memory_measured_note"]
    for name in ("scores", "mb", "qkv", "ratio", "measured"):
        key = f"visual.memory_{name}"
        assert f"「{ZH[key]}」" in note, f"{key} = {ZH[key]!r} is not quoted in the memory note"


def test_no_ascii_punctuation_after_chinese():
    def problem(key):
        bad = [m.group() for m in ASCII_PUNCT_AFTER_CJK.finditer(ZH.get(key, ""))]
        return f"use full-width punctuation after Chinese text: {bad}" if bad else None

    assert not offenders(problem)


def test_space_between_chinese_and_latin():
    def problem(key):
        bad = [m.group() for m in NO_SPACE.finditer(ZH.get(key, ""))]
        return (
            f"put a space between Chinese and Latin text, code or placeholders: {bad}"
            if bad
            else None
        )

    assert not offenders(problem)


@pytest.mark.parametrize("lang", i18n.LANGS)
def test_renders_with_its_parameters(lang):
    def problem(key):
        template = i18n.catalog(lang).get(key)
        if template is None:
            return None
        params = {name: f"<{name}>" for name in placeholders(template)}
        text = i18n.t(key, lang, **params)
        unfilled = [name for name in params if f"<{name}>" not in text]
        return f"did not fill {unfilled}: {text!r}" if unfilled else None

    assert not offenders(problem)


def test_nested_likely_message_renders_in_chinese():
    text = i18n.t(
        "check.shape",
        "zh",
        what="weights",
        expected="(2, 6, 6)",
        got="(2, 6, 4)",
        likely={"key": "likely.weights_shape", "params": {}},
    )
    assert text.startswith("weights：")
    assert text.endswith(ZH["likely.weights_shape"])


def test_zh_drops_the_space_between_a_nested_chinese_value_and_chinese_text():
    # check.values starts with its {what}, a Latin name ("forward(x)：与参考结果") or a nested
    # message in Chinese, which must not leave a space before the text that follows.
    nested = t(
        "check.values",
        "zh",
        what={"key": "lm3-l3.value.again_last", "params": {}},
        err=0.5,
        where="(0,)",
        tol="1e-5",
        likely="",
    )
    assert "的输出：与参考结果" in nested
    latin = t("check.values", "zh", what="forward(x)", err=0.5, where="(0,)", tol="1e-5", likely="")
    assert latin.startswith("forward(x)：与参考结果")
    en = t(
        "check.values",
        "en",
        what={"key": "lm3-l3.value.again_last", "params": {}},
        err=0.5,
        where="(0,)",
        tol="1e-5",
        likely="",
    )
    assert "(last token changed): up to 0.5 away" in en


def test_closing_up_keeps_literal_braces_formats_and_spaces_between_fields():
    template = "{{字面}} 与 {a} 和 {b:>3} {c} 之后"
    values = {"a": "中文", "b": "x", "c": "文字"}
    parts = i18n._close_parts(i18n._fields(template), values)
    out = "".join(
        literal + ("" if name is None else i18n._field_text(name, spec or "", conv, values))
        for literal, name, spec, conv in parts
    )
    assert out == "{字面} 与中文和   x 文字之后"


def test_a_list_of_numbers_is_joined_as_each_language_writes_it():
    # 「第 0、3 行」 in Chinese, "rows 0, 3" in English; an int too long for str() still renders.
    assert i18n.localize([0, 3], "zh") == "0、3"
    assert i18n.localize([0, 3], "en") == "0, 3"
    assert isinstance(i18n.localize([10**5000], "en"), str)
