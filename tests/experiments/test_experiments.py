"""The experiment and reflection steps: their views, built by the lessons' judges from the
learner's own code (the tables' numbers, the heatmaps, question 4's numbers)."""

from pathlib import Path

import pytest

from tutor.engine.client import check_source
from tutor.model.lesson import get_lesson

ROOT = Path(__file__).resolve().parents[2]
LM3 = (ROOT / "reference" / "lm3_l3.py").read_text()
LAB = (ROOT / "reference" / "lab_02.py").read_text()


def run(lesson, source, steps, params=None):
    results = check_source(lesson, f"{lesson}.py", source, timeout=10, steps=steps, params=params)
    return {r.id: r for r in results}


def items(view, kind):
    """The view's items of one kind, those inside rows and after_answer too, in order."""
    out = []
    for item in view:
        if item["kind"] == kind:
            out.append(item)
        out += items(item.get("items", []), kind)
    return out


def key_of(text) -> str:
    return text["key"] if isinstance(text, dict) else text


def memory_table(result) -> dict[int, list]:
    """The memory step's table: T -> its row's cells."""
    (table,) = items(result.visuals["view"], "table")
    return {int(row[0]): row for row in table["rows"]}


def test_memory_table_follows_the_formula_for_the_default_settings():
    rows = memory_table(run("lm3-l3", LM3, ["memory"])["memory"])
    assert sorted(rows) == [64, 128, 256, 512, 1024]
    # T, scores (batch·heads·T²), MB, q,k,v MB (3·T·768·4 bytes), ratio, measured, bar
    assert rows[64][1:6] == ["49,152", "0.2", "0.6", "0.3×", "0.2"]
    assert rows[1024][1:6] == ["12,582,912", "50.3", "9.4", "5.3×", "50.3"]
    assert rows[1024][6]["kind"] == "bar" and rows[1024][6]["value"] == rows[1024][6]["top"]


def test_measured_scores_agree_with_the_formula_and_say_for_which_settings():
    params = {"memory": {"heads": 4, "batch": 2, "dtype": "bfloat16", "range": [64, 512]}}
    got = run("lm3-l3", LM3, ["memory", "reflect"], params)
    rows = memory_table(got["memory"])
    assert sorted(rows) == [64, 128, 256, 512]
    for T, row in rows.items():
        assert row[1] == f"{2 * 4 * T * T:,}"  # batch · heads · T²
        assert row[5] == f"{2 * 4 * T * T * 2 / 1e6:.1f}"  # measured: · 2 bytes
    (said,) = [
        n
        for n in items(got["memory"].visuals["view"], "note")
        if key_of(n["text"]).endswith("memory_measured_note")
    ]
    assert said["text"]["params"] == {"heads": 4, "batch": 2, "dtype": "bfloat16"}
    (numbers,) = items(got["reflect"].visuals["view"], "after_answer")
    assert numbers["question"] == 4
    assert numbers["items"][0]["text"]["params"] == {
        "head_dim": 64,
        "qkv": "1,769,472",
        "total": "2,360,064",
    }


def test_the_memory_formula_shows_without_the_learners_class():
    """The formula's columns need no learner code: the starter (forward not written) still gets
    the table, with its measured column empty."""
    starter = (ROOT / "lessons" / "lm3-l3" / "starter.py").read_text()
    rows = memory_table(run("lm3-l3", starter, ["memory"])["memory"])
    assert rows[1024][1] == "12,582,912" and all(row[5] == "—" for row in rows.values())


def test_a_learner_that_builds_the_scores_per_head_in_a_loop_is_still_measured():
    looped = LM3.replace(
        "        scores = q @ k.transpose(2, 3) / hd**0.5\n",
        "        scores = torch.stack([q[:, h] @ k[:, h].transpose(1, 2) for h in range(H)], 1) / hd**0.5\n",
    )
    assert looped != LM3
    got = run("lm3-l3", looped, ["memory"], {"memory": {"range": [64, 128]}})
    assert memory_table(got["memory"])[64][5] == f"{12 * 64 * 64 * 4 / 1e6:.1f}"


def entropy(result) -> dict[int, tuple]:
    table = items(result.visuals["view"], "table")[0]
    return {int(r[0]): (float(r[1]), float(r[3])) for r in table["rows"]}


def test_exercises_entropy_nan_row_and_heads():
    ex = run("lab-02", LAB, ["exercises", "heatmap"])
    view = ex["exercises"].visuals["view"]
    e = entropy(ex["exercises"])
    # With the scale the entropy stays put; without it, it collapses as head_dim grows.
    assert e[512][0] > 1.0 and abs(e[512][0] - e[8][0]) < 0.5
    assert e[512][1] < 0.35 * e[8][1]
    assert all(without < with_ for with_, without in e.values())
    # diagonal=0: the first query has nothing to attend to, and the note says which row.
    diagonal = items(view, "heatmap")[0]
    assert all(v is None for v in diagonal["matrix"][0])
    (nan,) = [n for n in items(view, "note") if key_of(n["text"]).endswith("ex2_nan")]
    assert nan["text"]["params"]["rows"] == [0]
    # Changing head 0's Q moves head 0 only: before and after side by side, per head.
    pairs = [r["items"] for r in items(view, "row")]
    assert len(pairs) == 2
    (before0, after0), (before1, after1) = pairs
    assert before1["matrix"] == after1["matrix"] and before0["matrix"] != after0["matrix"]
    assert items(view, "keys"), "exercise 3 has its settings line (x)"
    # The heatmap step: heads 0 and 1, the learner's weights; its weights panel is the output step's.
    maps = items(ex["heatmap"].visuals["view"], "heatmap")
    assert [m["title"]["params"]["h"] for m in maps] == [0, 1]
    assert get_lesson("lab-02").step("heatmap").weights_from == "output"


def test_the_exercise_variant_is_a_setting():
    view = lambda variant: run("lab-02", LAB, ["exercises"], {"exercises": {"variant": variant}})[  # noqa: E731
        "exercises"
    ].visuals["view"]
    scaled, shuffled = view("scaled_q"), view("shuffled_q")
    after = lambda v: [r["items"][1]["matrix"] for r in items(v, "row")]  # noqa: E731
    assert after(scaled)[1] == after(shuffled)[1] and after(scaled)[0] != after(shuffled)[0]


def test_exercises_follow_the_learners_code():
    unscaled = LAB.replace(
        "return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])", "return q @ k.transpose(-2, -1)"
    )
    assert unscaled != LAB
    for with_, without in entropy(run("lab-02", unscaled, ["exercises"])["exercises"]).values():
        assert with_ == pytest.approx(
            without, abs=0.01
        )  # the learner's "scaled" scores are the unscaled ones
    zero_fill = LAB.replace('float("-inf")', "0.0")
    view = run("lab-02", zero_fill, ["exercises"])["exercises"].visuals["view"]
    assert [n for n in items(view, "note") if key_of(n["text"]).endswith("ex2_no_nan")]
