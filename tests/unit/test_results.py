"""StepResult to and from plain data (what travels judge → worker → UI as JSON)."""

from __future__ import annotations

import json
from dataclasses import asdict

from tutor.model.results import Check, Failure, Frame, Message, StepResult


def test_a_step_result_as_a_dict_is_what_dataclasses_would_make_and_comes_back_equal():
    result = StepResult(
        "single-head",
        "fail",
        [Check("runs", "pass"), Check("values", "fail", Message("check.values", {"err": 0.5}))],
        Failure("ValueError", "bad", [Frame(3, "causal_attention", "x = 1")], "^"),
        output="printed",
        visuals={"heatmaps": [[[0.5, None]]]},
        ms=12.5,
    )
    # A field added to the dataclasses must be added to to_dict; reads alone travels beside the
    # result (JudgeReply, StepVerdict), out of `check --json` and the grade records.
    assert result.to_dict() == {k: v for k, v in asdict(result).items() if k != "reads"}
    assert StepResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_a_pass_keeps_the_names_it_read_over_the_wire_and_a_failure_does_not():
    from tutor.engine import protocol

    for status, kept in (("pass", ("causal_attention",)), ("fail", None)):
        result = StepResult("single-head", status, reads=("causal_attention",))
        for message in (protocol.StepVerdict.of(3, result), protocol.JudgeReply.of(3, result)):
            wire = json.loads(json.dumps(message.to_json()))
            assert "reads" not in wire["result"]
            back = type(message).from_json(wire)
            assert back.result.reads == kept
