"""Probe + judge time per step, in-process, on each lesson's reference solution.

    python tests/benchmarks/probe_judge_time.py [--repeat 20] [--views]

No worker, no sandbox, no codec: the lesson's probe on the reference module, then its judge
on what came back, with the lesson's own inputs. Prints the minimum over --repeat runs per
step and per lesson (ms), so two versions of the kit can be compared back to back.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import time
import types

import torch

from tutor.kit import probe_tools as probe_kit
from tutor.kit.judge_tools import Stop, Verdict
from tutor.kit.spec import JudgeContext
from tutor.model.lesson import all_lessons


def _module(name: str, path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def step_time(checks, learner, source, step, inputs, views) -> tuple[float, str]:
    spec = checks.STEPS[step]
    start = time.perf_counter()
    ctx = probe_kit.ProbeContext(learner, "learner.py", source)
    ctx.params, ctx.views = {}, views
    outputs = spec.probe(ctx, inputs)
    v = Verdict(source)
    with contextlib.suppress(Stop):
        spec.judge(v, outputs, inputs, JudgeContext(source, sorted(ctx.kernels), views))
    status = "pass" if v.passed() and v.checks else "fail"
    return time.perf_counter() - start, status


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--views", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    probe_kit.install_traps()
    for lesson in all_lessons():
        checks = _module(f"checks_{lesson.id}", lesson.checks_path)
        source = lesson.reference_path.read_text(encoding="utf-8")
        learner = _module(f"learner_{lesson.id}", lesson.reference_path)
        inputs = checks.make_inputs()
        total = 0.0
        for step in (s.id for s in lesson.checked_steps):
            times, status = [], ""
            for _ in range(args.repeat):
                t, status = step_time(checks, learner, source, step, inputs, args.views)
                times.append(t)
            total += min(times)
            print(f"{lesson.id:10} {step:14} {min(times) * 1e3:8.1f} ms  {status}")
        print(f"{lesson.id:10} {'(all)':14} {total * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
