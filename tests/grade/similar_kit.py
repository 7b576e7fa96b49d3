"""Correct lm3-l3 solutions written independently, in varied styles, and near-copies of some of
them, for tests/grade/test_similar.py.

An independent solution draws each function on its own: one of the correct styles kept in
tests/worker/test_correct_styles.py (read from that file, not imported), or one put together
line by line here from genuinely different ways of writing each line (projections, scale,
mask, fill, softmax, split and merge of heads), with its own names, comments and spacing.
A near-copy takes another student's file and renames its variables, reorders its functions,
changes its comments and spacing, and sometimes rewrites one line.
"""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STARTER = (ROOT / "lessons" / "lm3-l3" / "starter.py").read_text(encoding="utf-8")
REFERENCE = (ROOT / "reference" / "lm3_l3.py").read_text(encoding="utf-8")


def _styles(name: str) -> list[str]:
    """A dict of code strings from test_correct_styles.py, read with ast (no import)."""
    tree = ast.parse((ROOT / "tests" / "worker" / "test_correct_styles.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == name:
            return [v.strip("\n") for v in ast.literal_eval(node.value).values()]
    raise KeyError(name)


def _reference(name: str) -> str:
    tree = ast.parse(REFERENCE)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            lines = REFERENCE.splitlines()[node.lineno - 1 : node.end_lineno]
            indent = len(lines[0]) - len(lines[0].lstrip())
            return "\n".join(line[indent:] for line in lines)
    raise KeyError(name)


CAUSAL = _styles("LM3_CAUSAL") + [_reference("causal_attention")]
FORWARD = _styles("LM3_FORWARD") + [_reference("forward")]
SHAPES = _styles("LM3_SHAPES") + [_reference("expected_shapes")]

POOL = 0.1  # a function taken whole from test_correct_styles.py: about 20 files in 200 each
WORDS = {
    "scores": ["scores", "att", "logits", "s", "sim", "energy", "raw"],
    "weights": ["weights", "probs", "attn", "w", "alpha", "p", "a"],
    "mask": ["mask", "future", "causal", "hidden", "upper", "m", "blocked"],
    "out": ["out", "context", "result", "y", "ctx", "z"],
    "dk": ["d_k", "dk", "d", "width", "head_size"],
    "T": ["T", "n", "seq_len", "L", "t"],
}
COMMENTS = [
    "# project the inputs",
    "# scaled dot product",
    "# hide the future",
    "# softmax over the keys",
    "# TODO: tidy up",
    "# as in the lecture",
    "# split into heads",
    "# merge the heads back",
    "# weighted sum of the values",
]


def _causal(rng: random.Random) -> str:
    n = {k: rng.choice(v) for k, v in WORDS.items()}
    sc, w, mk, out, dk, T = n["scores"], n["weights"], n["mask"], n["out"], n["dk"], n["T"]
    proj = rng.choice(
        [
            ["q, k, v = x @ Wq, x @ Wk, x @ Wv"],
            ["q = x @ Wq", "k = x @ Wk", "v = x @ Wv"],
            ["q = torch.matmul(x, Wq)", "k = torch.matmul(x, Wk)", "v = torch.matmul(x, Wv)"],
            ["q, k, v = (x @ W for W in (Wq, Wk, Wv))"],
        ]
    )
    width = rng.choice([f"{dk} = q.shape[-1]", f"{dk} = k.size(-1)", f"{dk} = Wq.shape[1]"])
    score = rng.choice(
        [
            f"{sc} = q @ k.transpose(-2, -1) / {dk} ** 0.5",
            f"{sc} = torch.matmul(q, k.transpose(1, 2)) / math.sqrt({dk})",
            f"{sc} = (q @ k.mT) * {dk} ** -0.5",
            f"{sc} = torch.bmm(q, k.transpose(1, 2)) / ({dk} ** 0.5)",
        ]
    )
    length = rng.choice([f"{T} = x.shape[1]", f"{T} = x.size(1)", f"{T} = x.shape[-2]"])
    mask = rng.choice(
        [
            f"{mk} = torch.triu(torch.ones({T}, {T}, dtype=torch.bool), diagonal=1)",
            f"{mk} = torch.ones({T}, {T}).triu(1).bool()",
            f"{mk} = ~torch.tril(torch.ones({T}, {T}, dtype=torch.bool))",
            f"{mk} = torch.arange({T})[None, :] > torch.arange({T})[:, None]",
        ]
    )
    fill = rng.choice(
        [
            f"{sc} = {sc}.masked_fill({mk}, float('-inf'))",
            f"{sc} = torch.where({mk}, float('-inf'), {sc})",
            f"{sc} = {sc}.masked_fill({mk}, -torch.inf)",
        ]
    )
    soft = rng.choice(
        [
            f"{w} = torch.softmax({sc}, dim=-1)",
            f"{w} = F.softmax({sc}, dim=-1)",
            f"{w} = {sc}.softmax(-1)",
            f"{w} = torch.nn.functional.softmax({sc}, dim=2)",
        ]
    )
    ret = rng.choice(
        [[f"return {w} @ v, {w}"], [f"{out} = torch.matmul({w}, v)", f"return {out}, {w}"]]
    )
    if rng.random() < 0.5:  # the fill inside the softmax's call: one line for two
        filled = fill.split(" = ", 1)[1]
        if f"({sc}" in soft:
            soft = soft.replace(f"({sc}", f"({filled}", 1)
        else:  # s.softmax(-1)
            soft = f"{w} = {filled}.softmax(-1)"
        fill = ""
    body = [b for b in [*proj, width, score, length, mask, fill, soft, *ret] if b]
    if rng.random() < 0.5:  # the length and mask first: another order of independent lines
        body = [b for b in [*proj, length, mask, width, score, fill, soft, *ret] if b]
    return "def causal_attention(x, Wq, Wk, Wv):\n" + "\n".join("    " + b for b in body)


def _forward(rng: random.Random) -> str:
    n = {k: rng.choice(v) for k, v in WORDS.items()}
    sc, w, out = n["scores"], n["weights"], n["out"]
    head = rng.choice(
        [
            ["B, T, _ = x.shape", "H, hd = self.n_heads, self.head_dim"],
            ["B, T = x.shape[:2]", "H = self.n_heads", "hd = self.head_dim"],
            ["B, T, D = x.size()", "H, hd = self.n_heads, self.d_out // self.n_heads"],
        ]
    )
    split = rng.choice(
        [
            [f"{t} = self.W_{t}(x).view(B, T, H, hd).transpose(1, 2)" for t in "qkv"],
            [f"{t} = self.W_{t}(x).reshape(B, T, H, hd).permute(0, 2, 1, 3)" for t in "qkv"],
            [f"{t} = self.W_{t}(x).unflatten(-1, (H, hd)).transpose(1, 2)" for t in "qkv"],
            [f"{t} = self.W_{t}(x).view(B, T, H, -1).transpose(-3, -2)" for t in "qkv"],
            [
                "def split(t):",
                "    return t.view(B, T, H, hd).transpose(1, 2)",
                "q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))",
            ],
        ]
    )
    score = rng.choice(
        [
            f"{sc} = q @ k.transpose(-2, -1) / hd ** 0.5",
            f"{sc} = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(hd)",
            f"{sc} = (q @ k.mT) * hd ** -0.5",
        ]
    )
    mask = rng.choice(
        [
            f"{sc} = {sc}.masked_fill(self.mask[:T, :T], float('-inf'))",
            f"{sc} = {sc}.masked_fill(self.mask.bool()[:T, :T], -torch.inf)",
            f"{sc} = torch.where(self.mask[:T, :T], float('-inf'), {sc})",
        ]
    )
    soft = rng.choice(
        [
            f"{w} = self.dropout(torch.softmax({sc}, dim=-1))",
            f"{w} = self.dropout(F.softmax({sc}, dim=-1))",
            f"{w} = self.dropout({sc}.softmax(dim=-1))",
        ]
    )
    merge = rng.choice(
        [
            [f"{out} = ({w} @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)"],
            [f"{out} = ({w} @ v).permute(0, 2, 1, 3).reshape(B, T, -1)"],
            [f"{out} = torch.matmul({w}, v).transpose(1, 2).flatten(2)"],
        ]
    )
    ret = rng.choice([[f"return self.out_proj({out})"], [f"y = self.out_proj({out})", "return y"]])
    if rng.random() < 0.5:  # the scale as a line of its own
        score = score.replace(" / hd ** 0.5", " * scale").replace(" / math.sqrt(hd)", " * scale")
        score = score.replace(" * hd ** -0.5", " * scale")
        score = f"scale = 1 / math.sqrt(hd)\n    {score}" if "scale" in score else score
    if rng.random() < 0.5:  # the mask as a line of its own
        mask = mask.replace("self.mask[:T, :T]", "m").replace("self.mask.bool()[:T, :T]", "m")
        mask = f"m = self.mask[:T, :T]\n    {mask}"
    if rng.random() < 0.5:  # dropout as a line of its own
        soft = soft.replace("self.dropout(", "(", 1) + f"\n    {w} = self.dropout({w})"
    body = [*head, *split, score, mask, soft, *merge, *ret]
    return "def forward(self, x):\n" + "\n".join("    " + b for b in body)


def _shapes(rng: random.Random) -> str:
    keys = [
        ("projected_q", "(B, T, H * hd)"),
        ("q_split_into_heads", "(B, T, H, hd)"),
        ("q_per_head", "(B, H, T, hd)"),
        ("scores", "(B, H, T, T)"),
        ("weights", "(B, H, T, T)"),
        ("context_per_head", "(B, H, T, hd)"),
        ("context_merged", "(B, T, H * hd)"),
    ]
    style = rng.randrange(3)
    if style == 0:
        lines = ["return {", *(f'    "{k}": {v},' for k, v in keys), "}"]
    elif style == 1:
        lines = ["d = H * hd", "return dict("]
        lines += [f"    {k}={v.replace('H * hd', 'd')}," for k, v in keys] + [")"]
    else:
        lines = ["shapes = {}"] + [f'shapes["{k}"] = {v}' for k, v in keys] + ["return shapes"]
    return "def expected_shapes(B, T, H, hd):\n" + "\n".join("    " + x for x in lines)


def _decorate(rng: random.Random, code: str) -> str:
    """Comments and blank lines here and there: what a student's file looks like."""
    out = []
    for line in code.splitlines():
        if line.startswith("    ") and rng.random() < 0.15:
            out.append(line[: len(line) - len(line.lstrip())] + rng.choice(COMMENTS))
        out.append(line)
        if rng.random() < 0.08 and line.strip() and not line.rstrip().endswith(":"):
            out.append("")
    return "\n".join(out)


def _class_with(forward: str) -> str:
    head = STARTER.split("class CausalMultiHeadAttention", 1)[1].split("    def forward", 1)[0]
    method = "\n".join("    " + line if line else "" for line in forward.splitlines())
    return "class CausalMultiHeadAttention" + head + method


def independent(seed: int) -> str:
    rng = random.Random(seed)
    causal = rng.choice(CAUSAL) if rng.random() < POOL else _causal(rng)
    forward = rng.choice(FORWARD) if rng.random() < POOL else _forward(rng)
    shapes = rng.choice(SHAPES) if rng.random() < POOL else _shapes(rng)
    parts = [_decorate(rng, causal), _class_with(_decorate(rng, forward)), _decorate(rng, shapes)]
    head = STARTER.split("def causal_attention", 1)[0]
    return head + "import math\n\n\n" + "\n\n\n".join(parts) + "\n"


def near_copy(source: str, seed: int, rewrite: bool = True) -> str:
    """Renamed variables, functions reordered, comments changed, spacing changed; with
    `rewrite`, one line written another way as well."""
    rng = random.Random(seed)
    tree = ast.parse(source)
    local = sorted(
        {
            n.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and len(n.id) > 0
        }
        - {"x", "self", "B", "T", "H", "hd"}
    )
    for i, name in enumerate(local):
        source = re.sub(rf"(?<![\w.]){re.escape(name)}\b", f"{name}_{i}x", source)
    source = re.sub(r"#.*", lambda m: rng.choice(COMMENTS + ["# mine"]), source)
    source = source.replace(" @ ", "@" if rng.random() < 0.5 else " @ ")
    blocks = re.split(r"\n(?=def |class )", source)
    head, defs = blocks[0], blocks[1:]
    rng.shuffle(defs)
    source = head + "\n" + "\n\n".join(d.rstrip() + "\n" for d in defs)
    if rewrite:  # one call written another way, and a line of debugging added
        source = source.replace("torch.softmax(", "F.softmax(", 1)
        source = re.sub(
            r"(def forward\(self, x\):\n)", r'\1        print("shape", x.shape)\n', source
        )
    ast.parse(source)  # still a program
    return source
