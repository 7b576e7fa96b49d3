"""Issue #25: what a step runs must be the learner's own code. A file that takes the checks'
own reference (or the reference's step function) from a caller's frame passes steps it never
computed; a kernel traced with torch.jit.trace and kept in a dict hid from the kernel check.
Each file here passed its step before.
"""

from __future__ import annotations

import pytest
from worker_kit import Exp, learner_file, verify

LM3, LAB, KV = "lm3-l3", "lab-02", "kv-cache"

# Walks up the callers' frames to the first that can see `name`, and calls it.
FROM_FRAMES = """
import sys


def _borrowed(name):
    f = sys._getframe(1)
    while f is not None:
        found = f.f_globals.get(name) or f.f_locals.get(name)
        if callable(found):
            return found
        f = f.f_back
    raise NotImplementedError(name)
"""
FROM_STACK = FROM_FRAMES.replace(
    """    f = sys._getframe(1)
    while f is not None:
        found = f.f_globals.get(name) or f.f_locals.get(name)
        if callable(found):
            return found
        f = f.f_back
""",
    """    import inspect

    for info in inspect.stack():
        found = info.frame.f_globals.get(name)
        if callable(found):
            return found
""",
)

CA_FROM_FRAMES = {
    "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    out, weights = _borrowed("reference_single")(x, Wq, Wk, Wv)
    return out.clone(), weights.clone()
"""
}
# The same, run in a thread of the learner's own.
CA_IN_A_THREAD = {
    "causal_attention": """
import threading


def causal_attention(x, Wq, Wk, Wv):
    box, ref = {}, _borrowed("reference_single")
    worker = threading.Thread(target=lambda: box.update(r=ref(x, Wq, Wk, Wv)))
    worker.start()
    worker.join()
    out, weights = box["r"]
    return out.clone(), weights.clone()
"""
}
LAB_FROM_FRAMES = {
    "attention": """
def attention(q, k, v):
    out = _borrowed("_output_once")(q, k, v)
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return out.clone(), weights
"""
}
KV_FROM_FRAMES = {
    "CausalMultiHeadAttention.forward_cached": """
    def forward_cached(self, x, cache=None):
        return _borrowed("reference_step")(self)(x, cache)
"""
}
# The library's kernel, by a name no source check reads, traced at import (before any call is
# watched) and kept in a dict, where the kernel check's walk through names never looked: its
# calls run inside TorchScript, below Python.
TRACED = """
import torch
import torch.nn.functional as F

_NAME = "scaled_dot_" + "product_attention"
_KERNELS = {
    "sdpa": torch.jit.trace(
        lambda a, b, c: getattr(F, _NAME)(a, b, c, is_causal=True),
        tuple(torch.randn(1, 2, 6, 8) for _ in range(3)),
    )
}


def _kernel(q, k, v):
    return _KERNELS["sdpa"](q, k, v)
"""
LAB_TRACED = {
    "attention": """
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return _kernel(q, k, v), weights
"""
}

FOREIGN = Exp("fail", "own-formula", {"check.kernel"})
KERNEL = Exp("fail", "own-formula", {"check.kernel"})


@pytest.mark.parametrize(
    "lesson, replace, header, expect",
    [
        pytest.param(
            LM3,
            CA_FROM_FRAMES,
            FROM_FRAMES,
            {"single-head": FOREIGN, "leakage": FOREIGN},
            id="lm3: frames",
        ),
        pytest.param(
            LM3,
            CA_FROM_FRAMES,
            FROM_STACK,
            {"single-head": FOREIGN, "leakage": FOREIGN},
            id="lm3: inspect.stack",
        ),
        pytest.param(
            LM3,
            CA_IN_A_THREAD,
            FROM_FRAMES,
            {"single-head": FOREIGN, "leakage": FOREIGN},
            id="lm3: frames, in a thread",
        ),
        pytest.param(LAB, LAB_FROM_FRAMES, FROM_FRAMES, {"output": FOREIGN}, id="lab-02: frames"),
        pytest.param(
            KV,
            KV_FROM_FRAMES,
            FROM_FRAMES,
            {"cached-attention": FOREIGN, "generate": FOREIGN, "cache-discipline": FOREIGN},
            id="kv-cache: frames",
        ),
        pytest.param(
            LAB, LAB_TRACED, TRACED, {"output": KERNEL}, id="lab-02: a traced kernel in a dict"
        ),
    ],
)
def test_code_that_is_not_the_learners_fails(run, lesson, replace, header, expect):
    verify(run(lesson, learner_file(lesson, replace, header)), lesson, expect)
