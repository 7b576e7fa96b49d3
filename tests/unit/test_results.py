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
    assert result.to_dict() == asdict(
        result
    )  # a field added to the dataclasses must be added to to_dict
    assert StepResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
