"""Runaway memory fails its step with the memory message, within the step's time, and
torch still works under the limit for legitimate work.

The limit is RLIMIT_DATA over the child's baseline (ATTN_TUTOR_MEMORY_MB, default 2048),
which Python and torch turn into MemoryError; shared mappings escape it, so the worker
also watches each child's RSS and kills it past the limit. `memory_live` runs with a
512 MiB limit and a 10 s timeout so that bombs that touch their pages (this VM faults in
~0.6 GB/s) reach the limit long before the deadline.
"""

from __future__ import annotations

import pytest
from reliability_kit import MEMORY_TIMEOUT, STEP_TIMEOUT, first_message, summary, with_code

STEPS = ["single-head", "shapes"]  # a bomb in causal_attention, and a step it does not touch


def in_causal_attention(body: str) -> str:
    return with_code(
        "_original = causal_attention\ndef causal_attention(x, Wq, Wk, Wv):\n"
        + body
        + "\n    return _original(x, Wq, Wk, Wv)"
    )


# 200 MiB, every page touched, kept alive while the probe calls the learner's code (which uses it).
LEGIT_200MB = with_code("""
BIG = torch.ones(50 * 1024 * 1024)
_original = causal_attention
def causal_attention(x, Wq, Wk, Wv):
    assert float(BIG[::4096].sum()) == BIG[::4096].numel()
    return _original(x, Wq, Wk, Wv)
""")

BOMBS = {
    "torch-empty-1e11": "    torch.empty(10**11)",
    "torch-empty-4GB": "    torch.empty(10**9).fill_(1.0)",
    "list-1e10": "    [0] * 10**10",
    "list-growing-in-a-loop": "    a = []\n    while True:\n        a.append([0] * 10**6)",
    "bytearray-growth": "    b = bytearray()\n    while True:\n        b += b'x' * 10**7",
    "tensors-in-a-loop": "    a = []\n    while True:\n        a.append(torch.ones(10**7))",
    # Not counted by RLIMIT_DATA (a shared mapping): the worker's RSS watchdog stops it.
    "shared-mmap": "    import mmap\n    m = mmap.mmap(-1, 8 << 30)\n    for i in range(0, 8 << 30, 4096):\n        m[i] = 1",
    # Raising the limit back: refused (hard limit set; capabilities dropped when root).
    "raise-the-limit-then-bomb": (
        "    import resource\n    try:\n"
        "        resource.setrlimit(resource.RLIMIT_DATA, (-1, -1))\n"
        "    except (ValueError, OSError):\n        pass\n"
        "    torch.empty(10**9).fill_(1.0)"
    ),
}


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_memory_bomb_fails_with_the_memory_message(memory_live, bomb):
    run = memory_live.run("lm3-l3", in_causal_attention(BOMBS[bomb]), steps=STEPS)
    r = run.results["single-head"]
    assert r.status == "error" and first_message(r).key == "failure.memory", summary(run.results)
    assert run.arrived["single-head"] <= MEMORY_TIMEOUT, run.arrived
    assert run.results["shapes"].status == "pass", summary(run.results)


def test_reference_and_a_legit_200mb_tensor_pass_under_the_test_limit(memory_live):
    for source in (with_code(""), LEGIT_200MB):
        run = memory_live.run("lm3-l3", source)
        assert all(r.status == "pass" for r in run.results.values()), summary(run.results)


def test_default_limit_allows_200mb_and_stops_a_bomb_at_once(live):
    run = live.run("lm3-l3", LEGIT_200MB, steps=STEPS)
    assert all(r.status == "pass" for r in run.results.values()), summary(run.results)
    run = live.run(
        "lm3-l3", in_causal_attention("    torch.empty(10**10).fill_(1.0)  # 40 GB"), steps=STEPS
    )
    r = run.results["single-head"]
    assert r.status == "error" and first_message(r).key == "failure.memory", summary(run.results)
    assert run.arrived["single-head"] < STEP_TIMEOUT
