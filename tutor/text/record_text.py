"""A failure's record as text, in the order a learner acts on it: the diagnosis (its fix in
it), then what was found and where, the raw error last, said in the reader's language first.

Each output (the app's panel, `check`, `check --json`, grade's files) takes these parts and
lays them out its own way; none builds a message by joining strings of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tutor.model.records import record_of
from tutor.model.results import Check, JSONDict, Message, Record
from tutor.text.i18n import catalog, localize, t
from tutor.text.raw_errors import explain
from tutor.text.safe_text import visible, visible_params


@dataclass
class RecordText:
    diagnosis: str  # "" when the finding is all there is to say
    finding: str  # what was found, in its context: one or two sentences
    code: str = ""  # the learner's line the diagnosis or the error points at
    raw: list[str] = field(default_factory=list)  # the error as Python gave it, explained first

    def lines(self) -> list[str]:
        return [x for x in (self.diagnosis, self.finding, self.code, *self.raw) if x]

    def text(self) -> str:
        return " ".join(self.lines())


def label(lang: str) -> str:
    return t("record.likely_label", lang)


def without_label(text: str, lang: str) -> str:
    """A likely mistake without its "Likely mistake:" in front, for a table already headed so."""
    mark = label(lang)
    if text.startswith(mark):
        text = text[len(mark) :].lstrip()
        if lang == "en" and text[:1].islower():
            text = text[0].upper() + text[1:]
    return text


def _render(message: Message, lang: str, cli: bool, **blank: str) -> str:
    key = message.key
    if cli and f"{key}_cli" in catalog(lang):
        key = f"{key}_cli"
    params = {**visible_params(message.params), **blank}
    # An empty part ({likely} with nothing to say) leaves no double or trailing space behind.
    return re.sub(r" {2,}", " ", t(key, lang, **params)).strip()


def _context(message: Message, lang: str) -> str:
    """Where a nested failure was found, as a sentence of its own ("At T = 9 …")."""
    head, dot, rest = message.key.rpartition("check.")
    twin = f"{head}context.{rest}" if dot else ""
    if twin and twin in catalog(lang):
        return t(twin, lang, **visible_params(message.params))
    # A nesting message without a context twin: its own text up to where the failure went.
    text = t(message.key, lang, **visible_params(message.params), reason="", likely="")
    return text.strip().rstrip(":：").strip() + ("。" if lang == "zh" else ".")


def _diagnosis(record: Record, lang: str) -> str:
    said = [t(d.key, lang, **visible_params(d.params)) for d in record.diagnosis]
    if record.fix is not None:
        said.append(t(record.fix.key, lang, **visible_params(record.fix.params)))
    if len(record.diagnosis) == 2:
        first, second = (without_label(x, lang) for x in said[:2])
        return t("record.two_mistakes", lang, first=first, second=second)
    return " ".join(said)


def record_text(record: Record, lang: str, cli: bool = False) -> RecordText:
    template = catalog(lang).get(record.what.key, "")
    raw_moved = record.raw_error is not None and "{detail}" not in template
    blank = {"likely": ""}
    finding = _render(record.what, lang, cli, **blank)
    contexts = [_context(c, lang) for c in record.context]
    joined = ("" if lang == "zh" else " ").join([*contexts, finding])
    raw: list[str] = []
    if raw_moved and record.raw_error is not None:
        kind = visible(str(record.raw_error["kind"]))
        detail = visible(str(record.raw_error["detail"]))
        said = explain(kind, detail, lang)
        if said:
            raw.append(said)
        raw.append(t("record.raw_error", lang, kind=kind, detail=detail))
    code = ""
    if isinstance(record.where.get("code"), str) and record.where["code"].strip():
        line = record.where.get("line", "?")
        code = t("record.code_line", lang, line=line, code=visible(record.where["code"].strip()))
    return RecordText(_diagnosis(record, lang), joined, code, raw)


def check_record_text(check: Check, lang: str, cli: bool = False) -> RecordText:
    """A failing check's parts; a passing one's name as its finding."""
    record = record_of(check)
    if record is None:
        return RecordText("", t(f"checkname.{check.id}", lang))
    return record_text(record, lang, cli)


def cell_split(where: JSONDict) -> JSONDict:
    """A notebook's place ("line 3 of cell 7") as two fields for the machine outputs."""
    line = where.get("line")
    if isinstance(line, dict) and line.get("key") == "notebook.line":
        params = line.get("params") or {}
        return {**where, "cell": params.get("cell"), "line": params.get("line")}
    return where


def record_json(check: Check, lang: str) -> JSONDict:
    """The record's fields for `check --json` and grade's files: values rendered in lang."""
    record = record_of(check)
    if record is None:
        return {}
    parts = record_text(record, lang, cli=True)

    def shown(value: object) -> str | None:
        return None if value is None else visible(str(localize(value, lang)))

    return {
        "expected": shown(record.expected),
        "got": shown(record.got),
        "where": {k: visible(str(localize(v, lang))) for k, v in cell_split(record.where).items()},
        "diagnosis": parts.diagnosis or None,
        "fix": None if record.fix is None else shown(vars(record.fix)),
        "raw_error": None
        if record.raw_error is None
        else {k: visible(str(v)) for k, v in record.raw_error.items()},
    }
