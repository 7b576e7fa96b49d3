"""Similar submissions (issue #29, part 3): planted near-copies in a class of 200 are found, 200
independent correct solutions in varied styles are not flagged, in seconds, offline; the
report and similarity.json say it is evidence to look at, not a verdict.

The classes come from similar_kit.py; its independent solutions are checked to be correct
here, on the reference's own outputs (in this process: no student code is run by `grade`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from similar_kit import CAUSAL, FORWARD, REFERENCE, independent, near_copy  # noqa: E402

from tutor.grade import similar  # noqa: E402
from tutor.model.lesson import get_lesson  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LM3 = get_lesson("lm3-l3")
ENV = dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8")
STARTER = set(similar.fingerprint(LM3.starter_path.read_text(encoding="utf-8")))


def prints(sources: dict[str, str]) -> list[similar.Print]:
    return [
        similar.Print(
            s, text, {h: ls for h, ls in similar.fingerprint(text).items() if h not in STARTER}
        )
        for s, text in sorted(sources.items())
    ]


def flagged(sim: similar.Similarity) -> set[tuple[str, str]]:
    return {(p.a, p.b) for g in sim.groups for p in g.pairs}


def test_the_independent_solutions_are_correct():
    torch = pytest.importorskip("torch")

    def load(text: str):
        module = types.ModuleType("solution")
        exec(compile(text, "solution.py", "exec"), module.__dict__)
        return module

    ref = load(REFERENCE)
    torch.manual_seed(0)
    x, W = torch.randn(2, 5, 6), [torch.randn(6, 4) for _ in range(3)]
    for seed in range(200):
        mine = load(independent(seed))
        out, w = mine.causal_attention(x, *W)
        ref_out, ref_w = ref.causal_attention(x, *W)
        assert torch.allclose(out, ref_out, atol=1e-5) and torch.allclose(w, ref_w, atol=1e-6), seed
        torch.manual_seed(1)
        layer = mine.CausalMultiHeadAttention(6, 8, 2, 7)
        torch.manual_seed(1)
        assert torch.allclose(layer(x), ref.CausalMultiHeadAttention(6, 8, 2, 7)(x), atol=1e-5), (
            seed
        )
        assert mine.expected_shapes(2, 5, 2, 4) == ref.expected_shapes(2, 5, 2, 4), seed
    assert (
        len(CAUSAL) >= 10 and len(FORWARD) >= 6
    )  # test_correct_styles.py's styles are in the pool


def test_200_independent_solutions_are_not_flagged():
    sources = {f"s{i:03d}": independent(i) for i in range(200)}
    assert len(set(sources.values())) == 200
    sim = similar.compare(prints(sources))
    assert sim.compared == 200 and sim.groups == [], [
        (p.a, p.b, p.similarity) for g in sim.groups for p in g.pairs
    ]


def test_planted_near_copies_in_a_class_of_200_are_found_in_seconds():
    sources = {f"s{i:03d}": independent(1000 + i) for i in range(180)}
    planted: dict[str, str] = {}  # copy -> the student it was copied from
    for n in range(10):
        base = f"s{n * 17:03d}"
        planted[f"copy{n}a"] = base
        sources[f"copy{n}a"] = near_copy(sources[base], n, rewrite=bool(n % 2))
        if n % 2 == 0:  # a second copy of the same file: a group of three
            planted[f"copy{n}b"] = base
            sources[f"copy{n}b"] = near_copy(sources[base], 50 + n, rewrite=True)
    assert len(sources) == 195
    started = time.monotonic()
    sim = similar.compare(prints(sources))
    seconds = time.monotonic() - started
    pairs = flagged(sim)
    for copy, base in planted.items():
        assert tuple(sorted((copy, base))) in pairs, copy
    for group in sim.groups:
        bases = {planted.get(s, s) for s in group.students}
        assert len(bases) == 1, group.students  # no independent student in a copy's group
    assert len(sim.groups) == 10
    assert seconds < 20, seconds  # about 1 s on an idle 2-core machine; loaded CI is slower


def test_renaming_reordering_and_comments_change_nothing():
    text = independent(7)
    copy = near_copy(text, 3, rewrite=False)
    assert copy != text
    assert similar.fingerprint(copy).keys() == similar.fingerprint(text).keys()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    cls = tmp_path_factory.mktemp("similar") / "class"
    cls.mkdir()
    for i in range(10):
        (cls / f"s{i}_lm3_l3.py").write_text(independent(2000 + i), encoding="utf-8")
    (cls / "张三_lm3_l3.py").write_text(near_copy(independent(2003), 1), encoding="utf-8")
    (cls / "starter_lm3_l3.py").write_text(LM3.starter_path.read_text(encoding="utf-8"))
    out = cls.parent / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "tutor", "grade", str(cls), "--out", str(out), "--timeout", "15"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


def test_similarity_json_and_the_report_show_the_pair_as_evidence(graded):
    out, proc = graded
    data = json.loads((out / "similarity.json").read_text(encoding="utf-8"))
    assert "not a verdict" in data["note"] and data["threshold"] == similar.THRESHOLD
    assert [g["students"] for g in data["groups"]] == [["s3", "张三"]]
    assert data["compared"] == 11 and data["skipped"] == ["starter"]  # only the starter's code
    pair = data["groups"][0]["pairs"][0]
    assert pair["similarity"] >= similar.THRESHOLD and pair["lines_a"] and pair["lines_b"]
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "evidence to look at, not a verdict" in md and "s3, 张三" in md
    html = (out / "report.html").read_text(encoding="utf-8")
    assert '<div class="pair">' in html and html.count("<mark>") >= len(pair["lines_a"])
    assert "1 group of similar submissions" in proc.stdout


def test_the_similarity_report_in_chinese(graded, tmp_path):
    out, _ = graded
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tutor",
            "grade",
            "--merge",
            str(out),
            "--out",
            str(tmp_path),
            "--lang",
            "zh",
        ],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "相似的作业：仅供查看的线索，不是结论" in md and "s3, 张三" in md
    assert json.loads((tmp_path / "similarity.json").read_text())["groups"][0]["students"] == [
        "s3",
        "张三",
    ]
