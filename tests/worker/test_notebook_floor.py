"""The notebooks' self-checks are the floor (issue #25): run as written on a learner's file,
they never fail where the tutor passes.

Each file is the reference with its result nudged just past what the notebook allows: outputs
scaled by a little more than rtol, shifted by a little more than atol, weights whose rows sum
just off 1. The notebooks' asserts run on the file itself, each cell's code as it stands in
/work/shared/seeds (lab-02's cells compute inline: their names are bound from the learner's
functions, the assert lines are the notebook's). Where a self-check fails, the tutor's step
for it must not pass. The test fails if the nudges all pass the notebook: they must be near
its bound to mean anything.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from worker_kit import learner_file

SEEDS = Path("/work/shared/seeds")
LM3_NB, LAB_NB = SEEDS / "000_cb42ea30ea1af979.txt", SEEDS / "003_1b51a5b4d7c1f269.txt"

pytestmark = pytest.mark.skipif(not LM3_NB.exists(), reason="the notebooks are not on this machine")


def cells(path: Path) -> list[str]:
    return [
        "".join(c["source"])
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "code"
    ]


def run_lm3(source: str) -> dict[str, bool]:
    """Self-checks 1-3 of LM3-L3 on the file: {tutor step: whether its self-check passed}."""
    code = cells(LM3_NB)
    setup = [c for c in code if c.startswith(("import torch", "B, T, d"))]
    checks = {c.split("self-check ")[1][0]: c for c in code if "self-check " in c and "passed" in c}
    ns: dict = {}
    for c in setup:
        exec(c.replace("import matplotlib.pyplot as plt", ""), ns)
    exec(compile(source, "learner.py", "exec"), ns)
    results = {}
    for number, step in (("1", "single-head"), ("2", "leakage"), ("3", "multi-head")):
        try:
            exec(checks[number].replace("print(", "(lambda *a, **k: None)("), ns)
            results[step] = True
        except AssertionError:
            results[step] = False
    return results


def run_lab(source: str) -> dict[str, bool]:
    """实验 02's asserts on the learner's attention(q, k, v): row sums and the future (its weights
    cell, for the weights step), the largest error (its comparison cell, for the output step)."""
    code = cells(LAB_NB)
    ns: dict = {}
    exec(code[0].replace("import matplotlib.pyplot as plt", ""), ns)
    exec(compile(source, "learner.py", "exec"), ns)
    ns["future"] = torch_triu(ns)
    ns["weights"] = ns["attention_weights"](ns["scaled_scores"](ns["q"], ns["k"]), ns["future"])
    ns["manual"] = ns["attention"](ns["q"], ns["k"], ns["v"])[0]
    asserts = {
        "weights": [ln for ln in code[1].splitlines() if ln.startswith("assert")],
        "output": [ln for ln in code[2].splitlines() if not ln.startswith("print")],
    }
    assert asserts["weights"] and any("assert" in ln for ln in asserts["output"])
    results = {}
    for step, lines in asserts.items():
        try:
            exec("\n".join(lines), ns)
            results[step] = True
        except AssertionError:
            results[step] = False
    return results


def torch_triu(ns):
    n = ns["seq_len"]
    return ns["torch"].triu(ns["torch"].ones(n, n, dtype=ns["torch"].bool), diagonal=1)


SCALES = (3e-5, 8e-5)
SHIFTS = (1.3e-5, 1.9e-5)


def lm3_files():
    for s in SCALES:
        yield (
            f"single out ×(1+{s:g})",
            {
                "causal_attention": f"""
def causal_attention(x, Wq, Wk, Wv):
    out, w = _causal(x, Wq, Wk, Wv)
    return out * (1 + {s!r}), w
"""
            },
        )
        yield (
            f"multi out ×(1+{s:g})",
            {"CausalMultiHeadAttention.forward": _forward(f"* (1 + {s!r})")},
        )
    for a in SHIFTS:
        yield f"multi out +{a:g}", {"CausalMultiHeadAttention.forward": _forward(f"+ {a!r}")}
        yield (
            f"single rows +{a:g}",
            {
                "causal_attention": f"""
def causal_attention(x, Wq, Wk, Wv):
    out, w = _causal(x, Wq, Wk, Wv)
    return out, w * (1 + {a!r})
"""
            },
        )


def _forward(change: str) -> str:
    return f"""
    def forward(self, x):
        return _forward(self, x) {change}
"""


LM3_HEADER = """
def _causal(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[-2]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights


def _forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q, k, v = (p(x).view(B, T, H, hd).transpose(1, 2) for p in (self.W_q, self.W_k, self.W_v))
    s = (q @ k.transpose(2, 3) / hd**0.5).masked_fill(self.mask[:T, :T], float("-inf"))
    w = self.dropout(torch.softmax(s, dim=-1))
    return self.out_proj((w @ v).transpose(1, 2).contiguous().view(B, T, self.d_out))
"""


def lab_files():
    for s in SCALES:
        yield (
            f"output ×(1+{s:g})",
            {
                "attention": f"""
def attention(q, k, v):
    w = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return (w @ v) * (1 + {s!r}), w
"""
            },
        )
    for a in (1.2e-5, 1.6e-5):
        yield (
            f"weights rows ×(1+{a:g})",
            {
                "attention_weights": f"""
def attention_weights(scores, mask):
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) * (1 + {a!r})
"""
            },
        )
        yield (
            f"output +{a:g}",
            {
                "attention": f"""
def attention(q, k, v):
    w = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return w @ v + {a!r}, w
"""
            },
        )


CASES = [("lm3-l3", n, r, LM3_HEADER, run_lm3) for n, r in lm3_files()] + [
    ("lab-02", n, r, "", run_lab) for n, r in lab_files()
]


@pytest.mark.parametrize(
    "lesson, replace, header, notebook",
    [pytest.param(c[0], c[2], c[3], c[4], id=f"{c[0]}: {c[1]}") for c in CASES],
)
def test_notebook_fails_so_does_the_tutor(run, lesson, replace, header, notebook):
    source = learner_file(lesson, replace, header)
    nb = notebook(source)
    assert not all(nb.values()), f"the nudge is inside the notebook's bounds: {nb}"
    results = run(lesson, source)
    for step, passed in nb.items():
        if not passed:
            assert results[step].status != "pass", (
                f"the notebook's self-check for {step} fails and the tutor passes it"
            )


def test_reference_passes_the_notebooks():
    """The harness itself: the reference passes every self-check it runs."""
    for lesson, notebook in (("lm3-l3", run_lm3), ("lab-02", run_lab)):
        assert all(notebook(learner_file(lesson, {}, "")).values()), lesson
    assert math.isfinite(SCALES[0])
