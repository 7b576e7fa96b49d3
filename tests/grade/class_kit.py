"""A class of lm3-l3 submissions on disk, for the grade tests and tests/benchmarks/bench_grade.py.

Correct files (the reference, and variants written differently: renamed variables, math.sqrt,
reshape for view), ordinary mistakes (lessons/lm3-l3/mistakes.toml, each with the likely id its
check names), the untouched starter, and hostile files (a hang, a memory bomb, a print flood,
sys.exit at import).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tutor.model.mistakes import mistake_source, read_mistakes
from tutor.model.variants import apply_replacements

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = (ROOT / "reference" / "lm3_l3.py").read_text(encoding="utf-8")
STARTER = (ROOT / "lessons" / "lm3-l3" / "starter.py").read_text(encoding="utf-8")
# Five of the lesson's known mistakes, one per step, make the class's wrong students.
CLASS_MISTAKES = (
    "mask_after_softmax",
    "scale_sqrt_8_is_d_in",
    "no_mask",
    "multi_no_out_proj",
    "shapes-forgot-per-head-transpose",
)
MISTAKES = [
    m
    for m in read_mistakes(ROOT / "lessons" / "lm3-l3" / "mistakes.toml")[0]
    if m.id in CLASS_MISTAKES
]
assert len(MISTAKES) == len(CLASS_MISTAKES)

RENAMED = {
    "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    queries, keys, values = x @ Wq, x @ Wk, x @ Wv
    att = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    n = x.shape[-2]
    blocked = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    probs = torch.softmax(att.masked_fill(blocked, float("-inf")), dim=-1)
    return probs @ values, probs
"""
}
SQRT = {
    "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    q = x @ Wq
    k = x @ Wk
    v = x @ Wv
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T), diagonal=1).bool()
    scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
"""
}
RESHAPE = {
    "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).reshape(B, T, H, hd).permute(0, 2, 1, 3)
    k = self.W_k(x).reshape(B, T, H, hd).permute(0, 2, 1, 3)
    v = self.W_v(x).reshape(B, T, H, hd).permute(0, 2, 1, 3)
    scores = q @ k.transpose(-2, -1) / hd**0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).permute(0, 2, 1, 3).reshape(B, T, self.d_out)
    return self.out_proj(context)
"""
}

CORRECT = {
    "reference": REFERENCE,
    "renamed": apply_replacements(REFERENCE, RENAMED),
    "sqrt": apply_replacements(REFERENCE, SQRT, "import math"),
    "reshape": apply_replacements(REFERENCE, RESHAPE),
}
WRONG = {m.id: mistake_source(m, REFERENCE) for m in MISTAKES}
# The likely id each wrong variant's first failing step names (mistakes.toml's expect keys).
LIKELY = {
    m.id: next(k for e in m.expect.values() for k in sorted(e.keys) if k.startswith("likely."))
    for m in MISTAKES
}

HOSTILE = {
    "hang": REFERENCE + "\nwhile True:\n    pass\n",
    "memory": REFERENCE + "\nhog = []\nwhile True:\n    hog.append(bytearray(50 << 20))\n",
    "flood": REFERENCE + "\nwhile True:\n    print('x' * 4096)\n",
    "exit": "import sys\nsys.exit(3)\n" + REFERENCE,
}


@dataclass(frozen=True)
class Student:
    id: str
    kind: str  # "correct" | "wrong" | "starter" | "hostile"
    variant: str


def plan(n: int, hostile: int = 0) -> list[Student]:
    """n students: `hostile` hostile files among them (spread out), the rest ordinary:
    about 6 in 10 correct, 3 in 10 wrong, 1 in 10 the starter."""
    hostile_names = list(HOSTILE)
    every = n // hostile if hostile else 0
    correct, wrong = list(CORRECT), list(WRONG)
    out = []
    for i in range(n):
        sid = f"s{i:03d}"
        if (
            hostile
            and i % every == every // 2
            and len([s for s in out if s.kind == "hostile"]) < hostile
        ):
            out.append(
                Student(
                    sid,
                    "hostile",
                    hostile_names[
                        len([s for s in out if s.kind == "hostile"]) % len(hostile_names)
                    ],
                )
            )
        elif i % 10 < 6:
            out.append(Student(sid, "correct", correct[i % len(correct)]))
        elif i % 10 < 9:
            out.append(
                Student(
                    sid, "wrong", wrong[len([s for s in out if s.kind == "wrong"]) % len(wrong)]
                )
            )
        else:
            out.append(Student(sid, "starter", "starter"))
    return out


def source_of(student: Student) -> str:
    table = {
        "correct": CORRECT,
        "wrong": WRONG,
        "hostile": HOSTILE,
        "starter": {"starter": STARTER},
    }[student.kind]
    return table[student.variant]


def write_class(folder: Path, students: list[Student], layout: str = "folders") -> Path:
    """layout "folders": folder/<id>/lm3_l3.py; "files": folder/<id>_lm3_l3.py."""
    folder.mkdir(parents=True, exist_ok=True)
    for s in students:
        path = folder / s.id / "lm3_l3.py" if layout == "folders" else folder / f"{s.id}_lm3_l3.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source_of(s), encoding="utf-8")
    return folder
