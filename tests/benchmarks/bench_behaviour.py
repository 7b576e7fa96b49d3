"""CPU cost of the diagnosis from behaviour in the judge (issue 26), in process: Judge.verdict
on a correct file, then a failing one (first save: the mutants run; then cached). The
learner's frames are made by the same probe runner the mutants use, outside the timing.
CPU = this process's plus its reaped children's (the forked mutant runner)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "worker"))
import torch  # noqa: E402
from worker_kit import REFERENCE  # noqa: E402

from tutor.engine import codec, protocol  # noqa: E402
from tutor.engine.behaviour import _probe  # noqa: E402
from tutor.engine.checks_loader import load_checks  # noqa: E402
from tutor.engine.judge import Judge  # noqa: E402
from tutor.model.lesson import all_lessons  # noqa: E402
from tutor.model.mistakes import Patch, apply_patches  # noqa: E402


def cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def payload(checks, step, source, inputs) -> bytes:
    tree, blob = codec.encode(_probe(checks, step, "learner.py", source, inputs))
    return codec.pack_payload(protocol.Outputs(tree, []).to_json(), blob)


def main() -> None:
    torch.set_num_threads(1)
    lesson, step = "lm3-l3", "multi-head"
    modules = load_checks([x for x in all_lessons() if x.id == lesson])
    judge = Judge(modules)
    inputs = judge.inputs(lesson)
    ref = REFERENCE[lesson]
    bad = apply_patches(
        ref, [Patch(old="torch.softmax(scores, dim=-1)", new="torch.softmax(scores, dim=0)")]
    )
    good_p, bad_p = (payload(modules[lesson], step, s, inputs) for s in (ref, bad))
    print("load", Path("/proc/loadavg").read_text().strip())
    runs = [("correct", good_p), ("failing, first", bad_p), ("failing, cached", bad_p)]
    for label, p in runs + [("correct, again", good_p)]:
        c, w = cpu(), time.monotonic()
        r = judge.verdict(lesson, step, p, bad if p is bad_p else ref, views=False)
        print(
            f"{label:16} {r.status:5} cpu {1e3 * (cpu() - c):8.1f} ms  wall {1e3 * (time.monotonic() - w):8.1f} ms"
        )
    judge.behaviour.explain = lambda *a, **k: None  # the same save without the hook
    c = cpu()
    judge.verdict(lesson, step, bad_p, bad, views=False)
    print(f"{'failing, no hook':16}       cpu {1e3 * (cpu() - c):8.1f} ms")
    app_mode(modules, lesson, step, bad, bad_p)
    print("load", Path("/proc/loadavg").read_text().strip())


def app_mode(modules, lesson, step, bad, bad_p) -> None:
    """The app's verdicts (wait=False): judged at once, the mutants run in the background."""
    judge = Judge(modules)
    judge.inputs(lesson)
    w = time.monotonic()
    r = judge.verdict(lesson, step, bad_p, bad, views=False, wait=False)
    print(
        f"{'app, first':16} {r.status:5} wall {1e3 * (time.monotonic() - w):8.1f} ms (not waited for)"
    )
    c = cpu()
    while judge.behaviour._running or judge.behaviour._queued:
        time.sleep(0.01)
        judge.behaviour.collect()
    print(
        f"{'app, background':16}       wall {1e3 * (time.monotonic() - w):8.1f} ms until done, cpu {1e3 * (cpu() - c):8.1f} ms"
    )
    w = time.monotonic()
    r = judge.verdict(lesson, step, bad_p, bad, views=False, wait=False)
    said = next(c for c in r.checks if c.status != "pass").message.params.get("likely", {})
    print(
        f"{'app, next save':16} {r.status:5} wall {1e3 * (time.monotonic() - w):8.1f} ms  {said.get('key')}"
    )


if __name__ == "__main__":
    main()
