"""The message catalogs: the engine's, one TOML file per language under tutor/locales/, and each
lesson's own (lessons/<id>/messages.<lang>.toml), merged under the lesson's id.

Keys are dotted paths (``check.rows_sum``); values are ``str.format`` templates. A lesson's checks
write its keys without the prefix (``likely.mask_diagonal``); the judge qualifies them
(``lm3-l3.likely.mask_diagonal``, see qualify), so two lessons never share a key by accident.
Results carry keys and parameters, never rendered text, so the UI can switch
language without re-running anything.
"""

from __future__ import annotations

import os
import string
from functools import cache

from tutor import toml
from tutor.paths import locales_dir

LANGS = ("en", "zh")
DEFAULT_LANG = "en"


@cache
def engine_catalog(lang: str) -> dict[str, str]:
    path = locales_dir() / f"{lang}.toml"
    return toml.flatten(toml.loads(path.read_text(encoding="utf-8")))


@cache
def catalog(lang: str) -> dict[str, str]:
    """The engine's keys and every lesson's, each under its lesson's id."""
    from tutor.model.lesson import all_lessons

    merged = dict(engine_catalog(lang))
    for lesson in all_lessons():
        merged.update(lesson_catalog(lesson, lang))
    return merged


def lesson_catalog(lesson, lang: str) -> dict[str, str]:
    return {f"{lesson.id}.{key}": text for key, text in lesson.messages(lang).items()}


# A template's {word_X} is the lesson's word for X where its catalog has one (word.X: the KV
# cache lesson calls a step's state "the cache"), put in by qualify; else the engine's word.X
# ("the state"), put in when the message is rendered.
WORD_FIELD = "word_"


@cache
def _words(own: frozenset[str]) -> frozenset[str]:
    """The placeholders a lesson's own words fill: {word_X} for each word.X of its catalog."""
    return frozenset(WORD_FIELD + k.removeprefix("word.") for k in own if k.startswith("word."))


def qualify(value, lesson_id: str, own: frozenset[str]):
    """A verdict's messages with the lesson's own keys put under its id, and its own words in
    the {word_X} their templates ask for and their parameters lack: every nested message
    reference ({"key", "params"}) in value, in place. own: the lesson's unprefixed keys."""
    if isinstance(value, dict):
        if (
            isinstance(value.get("key"), str)
            and isinstance(value.get("params"), dict)
            and len(value) == 2
        ):
            if value["key"] in own:
                value["key"] = f"{lesson_id}.{value['key']}"
            params, words = value["params"], _words(own)
            if words:
                asked = placeholders(catalog(DEFAULT_LANG).get(value["key"], ""))
                for name in words & asked - params.keys():
                    word = "word." + name.removeprefix(WORD_FIELD)
                    params[name] = {"key": f"{lesson_id}.{word}", "params": {}}
            qualify(params, lesson_id, own)
        else:
            for v in value.values():
                qualify(v, lesson_id, own)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)):
                qualify(v, lesson_id, own)
    return value


def local_key(key: str) -> str:
    """A key as its lesson's checks write it: without the lesson's id in front."""
    from tutor.model.lesson import lesson_ids

    head, _, rest = key.partition(".")
    return rest if rest and head in lesson_ids() else key


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


# A message's parameters come from learner code (through the judge) as much as from the tutor:
# they are substituted as data, never read as a format string, and a key that is not in the
# catalog (a forged `likely.{0}`) is shown as its own text. Nothing here may raise.
MAX_DEPTH = 16  # message references nested in parameters, rendered at most this deep
MAX_VALUE = 4000  # characters of one rendered parameter


def _fields(template: str) -> list[tuple[str, str | None, str | None, str | None]]:
    """(literal, field name, spec, conversion) parts; a template that does not parse is all literal."""
    try:
        return list(string.Formatter().parse(template))
    except ValueError:
        return [(template, None, "", None)]


