"""Two messages of lab-02's "other sizes" and helper diagnoses, read word for word: the literal
named is the one in the file, and the helper blamed is the first wrong one in step order.

The wrong files of issue #12 (state kept between calls, a helper's fault that only `attention`
showed, float64, unnamed mistakes, other sizes) are mistakes of their lessons now
(lessons/<id>/mistakes.toml, run by test_lesson_mistakes.py).
"""

from __future__ import annotations

from worker_kit import learner_file

from tutor.text.i18n import local_key

LM3, LAB = "lm3-l3", "lab-02"
BLAMES = "likely.helper_first_fix"
LITERAL = "likely.literal"


# =================================================================== state kept between calls


# =================================================================== each step on its own

SC_NO_SCALE = {"scaled_scores": "def scaled_scores(q, k):\n    return q @ k.transpose(-2, -1)\n"}
MK_DIAGONAL_0 = {
    "causal_mask": "def causal_mask(seq_len):\n"
    "    return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=0)\n"
}


# =================================================================== wrong code in float64


# =================================================================== mistakes that had no name


# =================================================================== what differs at the other sizes

SC_SQRT_8 = {
    "scaled_scores": "def scaled_scores(q, k):\n    return q @ k.transpose(-2, -1) / math.sqrt(8)\n"
}


def test_the_literal_message_quotes_the_line_and_the_number(run):
    """The literal named is the one in the file, at its line: `math.sqrt(8)`, not a guess."""
    source = learner_file(LAB, SC_SQRT_8)
    check = next(c for c in run(LAB, source)["scores"].checks if c.id == "other-sizes")
    likely = nested(check.message.params, LITERAL)
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "math.sqrt(8)" in text)
    assert likely == {
        "value": "8",
        "name": "d_k",
        "line": line,
        "code": "math.sqrt(8)",
        "now": ["d_k=16"],
    }


def nested(params: dict, key: str):
    """The parameters of the message `key` nested anywhere in params, or None."""
    for value in params.values():
        if isinstance(value, dict) and "key" in value:
            if local_key(value["key"]) == key:
                return value["params"]
            found = nested(value["params"], key)
            if found is not None:
                return found
    return None


def test_a_helper_blamed_is_the_first_wrong_one_in_step_order(run):
    """Scores and mask both wrong: the output step names scaled_scores, the first step."""
    source = learner_file(LAB, {**SC_NO_SCALE, **MK_DIAGONAL_0})
    results = run(LAB, source)
    output = [c for c in results["output"].checks if c.status == "fail"]
    assert output and all(
        nested(c.message.params, BLAMES) == {"fn": "scaled_scores"} for c in output
    ), output
    assert results["scores"].status == "fail" and results["mask"].status == "fail"
