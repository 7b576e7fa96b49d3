"""A failing check's record, read off its message: plain data, no catalog, no torch.

The kit's messages already carry a record's parts under fixed parameter names (`expected`,
`got`, `where`, `line`, `code`, `likely`, `fix`, `kind` and `detail` of an exception) and
nest a failure found in a second run as `reason` inside the message that says where it was
found (other sizes, a second call, large scores). record_of turns that tree into a Record:
the innermost failure is what was found, the outer messages its context, and one diagnosis
is chosen among the likely mistakes of every level (see choose_diagnosis). A check written
before records existed, with a message of its own shape, still gets one: its message is the
finding and its `likely`, if any, the diagnosis.
"""

from __future__ import annotations

from typing import Any

from tutor.model.results import Check, JSONDict, Message, Record

# Likely mistakes that name no mistake: said only when nothing more specific was found.
GENERIC = frozenset({"likely.unknown", "likely.other_sizes", "likely.sizes_differ"})
WHERE = ("where", "row", "col", "t", "pos", "line", "code", "sizes", "index")


def local(key: str) -> str:
    """A key without a lesson's id in front (`lab-02.likely.x` -> `likely.x`)."""
    head, _, rest = key.partition(".")
    return rest if head not in ("likely", "fallback", "check", "failure", "value") and rest else key


def is_message(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("key"), str)
        and isinstance(value.get("params"), dict)
    )


def is_generic(likely: Any) -> bool:
    if not is_message(likely):
        return True
    key = local(likely["key"])
    return key in GENERIC or key.startswith("fallback.")


def found_in_source(likely: Any) -> bool:
    """A diagnosis that points at a line of the learner's file: a mistake seen, not guessed."""
    return is_message(likely) and "line" in likely["params"] and "code" in likely["params"]


def choose_diagnosis(levels: list[Any]) -> list[JSONDict]:
    """levels: the likely mistake of each level, innermost first ("" or None where none; a
    list of two where a check found two mistakes and says so).

    One diagnosis: a mistake seen in the file, the outermost such (a number of the lab's
    written in at line 12, found by the other-sizes check: the cause of what the failure shows
    there), else the innermost one that names a mistake (the failure's own, made where it was
    seen), else the first generic one."""
    for x in levels:
        if isinstance(x, list) and len(x) == 2 and all(is_message(y) for y in x):
            return list(x)
    said = [x for x in levels if is_message(x)]
    specific = [x for x in said if not is_generic(x)]
    seen = [x for x in specific if found_in_source(x)]
    return seen[-1:] or specific[:1] or said[:1]


def _plain(value: Any) -> bool:
    """A value a record's `where` holds: not a message, but a notebook's place is one."""
    return not is_message(value) or value["key"] == "notebook.line"


def _message(value: JSONDict) -> Message:
    return Message(value["key"], value["params"])


def record_of(check: Check) -> Record | None:
    """The record of a check that did not pass; None for a check without a message."""
    if check.message is None:
        return None
    context: list[Message] = []
    likelies: list[Any] = []
    node: JSONDict = {"key": check.message.key, "params": check.message.params}
    while is_message(node["params"].get("reason")):
        outer = {k: v for k, v in node["params"].items() if k not in ("reason", "likely")}
        context.append(Message(node["key"], outer))
        likelies.append(node["params"].get("likely"))
        node = node["params"]["reason"]
    params = node["params"]
    likelies.append(params.get("likely"))
    diagnosis = choose_diagnosis(list(reversed(likelies)))
    raw = None
    if isinstance(params.get("kind"), str) and "detail" in params:
        raw = {"kind": params["kind"], "detail": params["detail"]}
    where = {k: params[k] for k in WHERE if k in params and _plain(params[k])}
    for d in diagnosis:  # the line a diagnosis found in the file, when the failure has none
        for k in ("line", "code"):
            if k in d["params"] and _plain(d["params"][k]):
                where.setdefault(k, d["params"][k])
    for c in context:
        if "sizes" in c.params:
            where.setdefault("sizes", c.params["sizes"])
    return Record(
        check=check.id,
        what=Message(node["key"], {k: v for k, v in params.items() if k != "likely"}),
        diagnosis=[_message(d) for d in diagnosis],
        fix=_message(params["fix"]) if is_message(params.get("fix")) else None,
        context=context,
        expected=params.get("expected"),
        got=params.get("got"),
        where=where,
        raw_error=raw,
    )
