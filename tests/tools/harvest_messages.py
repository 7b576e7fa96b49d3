"""Record the failure messages that real wrong code gets: every lesson's wrong variants
(mistakes.toml), run through the worker, their failing checks' messages as the judge made
them (keys and parameters). tests/unit/test_every_message.py renders these in both languages.

    python tests/tools/harvest_messages.py > tests/unit/data/real_failures.json
"""

from __future__ import annotations

import json
import sys

from tutor.cli.dev_check import load_mistakes, mistake_source
from tutor.engine.client import check_sources
from tutor.model.lesson import all_lessons


def harvest() -> list[dict]:
    out: list[dict] = []
    for lesson in all_lessons():
        mistakes, _ = load_mistakes(lesson)
        reference = lesson.reference_path.read_text(encoding="utf-8")
        runs, names = [], []
        for m in mistakes:
            try:
                source = mistake_source(reference, m)
                compile(source, lesson.file_name, "exec")
            except (KeyError, SyntaxError):
                continue
            runs.append((str(lesson.reference_path), source, [m.step]))
            names.append(m.id)
        # The file that does not parse, and one that raises at the top level: file-loads' messages.
        runs.append((lesson.file_name, reference + "\ndef broken(:\n    pass\n", None))
        names.append("syntax-error")
        got = check_sources(lesson.id, runs, timeout=15, lesson_dir=lesson.folder, views=False)
        for name, results in zip(names, got, strict=True):
            for r in results:
                for c in r.checks:
                    if c.status != "pass" and c.message is not None:
                        d = r.to_dict()
                        entry = next(x for x in d["checks"] if x["id"] == c.id)
                        out.append(
                            {
                                "lesson": lesson.id,
                                "variant": name,
                                "step": r.id,
                                "check": c.id,
                                "message": entry["message"],
                                "record": entry.get("record"),
                                "failure": d["failure"],
                            }
                        )
                        if name == "syntax-error":
                            break
                if name == "syntax-error":
                    break
        print(f"{lesson.id}: {len(runs)} runs", file=sys.stderr)
    return out


if __name__ == "__main__":
    json.dump(harvest(), sys.stdout, ensure_ascii=False, indent=1, sort_keys=True)
    print()
