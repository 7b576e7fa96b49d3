"""Record the failure messages that real wrong code gets: every lesson's wrong variants
(mistakes.toml), run through the worker, their failing checks' messages as the judge made
them (keys and parameters). tests/unit/test_every_message.py renders these in both languages.

    ATTN_TUTOR_HARVEST=/tmp/h.jsonl python -m pytest -n 2 tests/worker  # worker_kit records
    python tests/tools/harvest_messages.py /tmp/h.jsonl > tests/unit/data/real_failures.json

One message is kept per shape (its check and the catalog keys in it, nested ones included).
"""

from __future__ import annotations

import json
import sys

from tutor.engine.client import check_sources
from tutor.model.lesson import all_lessons
from tutor.model.mistakes import MistakeError, mistake_source, read_mistakes


def harvest() -> list[dict]:
    out: list[dict] = []
    for lesson in all_lessons():
        mistakes, _ = read_mistakes(lesson.folder / "mistakes.toml")
        reference = lesson.reference_path.read_text(encoding="utf-8")
        runs, names = [], []
        for m in mistakes:
            try:
                source = mistake_source(m, reference, lesson.folder)
                compile(source, lesson.file_name, "exec")
            except (MistakeError, SyntaxError):
                continue
            runs.append((str(lesson.reference_path), source, m.steps))
            names.append(m.id)
        # The file that does not parse, and one that raises at the top level: file-loads' messages.
        runs.append((lesson.file_name, reference + "\ndef broken(:\n    pass\n", None))
        names.append("syntax-error")
        got = check_sources(lesson.id, runs, timeout=15, lesson_dir=lesson.folder, views=False)
        for name, results in zip(names, got, strict=True):
            for r in results:
                for c in r.checks:
                    if c.status != "pass" and c.message is not None:
                        entry = next(x for x in r.to_dict()["checks"] if x["id"] == c.id)
                        out.append({"lesson": lesson.id, "step": r.id, "check": c.id, **entry})
                        if name == "syntax-error":
                            break
                if name == "syntax-error":
                    break
        print(f"{lesson.id}: {len(runs)} runs", file=sys.stderr)
    return out


def shape(entry: dict) -> str:
    def keys(value):
        if isinstance(value, dict):
            if "key" in value and "params" in value:
                return [value["key"], keys(value["params"])]
            return {k: keys(v) for k, v in sorted(value.items()) if keys(v)}
        return None

    return json.dumps([entry["lesson"], entry["check"], keys(entry["message"])])


def distinct(entries: list[dict]) -> list[dict]:
    seen: dict[str, dict] = {}
    for e in entries:
        e = {k: e[k] for k in ("lesson", "step", "check", "message")}
        seen.setdefault(shape(e), e)
    return sorted(seen.values(), key=lambda e: (e["lesson"], e["step"], shape(e)))


if __name__ == "__main__":
    entries = harvest()
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as lines:
            entries += [json.loads(line) for line in lines if line.strip()]
    json.dump(distinct(entries), sys.stdout, ensure_ascii=False, indent=1, sort_keys=True)
    print()
