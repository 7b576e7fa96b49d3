"""`dev check`'s runs: the starter, the reference, each wrong variant of mistakes.toml and
warmup.py, through the real worker, and what each must come to."""

from __future__ import annotations

from tutor import toml
from tutor.cli.dev_findings import FORMAT_VERSION, Line, Mistake
from tutor.model.lesson import Lesson
from tutor.model.variants import apply_replacements, message_keys

MISTAKE_FIELDS = {
    "id": str,
    "step": str,
    "function": str,
    "code": str,
    "expect_check": str,
    "expect_keys": list,
}


def load_mistakes(lesson: Lesson) -> tuple[list[Mistake], list[Line]]:
    """lessons/<id>/mistakes.toml: [[mistakes]] tables (see MISTAKE_FIELDS); none is allowed, with a ✗."""
    path = lesson.folder / "mistakes.toml"
    if not path.is_file():
        return [], [Line(False, "dev.mistakes_none", {})]
    try:
        data = toml.loads(path.read_text(encoding="utf-8"))
    except toml.TOMLDecodeError as exc:
        return [], [Line(False, "dev.bad_toml", {"path": "mistakes.toml", "detail": exc})]
    found, bad = [], []
    if data.get("format_version") != FORMAT_VERSION:
        bad.append(
            Line(
                False,
                "dev.format_version",
                {"got": data.get("format_version"), "expected": FORMAT_VERSION},
            )
        )
    checked = {s.id for s in lesson.checked_steps}
    for i, raw in enumerate(data.get("mistakes", [])):
        where = f"mistakes[{i}]" if not isinstance(raw.get("id"), str) else raw["id"]
        wrong = [n for n, kind in MISTAKE_FIELDS.items() if not isinstance(raw.get(n), kind)]
        if wrong:
            bad += [Line(False, "dev.field_missing", {"field": n, "where": where}) for n in wrong]
            continue
        if raw["step"] not in checked:
            bad.append(Line(False, "dev.mistake_step", {"id": where, "step": raw["step"]}))
            continue
        found.append(
            Mistake(
                raw["id"],
                raw["step"],
                raw["function"],
                raw["code"],
                raw["expect_check"],
                tuple(raw["expect_keys"]),
                raw.get("header", ""),
            )
        )
    if not found and not bad:
        bad.append(Line(False, "dev.mistakes_none", {}))
    return found, bad


def mistake_source(reference: str, m: Mistake) -> str:
    return apply_replacements(reference, {m.function: m.code}, m.header)


def judge_mistake(m: Mistake, results) -> Line:
    """The step must not pass, its check expect_check must fail, naming every expect_keys."""
    by_id = {r.id: r for r in results}
    r = by_id.get(m.step)
    base = {"id": m.id, "step": m.step}
    if r is None:
        return Line(False, "dev.not_run", base)
    failing = {c.id: message_keys(c.message) for c in r.checks if c.status != "pass"}
    if r.status == "pass":
        return Line(False, "dev.mistake_passed", base)
    if m.expect_check not in failing:
        return Line(
            False,
            "dev.mistake_other_check",
            {**base, "check": m.expect_check, "failing": ", ".join(failing) or "-"},
        )
    missing = [k for k in m.expect_keys if k not in failing[m.expect_check]]
    if missing:
        return Line(
            False,
            "dev.mistake_keys",
            {
                **base,
                "check": m.expect_check,
                "missing": ", ".join(missing),
                "got": ", ".join(sorted(failing[m.expect_check])),
            },
        )
    return Line(
        True,
        "dev.mistake_ok",
        {**base, "check": m.expect_check, "keys": ", ".join(m.expect_keys) or "-"},
    )


def _off(results, order: list[str], wanted: str) -> list[dict]:
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


def run_checks(lesson: Lesson, mistakes: list[Mistake], timeout: float) -> list[Line]:
    from tutor.engine.client import WorkerGone, check_sources  # torch-free: it starts the worker

    order = [s.id for s in lesson.checked_steps]
    reference = lesson.reference_path.read_text(encoding="utf-8")
    runs: list[tuple[str, str, list[str] | None]] = [
        (str(lesson.starter_path), lesson.starter_path.read_text(encoding="utf-8"), order),
        (str(lesson.reference_path), reference, order),
    ]
    unusable: list[Line] = []  # variants that cannot be built: said after the runs
    ready = []
    for m in mistakes:
        try:
            source = mistake_source(reference, m)
            compile(
                source, lesson.file_name, "exec"
            )  # the variant's own typo is not the lesson's failure
        except KeyError:
            unusable.append(
                Line(False, "dev.mistake_function", {"id": m.id, "function": m.function})
            )
            continue
        except SyntaxError as exc:
            unusable.append(Line(False, "dev.mistake_syntax", {"id": m.id, "line": exc.lineno}))
            continue
        ready.append(m)
        runs.append((str(lesson.reference_path), source, [m.step]))
    warmup = lesson.warmup_path.is_file()
    if warmup:
        runs.append((str(lesson.warmup_path), lesson.warmup_path.read_text("utf-8"), order))
    try:
        got = check_sources(lesson.id, runs, timeout=timeout, lesson_dir=lesson.folder)
    except WorkerGone as exc:
        return [Line(False, "dev.worker_failed", {"detail": exc})] + unusable
    starter, ref, *variants = got
    warm_results = variants.pop() if warmup else None
    not_todo = _off(starter, order, "todo")
    lines = [
        Line(
            not not_todo,
            "dev.starter_ok" if not not_todo else "dev.starter_bad",
            {"n": len(order), "steps": not_todo},
        )
    ]
    bad = _off(ref, order, "pass")
    lines.append(
        Line(
            not bad,
            "dev.reference_ok" if not bad else "dev.reference_bad",
            {"n": len(order), "steps": bad},
        )
    )
    if warm_results is not None:
        # Failed, not raised: a step that raises warms nothing, and one that passes is a
        # solution in every child's memory.
        off = _off(warm_results, order, "fail")
        lines.append(
            Line(
                not off,
                "dev.warmup_ok" if not off else "dev.warmup_bad",
                {"n": len(order), "steps": off},
            )
        )
    return (
        lines
        + [judge_mistake(m, results) for m, results in zip(ready, variants, strict=False)]
        + unusable
    )
