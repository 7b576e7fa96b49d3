"""Typed messages between the engine's processes (tutor/engine/protocol.py): each child report
survives the wire as it was sent, and the judge turns anything else into a channel error."""

from __future__ import annotations

import json

import pytest

from tutor.engine import codec
from tutor.engine import protocol as messages
from tutor.engine.checks_loader import load_checks
from tutor.engine.judge import Judge
from tutor.model.lesson import all_lessons
from tutor.model.results import Failure, Frame

FRAMES = [Frame(3, "causal_attention", "    return x")]


def learner_failure(kind="ValueError", **kw):
    return messages.LearnerFailure(Failure(kind, "bad", list(FRAMES), ""), **kw)


REPORTS = [
    messages.ImportFailed(learner_failure("SyntaxError")),
    messages.ImportFailed(learner_failure("ModuleNotFoundError", module="numpyx")),
    messages.Missing("causal_attention"),
    messages.Foreign("causal_attention", "torch.nn.functional"),
    messages.Raised(learner_failure(), todo=False),
    messages.Raised(learner_failure("NotImplementedError"), todo=True),
    messages.Raised(learner_failure("FileNotFoundError", refused=True)),
    messages.HarnessError("KeyError: 'x'"),
    messages.Outputs({"calls": [1, 2]}, ["aten::softmax"]),
]


@pytest.mark.parametrize("report", REPORTS, ids=lambda r: type(r).__name__)
def test_a_report_comes_back_as_it_was_sent(report):
    message, _ = codec.unpack_payload(codec.pack_payload(report.to_json()))
    assert messages.report_from_json(message) == report


def test_a_report_says_its_kind_in_its_type_tag():
    assert REPORTS[2].to_json() == {"type": "missing", "name": "causal_attention"}
    assert REPORTS[-1].to_json() == {
        "type": "outputs",
        "tree": {"calls": [1, 2]},
        "kernels": ["aten::softmax"],
        "reads": None,
    }
    assert set(REPORTS[1].to_json()["error"]) == {
        "kind",
        "detail",
        "frames",
        "caret",
        "module",
    }


MALFORMED = [
    {},
    [],
    3,
    {"type": "import_failed", "error": 1},
    {"type": "raised", "error": {"kind": "X"}},
    {"type": "raised", "error": {"kind": 1, "detail": ""}},
    {"type": "raised", "error": {"kind": "X", "detail": "", "frames": [{"line": 1}]}},
    {"type": "raised", "error": {"kind": "X", "detail": ""}, "todo": 1},
    {"type": "missing", "name": 5},
    {"type": "missing"},
    {"type": "foreign", "name": "x"},
    {"type": "foreign", "name": "x", "origin": 3},
    {"type": "harness_error", "detail": None},
    {"type": "outputs", "tree": {}, "kernels": 3},
    {"type": "outputs", "tree": {}, "kernels": [3]},
    {"type": "outputs"},
    {"type": "outputs", "tree": {}, "extra": 1},
    {"missing": "f"},  # the untagged form from before: no kind without its tag
    {"type": "unknown"},
    {"type": 1},
]


@pytest.mark.parametrize("data", MALFORMED, ids=repr)
def test_anything_else_is_malformed(data):
    with pytest.raises(messages.Malformed):
        messages.report_from_json(data)


@pytest.fixture(scope="module")
def judge():
    return Judge(load_checks(all_lessons()))


@pytest.mark.parametrize("data", MALFORMED, ids=repr)
def test_the_judge_says_channel_for_a_malformed_report_and_does_not_crash(judge, data):
    result = judge.verdict("lm3-l3", "single-head", codec.pack_payload(data), "")
    assert result.status == "error" and result.checks[0].message.key == "failure.channel"


@pytest.mark.parametrize(
    "report, key",
    [
        (REPORTS[0], "failure.syntax"),
        (REPORTS[1], "failure.missing_package"),
        (REPORTS[2], "check.missing"),
        (REPORTS[3], "check.not_in_file"),
        (REPORTS[4], "failure.exception"),
        (REPORTS[5], "check.todo"),
        (REPORTS[6], "failure.refused"),
        (REPORTS[7], "failure.harness"),
    ],
    ids=lambda x: x if isinstance(x, str) else type(x).__name__,
)
def test_each_kind_gets_its_message(judge, report, key):
    result = judge.verdict("lm3-l3", "single-head", codec.pack_payload(report.to_json()), "")
    assert result.checks[0].message.key == key


def test_a_file_that_does_not_load_is_said_about_the_file():
    key, params = messages.learner_failure_message(learner_failure("RecursionError"), None)
    assert key == "failure.file_exception" and "fn" not in params
    key, params = messages.learner_failure_message(learner_failure("RecursionError"), "f")
    assert (
        key == "failure.recursion"
        and params["fn"] == "f"
        and params["line"] == 3
        and params["code"] == "return x"
    )


