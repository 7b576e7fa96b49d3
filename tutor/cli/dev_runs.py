"""`dev check`'s runs through the real worker: the starter, the reference, every known mistake
(on every checked step) and warmup.py, and what each must come to."""

from __future__ import annotations

from tutor.cli.dev_experiments import experiment_lines, experiment_steps
from tutor.cli.dev_findings import Line, off_steps
from tutor.cli.dev_mistakes import build, catches, judge_mistake, unproven
from tutor.model.lesson import Lesson
from tutor.model.mistakes import Mistake


def run_checks(lesson: Lesson, mistakes: list[Mistake], timeout: float) -> list[Line]:
    from tutor.engine.client import WorkerGone, check_sources  # torch-free: it starts the worker

    order = [s.id for s in lesson.checked_steps]
    reference = lesson.reference_path.read_text(encoding="utf-8")
    runs: list[tuple[str, str, list[str] | None]] = [
        (str(lesson.starter_path), lesson.starter_path.read_text(encoding="utf-8"), order),
        (str(lesson.reference_path), reference, order),
    ]
    ready, unusable = build(lesson, reference, mistakes)  # the unusable said after the runs
    runs += [(str(lesson.reference_path), source, order) for _, source in ready]
    warmup = lesson.warmup_path.is_file()
    if warmup:
        runs.append((str(lesson.warmup_path), lesson.warmup_path.read_text("utf-8"), order))
    experiments = experiment_steps(lesson)
    if experiments:  # last, with its views: what the app draws is looked at
        runs.append((str(lesson.reference_path), reference, experiments))
    try:
        # No views but the experiments' (nobody looks at the others), so the judge waits for
        # the diagnosis from behaviour that a mistake may say it gets.
        got = check_sources(
            lesson.id,
            runs,
            timeout=timeout,
            lesson_dir=lesson.folder,
            views=False,
            viewed=frozenset({len(runs) - 1}) if experiments else frozenset(),
        )
    except WorkerGone as exc:
        return [Line(False, "dev.worker_failed", {"detail": exc})] + unusable
    starter, ref, *variants = got
    drawn = variants.pop() if experiments else []
    warm_results = variants.pop() if warmup else None
    not_todo = off_steps(starter, order, "todo")
    lines = [
        Line(
            not not_todo,
            "dev.starter_ok" if not not_todo else "dev.starter_bad",
            {"n": len(order), "steps": not_todo},
        )
    ]
    bad = off_steps(ref, order, "pass")
    lines.append(
        Line(
            not bad,
            "dev.reference_ok" if not bad else "dev.reference_bad",
            {"n": len(order), "steps": bad},
        )
    )
    # A pass that names what its probe read lets the app skip the step on a save that leaves
    # that code as it was (workspace/unchanged.py); one that read the whole namespace cannot.
    always = [r.id for r in ref if r.status == "pass" and r.reads is None]
    lines.append(
        Line(
            True,
            "dev.reruns_ok" if not always else "dev.reruns_always",
            {"n": len(order), "steps": always},
            warn=bool(always),
        )
    )
    if warm_results is not None:
        # Failed, not raised: a step that raises warms nothing, and one that passes is a
        # solution in every child's memory.
        off = off_steps(warm_results, order, "fail")
        lines.append(
            Line(
                not off,
                "dev.warmup_ok" if not off else "dev.warmup_bad",
                {"n": len(order), "steps": off},
            )
        )
    judged = [
        judge_mistake(m, results, order) for (m, _), results in zip(ready, variants, strict=True)
    ]
    caught = catches(ref, [m for m, _ in ready], unproven(lesson))
    return lines + judged + unusable + caught + experiment_lines(experiments, drawn)
