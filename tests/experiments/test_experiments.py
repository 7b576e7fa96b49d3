"""The experiment and reflection steps: their views, built by the lessons' judges from the
learner's own code (the tables' numbers, the heatmaps, question 4's numbers)."""

from pathlib import Path

import pytest
from experiment_kit import SHARED

from tutor.model.lesson import get_lesson

ROOT = Path(__file__).resolve().parents[2]
LM3 = (ROOT / "reference" / "lm3_l3.py").read_text()
LAB = (ROOT / "reference" / "lab_02.py").read_text()


def run(lesson, source, steps, params=None):
    return SHARED.run(lesson, f"{lesson}.py", source, steps, params)


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
    assert said["text"]["params"] == {
        "heads": 4,
        "batch": 2,
        "dtype": "bfloat16",
        "layer": "CausalMultiHeadAttention",
        "d_out": 768,
    }
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


def entropy(view) -> dict[int, tuple]:
    """Exercise 1's table: head_dim -> (entropy with the scale, without)."""
    table = items(view, "table")[0]
    return {int(r[0]): (float(r[1]), float(r[3])) for r in table["rows"]}


def notes_ending(view, suffix) -> list:
    return [n for n in items(view, "note") if key_of(n["text"]).endswith(suffix)]


def exercises_view(source):
    return run("lab-02", source, ["exercises"])["exercises"].visuals["view"]


def question_of(view, item) -> int:
    """The question (1-based) whose with_question or after_answer block holds item."""
    for block in view:
        if item in items(block.get("items", []), item["kind"]):
            return block["question"]
    raise AssertionError(f"{item} is under no question")


EXERCISE_DEFS = LAB[LAB.index("# The exercises") :]
WITHOUT_EXERCISES = LAB[: LAB.index("# The exercises")]
STARTER_EXERCISES = (ROOT / "lessons" / "lab-02" / "starter.py").read_text()
AS_STARTED = WITHOUT_EXERCISES + STARTER_EXERCISES[STARTER_EXERCISES.index("# ----") :]


def test_exercises_entropy_nan_row_and_heads_with_the_changes_made():
    ex = run("lab-02", LAB, ["exercises", "heatmap"])
    view = ex["exercises"].visuals["view"]
    assert [b["kind"] for b in view] == ["with_question", "after_answer"] * 3
    assert [b["question"] for b in view] == [1, 1, 2, 2, 3, 3]
    e = entropy(view)
    # With the scale the entropy stays put; without it, it collapses as head_dim grows.
    assert e[512][0] > 1.0 and abs(e[512][0] - e[8][0]) < 0.5
    assert e[512][1] < 0.35 * e[8][1]
    assert all(without < with_ for with_, without in e.values())
    # diagonal=0: the first query has nothing to attend to, and the note says which row.
    diagonal = items(view, "heatmap")[0]
    assert question_of(view, diagonal) == 2
    assert all(v is None for v in diagonal["matrix"][0])
    (nan,) = notes_ending(view, "ex2_nan")
    assert nan["text"]["params"]["row"] == 0
    # Changing head 0's Q moves head 0 only: before and after side by side, per head.
    pairs = [r["items"] for r in items(view, "row")]
    assert len(pairs) == 2
    (before0, after0), (before1, after1) = pairs
    assert before1["matrix"] == after1["matrix"] and before0["matrix"] != after0["matrix"]
    (why3,) = notes_ending(view, "ex3_why")
    assert why3["text"]["params"] == {"h": 0, "other": 1} and question_of(view, why3) == 3
    assert not items(view, "keys"), "no setting left: the learner makes the change"
    # The heatmap step: heads 0 and 1, the learner's weights; its weights panel is the output step's.
    maps = items(ex["heatmap"].visuals["view"], "heatmap")
    assert [m["title"]["params"]["h"] for m in maps] == [0, 1]
    assert get_lesson("lab-02").step("heatmap").weights_from == "output"


def test_the_starters_exercises_say_what_to_change_and_give_nothing_away():
    view = exercises_view(AS_STARTED)
    assert [b["kind"] for b in view] == ["with_question"] * 3  # no why before the change
    for suffix in ("ex1_unchanged", "ex2_unchanged", "ex3_unchanged"):
        assert len(notes_ending(view, suffix)) == 1, suffix
    with_, without = zip(*entropy(view).values(), strict=True)
    assert with_ == without  # the same scores twice
    (heads,) = items(view, "row")
    assert [m["title"]["key"] for m in heads["items"]] == ["lab-02.visual.ex3_head"] * 2
    assert len(items(view, "heatmap")) == 3  # the mask's, then each head once