EVENTS = [
    messages.Ready(123),
    messages.Done(4),
    messages.RunError(4, "unknown lesson 'x'"),
    messages.Pong(),
    messages.Stats(12, 3, 0, [5, 6]),
    messages.StepVerdict(
        4,
        messages.failed_step(
            "single-head",
            "timeout",
            Failure("timeout", "3 s", list(FRAMES)),
            "failure.timeout",
            {"seconds": "3"},
        ),
    ),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_an_event_comes_back_as_it_was_sent(event):
    line = json.dumps(messages.event_to_json(event))
    assert messages.event_from_json(json.loads(line)) == event
    assert json.loads(line)["type"] == event.type


@pytest.mark.parametrize(
    "data",
    [
        {},
        [],
        {"type": "gone"},
        {"type": "done"},
        {"type": "step", "gen": "1", "result": {}},
        {"type": "step", "gen": 1},
        {"type": "stats", "fds": 1},
        {"type": "nope"},
    ],
    ids=repr,
)
def test_an_event_line_that_is_none_of_them_is_malformed(data):
    with pytest.raises(messages.Malformed):
        messages.event_from_json(data)


def test_the_judge_frames_come_back_as_they_were_sent():
    request = messages.JudgeRequest(7, "lm3-l3", "single-head", "def f(): pass\n")
    assert messages.JudgeRequest.from_json(json.loads(json.dumps(request.to_json()))) == request
    reply = messages.JudgeReply(7, EVENTS[-1].result)
    assert messages.JudgeReply.from_json(json.loads(json.dumps(reply.to_json()))) == reply


def test_a_mask_size_mismatch_and_a_missing_numpy_get_their_likely_mistake():
    from tutor.engine.protocol import LearnerFailure, learner_failure_message
    from tutor.model.results import Failure, Frame

    def failure(detail, code):
        return LearnerFailure(Failure("RuntimeError", detail, [Frame(33, "forward", code)]))

    size = (
        "The size of tensor a (16) must match the size of tensor b (6) at non-singleton dimension 3"
    )
    key, params = learner_failure_message(
        failure(size, 'scores = scores.masked_fill(self.mask, float("-inf"))'), "f"
    )
    assert key == "failure.mask_size" and params["line"] == 33
    assert learner_failure_message(failure(size, "y = a + b"), "f")[0] == "failure.exception"
    assert (
        learner_failure_message(failure("Numpy is not available", "return w.numpy()"), "f")[0]
        == "failure.no_numpy"
    )


# ------------------------------------------------------------------ UI → worker requests

REQUESTS = [
    messages.Run(1, "lm3-l3", "attention.py", "x = 1\n"),
    messages.Run(2, "lm3-l3", "a.py", "", ["single-head"], 1.5, {"s": {"n": 2}}, True, False),
    messages.Go(),
    messages.Ping(),
    messages.StatsRequest(),
    messages.Quit(),
]


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: type(r).__name__)
def test_a_request_comes_back_as_it_was_sent(request_):
    line = json.dumps(request_.to_json())
    assert messages.request_from_json(json.loads(line)) == request_
    assert json.loads(line)["type"] == request_.type


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"type": "run", "gen": 1}, "missing fields ['filename', 'lesson', 'source']"),
        ({"type": "run", "gen": "1", "lesson": "l", "filename": "f", "source": ""}, "run.gen"),
        ({"type": "run", "gen": 1, "lesson": "l", "filename": "f", "source": 3}, "run.source"),
        (
            {"type": "run", "gen": 1, "lesson": "l", "filename": "f", "source": "", "steps": "a"},
            "run.steps",
        ),
        (
            {"type": "run", "gen": 1, "lesson": "l", "filename": "f", "source": "", "keep": 1},
            "run.keep",
        ),
        ({"type": "ping", "gen": 1}, "unknown fields ['gen']"),
        ({"type": "launch"}, "unknown message type 'launch'"),
        ({"gen": 1}, "unknown message type None"),
        ([], "a message is a JSON object"),
    ],
    ids=repr,
)
def test_a_request_that_is_none_of_them_is_a_clear_protocol_error(data, said):
    with pytest.raises(messages.Malformed) as caught:
        messages.request_from_json(data)
    assert said in str(caught.value)


def test_the_ready_event_carries_the_protocol_version():
    from tutor.engine.wire import PROTOCOL_VERSION

    assert messages.Ready(1, [], PROTOCOL_VERSION).to_json()["protocol"] == PROTOCOL_VERSION
    # A worker from before versions says none: read as 0, which no client speaks.
    assert messages.event_from_json({"type": "ready", "pid": 1, "off": []}).protocol == 0
