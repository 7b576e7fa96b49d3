"""The kit's shape_explanation: why code right at the lab's input shape fails at another, the
rank included (dimensions counted from the front, or a rank assumed), before the generic
reasons (a number of the lab's, a squeeze, kept state, what differs)."""

from __future__ import annotations

from tutor.kit import msg, rank_explanation, shape_explanation, shapes_explainer

NAMES = ("B", "H", "T", "d_k")
LAB = (1, 2, 6, 8)
FRONT = """
def f(q, k):
    return q @ k.transpose(2, 3)
"""
FROM_END = """
def f(q, k):
    return q @ k.transpose(-2, -1)
"""
LITERAL = """
def f(q, k):
    return q @ k.transpose(-2, -1) / 8 ** 0.5
"""
SQUEEZE = """
def f(q, k):
    return (q @ k.transpose(-2, -1)).squeeze()
"""


def key(found: dict) -> str:
    return found["key"]


def test_another_rank_names_the_line_that_counts_from_the_front():
    found = shape_explanation(FRONT, ("f",), NAMES, LAB, (4, 9, 32))
    assert key(found) == "likely.rank_from_front" and found["params"]["line"] == 3
    assert found["params"]["rank"] == 3 and found["params"]["lab_rank"] == 4
    own = shape_explanation(FRONT, ("f",), NAMES, LAB, (4, 9, 32), at_key="likely.mine")
    assert key(own) == "likely.mine"


def test_another_rank_without_such_a_line_says_the_rank():
    assert key(rank_explanation(FROM_END, ("f",), 3, 4)) == "likely.rank_fixed"


def test_a_number_of_the_lab_comes_first_even_at_another_rank():
    assert key(shape_explanation(LITERAL, ("f",), NAMES, LAB, (4, 9, 32))) == "likely.literal"


def test_the_same_rank_a_squeeze_then_what_differs():
    assert key(shape_explanation(SQUEEZE, ("f",), NAMES, LAB, (1, 1, 1, 4))) == "likely.squeeze"
    assert (
        key(shape_explanation(FROM_END, ("f",), NAMES, LAB, (2, 3, 5, 16))) == "likely.sizes_differ"
    )


def test_the_explainer_for_other_sizes_reads_the_cases_shape_after_a_culprit():
    shapes = [LAB, (4, 9, 32), (2, 3, 5, 16)]
    explain = shapes_explainer(("f",), NAMES, shapes)
    assert key(explain(1, None, FRONT)) == "likely.rank_from_front"
    assert key(explain(2, None, FROM_END)) == "likely.sizes_differ"
    helper = msg("likely.helper_first_fix", fn="g")
    blamed = shapes_explainer(("f",), NAMES, shapes, first=lambda i: helper if i == 2 else None)
    assert blamed(2, None, FROM_END) == helper
    assert key(blamed(1, None, FRONT)) == "likely.rank_from_front"
