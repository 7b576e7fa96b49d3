"""What ctx.call's copy of a softmax for the views costs a learner's call: a function running two
softmaxes of (1, 12, 1024, 1024) under ProbeContext.call with views on, three calls; the time
per call and the peak RSS over the start. Run each tree in its own process:

    PYTHONPATH=TREE python tests/benchmarks/bench_view_softmax.py
"""

from __future__ import annotations

import resource
import time
import types

import torch

from tutor.kit.probe_tools import ProbeContext


def two_softmaxes(s):
    return torch.softmax(s, -1) + torch.softmax(2 * s, -1)


def main() -> None:
    ctx = ProbeContext(types.ModuleType("learner"), "learner.py", "", None)
    ctx.views = True
    x = torch.randn(1, 12, 1024, 1024)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    for _ in range(3):
        call = ctx.call(two_softmaxes, x)
    per_call = (time.perf_counter() - start) / 3
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kept = call.get("softmax") is not None
    print(
        f"per call {per_call * 1000:.0f} ms, peak RSS +{(peak - base) / 1024:.0f} MB, kept {kept}"
    )


if __name__ == "__main__":
    main()
