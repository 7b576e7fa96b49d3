"""Which known mistake computes what the learner's code computes: outputs compared leaf by
leaf, generic for any lesson (the leaves are whatever its probe returns).

An output tree (a probe's outputs as the judge decodes them, or the exception a step raised)
is flattened to {path: leaf}: float tensors, and (kind, detail) of an exception. Only the
leaves where the learner's or the mutant's outputs differ from the reference's tell anything.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

SKIP = frozenset({"args", "softmax"})  # copies of the inputs; a view's capture
MAX_LEAVES = 400


def leaves(tree, path: str = "") -> dict[str, object]:
    """{path: float tensor or (kind, detail)} of an output tree."""
    out: dict[str, object] = {}

    def walk(node, at: str) -> None:
        if len(out) >= MAX_LEAVES:
            return
        if isinstance(node, torch.Tensor):
            if node.is_floating_point():
                out[at] = node.detach()
        elif isinstance(node, Mapping):
            if isinstance(node.get("kind"), str) and "detail" in node:  # a failure
                out[at] = (node["kind"], str(node.get("detail", ""))[:300])
                return
            for k, v in node.items():
                if k not in SKIP:
                    walk(v, f"{at}/{k}")
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                walk(v, f"{at}/{i}")

    walk(tree, path)
    return out


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and bool(
            torch.allclose(a.double(), b.double(), rtol=1e-4, atol=1e-6, equal_nan=True)
        )
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False
    return a == b


def differing(tree: dict, reference: dict) -> frozenset[str]:
    """The paths where an output tree's leaves are not the reference's (of those the reference
    has: the mutants run without the views, whose leaves the learner's frame may add)."""
    return frozenset(
        p
        for p, x in tree.items()
        if (p not in reference and isinstance(x, tuple))  # an exception where it returned
        or (p in reference and not same(x, reference[p]))
    )


def exact(learner: dict, telling: frozenset[str], mutant: dict, theirs: frozenset[str]) -> int:
    """How many telling leaves, when the mutant computes the learner's outputs in every one
    (telling: where the learner's differ from the reference's; theirs: the mutant's); else 0.
    It stops at the first leaf that differs, so most mutants cost one comparison."""
    paths = telling | (theirs & learner.keys())
    for p in paths:
        if p not in mutant or not same(learner[p], mutant[p]):
            return 0
    return len(paths)


def _distance(a, b) -> float:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
        d = (a.double() - b.double()).abs().nan_to_num(1e6, 1e6, 1e6)
        return float(d.mean() / (b.double().abs().nan_to_num(1.0, 1.0, 1.0).mean() + 1e-9))
    return 0.0 if same(a, b) else 1.0


def distance(learner: dict, mutant: dict, reference: dict) -> float:
    """A rough closeness where no mutant is exact, to choose which pairs to try: the mean
    relative difference over the leaves where the learner's outputs are not the reference's
    (10 for a leaf the mutant lacks); inf for a mutant that computes what the reference does."""
    telling = [p for p, got in learner.items() if p not in reference or not same(got, reference[p])]
    if not telling or all(p in reference and same(mutant.get(p), reference[p]) for p in telling):
        return float("inf")
    return sum(
        min(_distance(learner[p], mutant[p]), 10.0) if p in mutant else 10.0 for p in telling
    ) / len(telling)


def first_difference(learner: dict, reference: dict) -> dict | None:
    """Where the learner's outputs first differ from the reference's, as a message's params:
    the output's path, how many entries differ, the largest difference and where it is, and
    the leading indices (rows, heads) that hold a difference."""
    for path, got in learner.items():
        ref = reference.get(path)
        if ref is None or same(got, ref):
            continue
        if not (isinstance(got, torch.Tensor) and isinstance(ref, torch.Tensor)):
            continue
        if got.shape != ref.shape:
            return {"what": path.strip("/"), "shape": list(got.shape), "ref": list(ref.shape)}
        d = (got.double() - ref.double()).abs().nan_to_num(float("inf"), float("inf"))
        wrong = ~torch.isclose(got.double(), ref.double(), rtol=1e-4, atol=1e-6, equal_nan=True)
        at = [int(i) for i in torch.unravel_index(torch.argmax(d), d.shape)] if d.dim() else []
        last = d.dim() - 2 if d.dim() >= 2 else 0  # the row axis of a matrix
        rows = sorted({int(r) for r in wrong.nonzero()[:, last].tolist()}) if d.dim() else []
        return {
            "what": path.strip("/"),
            "count": int(wrong.sum()),
            "total": wrong.numel(),
            "err": f"{float(d.max()):.4g}",
            "where": "(" + ", ".join(map(str, at)) + ")",
            "rows": ", ".join(map(str, rows[:8])) + (" …" if len(rows) > 8 else ""),
        }
    return None
