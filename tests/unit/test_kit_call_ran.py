"""A call that raised, said in a lesson's words (tutor.kit.judge_tools.require_call_ran): the
error's fields and the code of the learner's line, the diagnosis evaluated on a failure only."""

from __future__ import annotations

import pytest

from tutor.kit import Stop, Verdict, failure_code, msg, require_call_ran

ERROR = {
    "kind": "RuntimeError",
    "detail": "Sizes of tensors must match except in dimension 2",
    "frames": [{"line": 7, "function": "step", "code": "    k = torch.cat([past, k], 1)\n"}],
}


def test_a_call_that_ran_records_nothing_and_diagnoses_nothing():
    v = Verdict()
    require_call_ran(v, {"value": 1}, "check.raised_here", likely=lambda: 1 / 0, t=3)
    assert v.checks == []


def test_a_call_that_raised_stops_with_its_fields_and_code():
    v = Verdict()
    with pytest.raises(Stop):
        require_call_ran(v, {"error": ERROR}, "check.raised_here", likely=lambda: msg("x"), t=3)
    [check] = v.checks
    assert (check.id, check.status, check.message.key) == ("runs", "fail", "check.raised_here")
    assert list(check.message.params) == ["t", "kind", "detail", "line", "code", "likely"]
    assert check.message.params["code"] == "k = torch.cat([past, k], 1)"
    assert check.message.params["line"] == 7 and check.message.params["likely"] == msg("x")


def test_failure_code_without_a_frame_of_the_learner():
    assert failure_code({**ERROR, "frames": []}) == ""
    assert failure_code(ERROR) == "k = torch.cat([past, k], 1)"
