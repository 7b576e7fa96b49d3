"""The experiment and reflection steps: their numbers, from the learner's own code."""

from pathlib import Path

import pytest

from tutor.render.experiments import next_setting, seq_lens
from tutor.render.memory import memory_rows
from tutor.runner.client import check_source

ROOT = Path(__file__).resolve().parents[2]
LM3 = (ROOT / "reference" / "lm3_l3.py").read_text()
LAB = (ROOT / "reference" / "lab_02.py").read_text()


def run(lesson, source, steps, params=None):
    results = check_source(lesson, f"{lesson}.py", source, timeout=10, steps=steps, params=params)
    return {r.id: r for r in results}


def test_memory_table_follows_the_formula():
    rows = memory_rows(seq_lens(64, 1024), heads=12, batch=1, bytes_per=4)
    assert [r["T"] for r in rows] == [64, 128, 256, 512, 1024]
    for r in rows:
        assert r["scores"] == 12 * r["T"] ** 2
        assert r["qkv_mb"] == pytest.approx(3 * r["T"] * 768 * 4 / 1e6)
    assert f"{rows[-1]['mb']:.1f}" == "50.3" and rows[-1]["scores"] == 12_582_912
    assert f"{rows[0]['mb']:.1f}" == "0.2"
    # Doubling T: four times the scores, twice q, k and v.
    assert rows[1]["mb"] / rows[0]["mb"] == 4 and rows[1]["qkv_mb"] / rows[0]["qkv_mb"] == 2
    half = memory_rows([1024], heads=12, batch=2, bytes_per=2)[0]
    assert half["bytes"] == 2 * 12 * 1024 * 1024 * 2


def test_settings_cycle_and_come_back():
    s = {"heads": 12, "batch": 1, "dtype": "float32", "t_min": 64, "t_max": 1024}
    seen = {next_setting(s, "heads")["heads"]}
    x = s
    for _ in range(6):
        x = next_setting(x, "heads")
        seen.add(x["heads"])
    assert x["heads"] == 12 and seen == {1, 2, 4, 8, 12, 16}
    assert next_setting(s, "dtype")["dtype"] == "bfloat16"
    assert next_setting(s, "range")[ "t_max"] == 2048


def test_measured_scores_agree_with_the_formula_and_reflect_numbers():
    params = {"memory": {"heads": 4, "batch": 2, "dtype": "bfloat16", "t_min": 64, "t_max": 512}}
    got = run("lm3-l3", LM3, ["memory", "reflect"], params)
    memory = got["memory"].visuals["memory"]
    assert memory["settings"]["heads"] == 4
    measured = dict((t, b) for t, b in memory["measured"])
    assert sorted(measured) == [64, 128, 256, 512]
    for T, b in measured.items():
        assert b == 2 * 4 * T * T * 2  # batch · heads · T² · 2 bytes
    reflect = got["reflect"].visuals["reflect"]
    assert reflect == {"head_dim": 64, "qkv": 1_769_472, "total": 2_360_064}


def test_a_learner_that_builds_the_scores_per_head_in_a_loop_is_still_measured():
    looped = LM3.replace(
        "        scores = q @ k.transpose(2, 3) / hd**0.5\n",
        "        scores = torch.stack([q[:, h] @ k[:, h].transpose(1, 2) for h in range(H)], 1) / hd**0.5\n")
    assert looped != LM3
    got = run("lm3-l3", looped, ["memory"], {"memory": {"t_min": 64, "t_max": 128}})
    measured = dict((t, b) for t, b in got["memory"].visuals["memory"]["measured"])
    assert measured[64] == 12 * 64 * 64 * 4


def test_exercises_entropy_nan_row_and_heads():
    ex = run("lab-02", LAB, ["exercises", "heatmap"])
    data = ex["exercises"].visuals["exercises"]
    entropy = {e["hd"]: e for e in data["entropy"]}
    # With the scale the entropy stays put; without it, it collapses as head_dim grows.
    assert entropy[512]["with"] > 1.0 and abs(entropy[512]["with"] - entropy[8]["with"]) < 0.5
    assert entropy[512]["without"] < 0.35 * entropy[8]["without"]
    assert all(e["without"] < e["with"] for e in data["entropy"])
    # diagonal=0: the first query has nothing to attend to.
    assert data["diagonal_nan_rows"] == [0]
    assert all(v is None for v in data["diagonal"][0])
    # Changing head 0's Q moves head 0 only.
    before, after = data["heads"]["before"], data["heads"]["scaled_q"]
    assert before[1] == after[1] and before[0] != after[0]
    maps = ex["heatmap"].visuals["heatmaps"]
    assert [m["label"]["params"]["h"] for m in maps] == [0, 1]
    assert maps[0]["learner"] == maps[0]["reference"]


def test_exercises_follow_the_learners_code():
    unscaled = LAB.replace("return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])",
                           "return q @ k.transpose(-2, -1)")
    assert unscaled != LAB
    data = run("lab-02", unscaled, ["exercises"])["exercises"].visuals["exercises"]
    for e in data["entropy"]:  # the learner's "scaled" scores are now the unscaled ones
        assert e["with"] == pytest.approx(e["without"], abs=1e-6)
    zero_fill = LAB.replace('float("-inf")', "0.0")
    data = run("lab-02", zero_fill, ["exercises"])["exercises"].visuals["exercises"]
    assert data["diagonal_nan_rows"] == []
