"""The kit's weights panels for a stack of maps, and other sizes judged for cases that carry
their size: the first size that fails is said with its label and what differs there."""

from __future__ import annotations

import torch

from tutor.kit import Stop, Verdict, judge_sized_cases, msg, sizes_label, weights_panels


def test_one_panel_per_map_and_why_when_the_learners_are_missing():
    ref = torch.eye(3).expand(2, 3, 3)
    both = weights_panels(ref * 0.5, ref, lambda i: msg("visual.head", h=i))
    assert len(both) == 2 and both[1]["label"]["params"] == {"h": 1}
    assert both[0]["learner"][0][0] == 0.5 and "why" not in both[0]
    none = weights_panels(None, ref, lambda i: msg("visual.head", h=i), why=msg("visual.why"))
    assert none[0]["learner"] is None and none[0]["why"] == msg("visual.why")


def test_the_first_size_that_fails_is_said_with_its_label():
    sizes = [(2, 6), (3, 11), (1, 1)]

    def judge_case(v, call, case, size):
        v.require("values", call == size[0] * size[1], "check.values")

    def explain(lab, size, source):
        return msg("likely.T", lab=lab[1], T=size[1])

    v = Verdict()
    judge_sized_cases(v, [12, 33, 1], [None] * 3, sizes, ("B", "T"), judge_case, explain)
    assert v.passed()
    v = Verdict()
    try:
        judge_sized_cases(v, [12, 30, 1], [None] * 3, sizes, ("B", "T"), judge_case, explain)
    except Stop:
        pass
    failed = v.failed_message()
    assert failed["key"] == "check.other_sizes"
    assert failed["params"]["sizes"] == sizes_label(("B", "T"), (3, 11)) == ["B=3", "T=11"]
    assert failed["params"]["likely"] == msg("likely.T", lab=6, T=11)


def test_given_the_learners_defs_the_size_is_explained_from_their_source():
    sizes = [(2, 6), (3, 11)]

    def judge_case(v, call, case, size):
        v.require("values", call == size[0] * size[1], "check.values")

    source = "def area(B, T):\n    return B * 6\n"  # the lab's T written in
    v = Verdict(source)
    try:
        judge_sized_cases(v, [12, 18], [None] * 2, sizes, ("B", "T"), judge_case, defs=("area",))
    except Stop:
        pass
    likely = v.failed_message()["params"]["likely"]
    assert likely["key"] == "likely.literal"
    v = Verdict(source)
    try:  # without defs or explain: no explanation
        judge_sized_cases(v, [12, 18], [None] * 2, sizes, ("B", "T"), judge_case)
    except Stop:
        pass
    assert v.failed_message()["params"]["likely"]["key"] != "likely.literal"
