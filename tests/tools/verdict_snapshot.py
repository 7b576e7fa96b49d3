"""Write every verdict the lessons give, to compare a refactor's before and after.

    python tests/tools/verdict_snapshot.py > /tmp/before.jsonl   # on the old tree
    python tests/tools/verdict_snapshot.py > /tmp/after.jsonl    # on the new one
    diff /tmp/before.jsonl /tmp/after.jsonl                      # empty: nothing changed

One line per run: the reference on every step with its views, then each wrong variant
(mistakes.toml) on its own step, or on every step with --all-steps. Each line holds every
check's status and message (keys and parameters), the step's failure and its output; timings,
and the steps that measure time (experiments), are left out.

    --lesson ID   only this lesson (repeatable)
    --outcomes    only each step's and each check's status: the same before and after a change
                  that rewords or re-keys messages but must not move a verdict
"""

from __future__ import annotations

import argparse
import json
import sys

from tutor.engine.client import check_sources
from tutor.model.lesson import all_lessons
from tutor.model.mistakes import MistakeError, mistake_source, read_mistakes

TIMED = {"ms"}


def stripped(value):
    if isinstance(value, dict):
        return {k: stripped(v) for k, v in value.items() if k not in TIMED}
    if isinstance(value, list):
        return [stripped(v) for v in value]
    return value


def outcomes(step: dict) -> dict:
    """A step's verdict without its words: its status and each check's (id, status)."""
    checks = sorted((c["id"], c["status"]) for c in step.get("checks", []))
    return {"id": step["id"], "status": step["status"], "checks": checks}


def snapshot(lesson, all_steps: bool, only_outcomes: bool = False) -> list[dict]:
    mistakes, _ = read_mistakes(lesson.folder / "mistakes.toml")
    reference = lesson.reference_path.read_text(encoding="utf-8")
    judged = [s.id for s in lesson.steps if s.checked]
    runs, names = [(str(lesson.reference_path), reference, judged)], ["reference"]
    for m in mistakes:
        try:
            source = mistake_source(m, reference, lesson.folder)
        except MistakeError:
            continue
        runs.append((str(lesson.reference_path), source, judged if all_steps else m.steps))
        names.append(m.id)
    lines = []
    for views in (True, False):
        chosen = runs[:1] if views else runs[1:]
        got = check_sources(lesson.id, chosen, timeout=30, lesson_dir=lesson.folder, views=views)
        for name, results in zip(names[:1] if views else names[1:], got, strict=True):
            steps = sorted((stripped(r.to_dict()) for r in results), key=lambda s: s["id"])
            if only_outcomes:
                steps = [outcomes(s) for s in steps]
            lines.append({"lesson": lesson.id, "run": name, "steps": steps})
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", action="append", default=None)
    parser.add_argument("--all-steps", action="store_true")
    parser.add_argument("--outcomes", action="store_true")
    args = parser.parse_args(argv)
    for lesson in all_lessons():
        if args.lesson and lesson.id not in args.lesson:
            continue
        for line in snapshot(lesson, args.all_steps, args.outcomes):
            print(json.dumps(line, ensure_ascii=False, sort_keys=True))
        print(f"{lesson.id}: done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
