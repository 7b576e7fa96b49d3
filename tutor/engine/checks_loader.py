"""What the worker loads before its first run: each lesson's checks module, its inputs' seed,
and the runs a spare warms up on."""

from __future__ import annotations

import importlib.util


def warm_up_runs(lessons) -> list[tuple]:
    """What a spare warms up on (child._warm_up): each lesson's warmup.py (torch's operations
    on a solution's shapes, wrong on purpose: dev check proves it fails every checked step), or
    its starter; (lesson id, file name, source, step ids). Never the reference: what the
    warm-up ran stays in the child's heap, freed or not."""
    runs = []
    for lesson in lessons:
        try:
            source = lesson.warm_up_path.read_text(encoding="utf-8")
        except (OSError, ValueError):
            continue  # no warm-up for this lesson: its runs are only a little slower
        runs.append((lesson.id, lesson.file_name, source, [s.id for s in lesson.checked_steps]))
    return runs


def compiled_runs(runs: list[tuple]) -> list[tuple]:
    """warm_up_runs with each source compiled: (lesson id, file name, source, code, step ids)."""
    out = []
    for lesson_id, name, source, steps in runs:
        try:
            code = compile(source, name, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        out.append((lesson_id, name, source, code, steps))
    return out


def runs_for(runs: list[tuple], lesson: str | None) -> list[tuple]:
    """A spare's warm-up: the lesson of the last run (its learner rarely switches), or every
    lesson before the first run."""
    return [run for run in runs if run[0] == lesson] or runs


def load_checks(lessons) -> dict:
    modules = {}
    for lesson in lessons:
        spec = importlib.util.spec_from_file_location(
            f"attn_checks_{lesson.id.replace('-', '_')}", lesson.checks_path
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {lesson.checks_path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[lesson.id] = module
    return modules


def seed_inputs(modules: dict, seed: int) -> None:
    """Every make_inputs() of this worker (the children's and the judge's) draws from `seed`
    (`attn-tutor grade --seed`); 0 is the lessons' own inputs. A lesson whose make_inputs
    takes no seed keeps its own."""
    import functools
    import inspect

    if not seed:
        return
    for module in modules.values():
        if "seed" in inspect.signature(module.make_inputs).parameters:
            module.make_inputs = functools.partial(module.make_inputs, seed=seed)