def _field_text(name: str, spec: str, conversion: str | None, values: dict) -> str:
    """One field's text: a plain name only (no `0`, `a.b`, `a[0]`: the template's own text stays)."""
    if not name.isidentifier() or name not in values:
        return (
            "{"
            + name
            + ("!" + conversion if conversion else "")
            + (":" + spec if spec else "")
            + "}"
        )
    value = values[name]
    try:
        if conversion == "r":
            value = repr(value)
        elif conversion in ("s", "a"):
            value = str(value) if conversion == "s" else ascii(value)
        text = format(value, spec) if spec and "{" not in spec and len(spec) < 20 else str(value)
    except (ValueError, TypeError, OverflowError, RecursionError):
        text = _plain(value)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "…"


def _plain(value) -> str:
    try:
        return str(value)
    except Exception:
        if isinstance(value, int):  # str() refuses an int past 4300 digits
            return f"(an integer of {value.bit_length()} bits)"
        return type(value).__name__


def t(key: str, lang: str, /, **params) -> str:
    """Render ``key`` in ``lang``; an unknown key renders as itself so it is visible, not fatal."""
    return _render(key, lang, params, 0)


def _render(key, lang: str, params, depth: int) -> str:
    key = key if isinstance(key, str) else _plain(key)
    template = catalog(lang).get(key)
    if template is None:
        template = catalog(DEFAULT_LANG).get(key)
    if template is None:
        return key  # not a template: a key from data is shown, never formatted
    if not isinstance(params, dict):
        params = {}
    values = {k: _localize(v, lang, depth + 1) for k, v in params.items() if isinstance(k, str)}
    parts = _fields(template)
    for _, name, _, _ in parts:
        if name and name.startswith(WORD_FIELD) and name not in values:  # the engine's word
            values[name] = _render("word." + name.removeprefix(WORD_FIELD), lang, {}, depth + 1)
    if lang == "zh":
        parts = _close_parts(parts, values)
    out = []
    for literal, name, spec, conversion in parts:
        out.append(literal)
        if name is not None:
            out.append(_field_text(name, spec or "", conversion, values))
    return "".join(out)


def _wide(char: str) -> bool:
    """Han characters and full-width punctuation (False for "")."""
    return (
        "\u3000" <= char <= "\u303f" or "\u3400" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef"
    )


def _close_parts(parts: list, values: dict) -> list:
    """Chinese text puts a space between Han and Latin ("forward(x) 与 PyTorch"), none between two
    Han characters. A template's space next to a parameter is written for a Latin value: it goes
    when the value (a nested message, say) meets the template's Han text there."""
    out = []
    previous = ""  # the value of the field before this literal
    for literal, name, spec, conversion in parts:
        value = _plain(values.get(name, "")) if name else ""
        if previous and literal[:1] == " " and _wide(previous[-1]) and _wide(literal[1:2]):
            literal = literal[1:]  # "……的输出 与" → "……的输出与"
        if value and literal[-1:] == " " and _wide(value[0]) and _wide(literal[-2:-1]):
            literal = literal[:-1]  # "与 再次……" → "与再次……"
        out.append((literal, name, spec, conversion))
        previous = value
    return out


def localize(value, lang: str):
    """Parameters may themselves be message references: {"key": ..., "params": {...}}."""
    return _localize(value, lang, 0)


def _localize(value, lang: str, depth: int):
    if depth > MAX_DEPTH:
        return "…"
    if isinstance(value, dict) and "key" in value:
        return _render(value["key"], lang, value.get("params", {}), depth)
    if isinstance(value, (list, tuple)):
        # Chinese lists take the enumeration comma: 「第 0、3 行」, not 「第 0, 3 行」.
        sep = "、" if lang == "zh" else ", "
        return sep.join(_plain(_localize(v, lang, depth + 1)) for v in value[:64])
    if isinstance(value, float):
        return f"{value:.4g}"
    return value


def normalize(lang: str | None) -> str | None:
    if not lang:
        return None
    lang = lang.strip().lower()
    if lang.startswith("zh"):
        return "zh"
    if lang.startswith("en"):
        return "en"
    return None


def from_environment(environ=os.environ) -> str | None:
    """LC_ALL, then LC_MESSAGES, then LANG, as POSIX orders them."""
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(var)
        if value:
            # The first variable that is set decides, even if it names neither language.
            return "zh" if value.lower().startswith("zh") else "en"
    return None


def choose(cli: str | None, remembered: str | None, environ=os.environ) -> str:
    return normalize(cli) or normalize(remembered) or from_environment(environ) or DEFAULT_LANG
