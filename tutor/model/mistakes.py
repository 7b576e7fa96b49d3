"""A lesson's known mistakes (lessons/<id>/mistakes.toml): each a mutation of the reference
solution and what every checked step must then say. Pure: `attn-tutor dev check` (in the UI's
process) and the test suite read them alike, so a course's lesson gets the same proof as ours.

A mistake is written one of three ways, the first that says it:
- `[[mistakes.patch]]` tables: `replace` = text of the reference, `by` = what stands there
  instead; or `after` = a line's text, `insert` = lines put after it (`before` for lines put
  in front). Each anchor must occur exactly once in the reference.
- `[mistakes.replace]`: a top-level name (or `Class.method`) = its whole new code.
- `file` = a learner file of its own, relative to the lesson's folder.
`header` (lines put first) goes with any of them; `diagnosis`, a catalog key, names the
mistake when the judge finds a learner's outputs equal to this mutant's (engine/behaviour.py). `[mistakes.expect]` maps a step to
`{status, check, keys, kind, absent}`: the step's status, the check that must not pass, catalog
keys its message must name (the diagnosis), the failure's kind, keys it must not name. Every
checked step it does not list must pass, every check of it.

Format 1 (one step: `step`, `function`, `code`, `expect_check`, `expect_keys`) is still read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tutor import toml
from tutor.model.results import StepResult
from tutor.model.variants import apply_replacements, message_keys

FORMAT_VERSION = 2
STATUSES = ("pass", "fail", "error", "timeout", "todo")


@dataclass(frozen=True)
class Expect:
    """What one step must give (see the module's docstring)."""

    status: str = "pass"
    check: str | None = None
    keys: frozenset[str] = frozenset()
    kind: str | None = None
    absent: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Patch:
    """One edit of the reference: `old` replaced by `new`, or `new` put after/before `anchor`."""

    old: str = ""
    new: str = ""
    anchor: str = ""
    where: str = "replace"  # "replace" | "after" | "before"


@dataclass(frozen=True)
class Mistake:
    id: str
    expect: Mapping[str, Expect]
    patches: tuple[Patch, ...] = ()
    replace: Mapping[str, str] = field(default_factory=dict)
    file: str = ""
    header: str = ""
    diagnosis: str = ""  # a catalog key naming the mistake, said when behaviour finds it

    @property
    def steps(self) -> list[str]:
        """The steps this mistake must not pass."""
        return [s for s, e in self.expect.items() if e.status != "pass"]


class MistakeError(ValueError):
    """A mistake that cannot be built: an anchor that is missing or not unique, a name the
    reference does not define, a file that is not there."""


def _once(text: str, anchor: str, mistake: str) -> int:
    at = text.find(anchor)
    if not anchor or at < 0:
        raise MistakeError(f"{mistake}: the reference has no {anchor[:60]!r}")
    if text.find(anchor, at + 1) >= 0:
        raise MistakeError(f"{mistake}: {anchor[:60]!r} occurs more than once in the reference")
    return at


def apply_patches(reference: str, patches: Iterable[Patch], mistake: str = "?") -> str:
    text = reference
    for p in patches:
        if p.where == "replace":
            at = _once(text, p.old, mistake)
            text = text[:at] + p.new + text[at + len(p.old) :]
            continue
        at = _once(text, p.anchor, mistake)
        if p.where == "before":
            start = text.rfind("\n", 0, at) + 1
            text = text[:start] + p.new + text[start:]
        else:
            end = text.find("\n", at + len(p.anchor))
            end = len(text) if end < 0 else end + 1
            text = text[:end] + p.new + text[end:]
    return text


def mistake_source(m: Mistake, reference: str, folder: Path | None = None) -> str:
    """The learner file this mistake is. MistakeError if it cannot be built."""
    if m.file:
        if folder is None or not (folder / m.file).is_file():
            raise MistakeError(f"{m.id}: no file {m.file}")
        source = (folder / m.file).read_text(encoding="utf-8")
        return (m.header.strip("\n") + "\n" + source) if m.header else source
    if m.patches:
        source = apply_patches(reference, m.patches, m.id)
        return (m.header.strip("\n") + "\n" + source) if m.header else source
    try:
        return apply_replacements(reference, dict(m.replace), m.header)
    except KeyError as exc:
        raise MistakeError(f"{m.id}: the reference defines no {exc.args[0]}") from None


# ------------------------------------------------------------------ reading mistakes.toml


def _expect(raw: object, where: str) -> Expect:
    if not isinstance(raw, dict):
        raise MistakeError(f"{where}: expected a table")
    status = raw.get("status", "fail")
    if status not in STATUSES:
        raise MistakeError(f"{where}: status {status!r} is not one of {', '.join(STATUSES)}")
    check, kind = raw.get("check"), raw.get("kind")
    keys, absent = raw.get("keys", []), raw.get("absent", [])
    if not (check is None or isinstance(check, str)) or not (kind is None or isinstance(kind, str)):
        raise MistakeError(f"{where}: check and kind are strings")
    if not all(isinstance(k, str) for k in [*keys, *absent]):
        raise MistakeError(f"{where}: keys and absent are lists of catalog keys")
    return Expect(status, check, frozenset(keys), kind, frozenset(absent))


def _patch(raw: object, where: str) -> Patch:
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise MistakeError(f"{where}: a patch is a table of strings")
    if set(raw) == {"replace", "by"}:
        return Patch(old=raw["replace"], new=raw["by"])
    for where_to in ("after", "before"):
        if set(raw) == {where_to, "insert"}:
            return Patch(new=raw["insert"], anchor=raw[where_to], where=where_to)
    raise MistakeError(f"{where}: a patch has replace and by, or after (or before) and insert")


def parse_mistake(raw: object, index: int, version: int) -> Mistake:
    where = f"mistakes[{index}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        raise MistakeError(f"{where}: every mistake has an id")
    where = raw["id"]
    header = raw.get("header", "")
    if version == 1:
        fields = ("step", "function", "code", "expect_check")
        if not all(isinstance(raw.get(f), str) for f in fields) or not isinstance(
            raw.get("expect_keys"), list
        ):
            raise MistakeError(f"{where}: format 1 needs {', '.join(fields)} and expect_keys")
        expect = {raw["step"]: Expect("fail", raw["expect_check"], frozenset(raw["expect_keys"]))}
        return Mistake(where, expect, replace={raw["function"]: raw["code"]}, header=header)
    expect_raw = raw.get("expect")
    if not isinstance(expect_raw, dict) or not expect_raw:
        raise MistakeError(f"{where}: [mistakes.expect] names at least one step")
    expect = {step: _expect(e, f"{where}.expect.{step}") for step, e in expect_raw.items()}
    patches = tuple(_patch(p, f"{where}.patch") for p in raw.get("patch", []))
    replace = raw.get("replace", {})
    file = raw.get("file", "")
    if sum(map(bool, (patches, replace, file))) != 1:
        raise MistakeError(f"{where}: give exactly one of patch, replace or file")
    if not isinstance(replace, dict) or not all(isinstance(v, str) for v in replace.values()):
        raise MistakeError(f"{where}: replace maps names to code")
    diagnosis = raw.get("diagnosis", "")
    if not isinstance(diagnosis, str):
        raise MistakeError(f"{where}: diagnosis is a catalog key")
    return Mistake(where, expect, patches, replace, file, header, diagnosis)


def read_mistakes(path: Path) -> tuple[list[Mistake], list[str]]:
    """The mistakes of a mistakes.toml, and a problem per table that could not be read (a
    TOMLDecodeError propagates)."""
    data = toml.loads(path.read_text(encoding="utf-8"))
    version = data.get("format_version")
    if version not in (1, FORMAT_VERSION):
        return [], [f"format_version {version!r}: this tutor reads 1 and {FORMAT_VERSION}"]
    found, problems = [], []
    for i, raw in enumerate(data.get("mistakes", [])):
        try:
            found.append(parse_mistake(raw, i, version))
        except MistakeError as exc:
            problems.append(str(exc))
    return found, problems


# ------------------------------------------------------------------ judging a run


def failing(result: StepResult) -> dict[str, set[str]]:
    """{check id: catalog keys of its message} for every check that did not pass."""
    return {c.id: message_keys(c.message) for c in result.checks if c.status != "pass"}


def unmet(
    results: Mapping[str, StepResult], steps: Iterable[str], expect: Mapping[str, Expect]
) -> list[str]:
    """How a run differs from what a mistake says, one line each; [] when it is as said.
    Every step in `steps` not in `expect` must pass, every check of it."""
    steps = list(steps)
    problems = [f"{s}: not a checked step" for s in expect if s not in steps]
    for step in steps:
        e = expect.get(step, Expect())
        r = results.get(step)
        if r is None:
            problems.append(f"{step}: not run")
            continue
        if r.status != e.status:
            problems.append(f"{step}: expected {e.status}, got {r.status}")
            continue
        fails = failing(r)
        if e.status == "pass":
            if fails or not r.checks:
                problems.append(f"{step}: passed with failing checks {sorted(fails)}")
            continue
        if e.check is not None and e.check not in fails:
            problems.append(f"{step}: expected {e.check} to fail; failing: {sorted(fails)}")
            continue
        keys = fails[e.check] if e.check is not None else set().union(*fails.values())
        if e.keys - keys:
            problems.append(f"{step}: lacks {sorted(e.keys - keys)}; has {sorted(keys)}")
        if e.absent & keys:
            problems.append(f"{step}: names {sorted(e.absent & keys)}, which it must not")
        if e.kind is not None and (r.failure is None or r.failure.kind != e.kind):
            problems.append(f"{step}: failure {r.failure and r.failure.kind}, not {e.kind}")
    return problems