def test_a_file_without_the_exercise_functions_gets_the_tutors_change():
    view = exercises_view(WITHOUT_EXERCISES)
    made = notes_ending(view, "visual.exercise_made")
    assert [n["text"]["params"]["fn"] for n in made] == [
        "exercise_scores",
        "exercise_mask",
        "exercise_q",
    ]
    assert [b["question"] for b in view if b["kind"] == "after_answer"] == [1, 2, 3]
    assert entropy(view)[512][1] < 0.5


def changed(old, new):
    assert old in LAB, old
    return LAB.replace(old, new)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # exercise 3 on head 1 instead of head 0: right too, and said so for head 1
        (changed("q[:, 0] = q[:, 0] * 4", "q[:, 1] = q[:, 1] * 4"), None),
        (changed("q[:, 0] = q[:, 0] * 4", "q = q * 4"), "ex3_heads"),
        (
            changed(
                "    q = q.clone()\n    q[:, 0] = q[:, 0] * 4\n    return q", "    return q[0]"
            ),
            "ex3_bad_return",
        ),
        (
            changed("dtype=torch.bool), diagonal=0)", "dtype=torch.bool), diagonal=-1)"),
            "ex2_other",
        ),
        (
            changed("def exercise_mask(seq_len):\n", "def exercise_mask(seq_len):\n    1 / 0\n"),
            "visual.fn_raised_line",
        ),
        (
            changed(
                "return q @ k.transpose(-2, -1)\n\n\ndef exercise_mask",
                "return q @ k.transpose(-2, -1) / 2\n\n\ndef exercise_mask",
            ),
            "ex1_other",
        ),
        # returns that the next function fails on: said of the exercise, not of that function
        (
            changed(
                "    q = q.clone()\n    q[:, 0] = q[:, 0] * 4\n    return q", "    return None"
            ),
            "ex3_bad_return",
        ),
        (
            changed(
                "return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=0)",
                "return [[True]]",
            ),
            "ex2_shape",
        ),
    ],
    ids=[
        "head1",
        "both-heads",
        "wrong-shape",
        "diagonal-1",
        "raises",
        "half-scale",
        "q-none",
        "mask-list",
    ],
)
def test_a_learners_change_is_judged_for_what_it_is(source, expected):
    view = exercises_view(source)
    all_three = {1, 2, 3}
    answered = {b["question"] for b in view if b["kind"] == "after_answer"}
    if expected is not None:
        (said,) = notes_ending(view, expected)
        wrong = question_of(view, said)
        assert wrong not in answered  # the why waits for the right change
        assert answered == all_three - {wrong}
        if expected == "visual.fn_raised_line":
            params = said["text"]["params"]
            assert params["kind"] == "ZeroDivisionError" and params["fn"] == "exercise_mask"
            assert source.splitlines()[params["line"] - 1].strip() == "1 / 0"
    else:
        assert answered == all_three
        (note3,) = notes_ending(view, "ex3_why")
        assert note3["text"]["params"] == {"h": 1, "other": 0}


def test_exercises_follow_the_learners_code():
    unscaled = LAB.replace(
        "return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])", "return q @ k.transpose(-2, -1)"
    )
    assert unscaled != LAB
    for with_, without in entropy(exercises_view(unscaled)).values():
        assert with_ == pytest.approx(
            without, abs=0.01
        )  # the learner's "scaled" scores are the unscaled ones
    zero_fill = LAB.replace('float("-inf")', "0.0")
    assert notes_ending(exercises_view(zero_fill), "ex2_no_nan")


def test_the_output_step_shows_the_notebooks_printouts():
    view = run("lab-02", LAB, ["output"])["output"].visuals["view"]
    (table,) = items(view, "table")
    printed = {row[0]: row[1] for row in table["rows"]}
    assert printed["weights:"] == "(1, 2, 6, 6)"
    assert printed["row sums:"]["params"] == {"n": 12}
    assert float(printed["maximum absolute error:"]) < 1e-6
    halved = LAB.replace("return weights @ v, weights", "return weights @ v, weights / 2")
    rows = items(run("lab-02", halved, ["output"])["output"].visuals["view"], "table")[0]["rows"]
    assert [r[1] for r in rows[1:3]] == ["0.5000 " * 5 + "0.5000"] * 2
