"""Fuzz of the child → worker → judge channel: whatever a child writes, nothing raises out of
the code that reads it (issue 23, class 1).

A child runs learner code, so every byte it sends may be forged: the result frame and what
comes before it (a fault-handler dump), the payload's JSON and blob, the messages inside.
Fed here, with a fixed seed and a bounded count: random bytes, truncated and oversized
frames, real payloads (the reference's, made in this process as a child makes them) cut and
flipped, their trees with nodes replaced by crafted values, and crafted dumps. The reader,
dumped_frames, the judge and the rendering of its verdicts in both languages must answer,
never raise.
"""

from __future__ import annotations

import copy
import json
import random
import struct

import pytest

from tutor.engine import checks_loader, codec
from tutor.engine import protocol as messages
from tutor.engine.stack_dumps import dumped_frames
from tutor.model.lesson import all_lessons
from tutor.model.results import StepResult
from tutor.text import i18n

SEED = 23
LESSON = "lm3-l3"

# Values a forged tree puts where the encoder's own would be.
CRAFTED = [
    None,
    True,
    -1,
    1 << 40,
    10**300,
    float("nan"),
    float("inf"),
    "",
    "x" * 100_000,
    "likely.{0}",
    "{fn.__class__}",
    "{0:>999999999}",
    "\x1b]52;c;aGk=\x07",
    [],
    {},
    json.loads("[" * 20 + "]" * 20),
    {"key": "likely.{0}", "params": {"x": "{0}"}},
    {"key": "check.raised", "params": {"line": 10**200, "detail": {"key": "{}"}}},
    {"key": ["not", "a", "key"], "params": 3},
    {"__tensor__": -8, "dtype": "float32", "shape": [2, 2]},
    {"__tensor__": 0, "dtype": "float32", "shape": [1 << 62, 1 << 62]},
    {"__tensor__": 0, "dtype": "float32", "shape": [-1, 4]},
    {"__tensor__": 0, "dtype": "complex128", "shape": [1]},
    {"__tensor__": "0", "dtype": "float32", "shape": ["9" * 5000]},
    {"__tensor__": 3, "dtype": "float64", "shape": [1]},
    {"__seq__": "torch.Size", "items": [1 << 70]},
    {"__seq__": "tuple", "items": 5},
    {"__dict__": [[{"__seq__": "list", "items": []}, 1], [1]]},
    {"__dict__": 7},
    {"__opaque__": {"x": 1}, "shape": "big"},
    {"error": {"kind": {"k": 1}, "detail": None, "frames": [{"line": "9" * 5000}]}},
    {"error": {"kind": "E", "detail": {"key": "likely.{0}", "params": {}}, "frames": []}},
]


def _deep(n: int):
    value: object = 0
    for _ in range(n):
        value = {"__seq__": "list", "items": [value]}
    return value


def _encoded(value):
    """codec.encode's form of plain data (dicts as pairs), without torch."""
    if isinstance(value, dict):
        return {"__dict__": [[k, _encoded(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return {"__seq__": "list", "items": [_encoded(v) for v in value]}
    return value


# A call's result replaced by an error whose texts are message references with format-string
# keys: the probe puts a call's error in the outputs, and the judge quotes its kind and detail.
FORGED_ERRORS = [
    {"kind": "E", "detail": {"key": "likely.{0}", "params": {}}, "frames": []},
    {"kind": {"key": "{fn.__class__}", "params": {"fn": 1}}, "detail": "d", "frames": []},
    {"kind": "E", "detail": "{0}", "frames": [{"line": {"key": "}{", "params": {}}}]},
]


def _calls(tree):
    """Paths of the encoded dicts that are a call's result (they hold a "value")."""
    return [
        path
        for path in _nodes(tree)
        if isinstance(node := _at(tree, path), dict)
        and isinstance(node.get("__dict__"), list)
        and any(isinstance(p, list) and p[:1] == ["value"] for p in node["__dict__"])
    ]


def _at(tree, path):
    for k in path:
        tree = tree[k]
    return tree


def _nodes(tree, path=()):
    yield path
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _nodes(v, (*path, i))


def _replace(tree, path, value):
    if not path:
        return value
    node = tree
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return tree


@pytest.fixture(scope="module")
def judged():
    """A judge as the worker forks it, and each step's real payload from the reference."""
    from tutor.engine import child as sandbox
    from tutor.engine.judge import Judge

    lessons = {lesson.id: lesson for lesson in all_lessons()}
    checks = checks_loader.load_checks(lessons.values())
    lesson = lessons[LESSON]
    source = lesson.reference_path.read_text(encoding="utf-8")
    code = compile(source, lesson.file_name, "exec")
    inputs = checks[LESSON].make_inputs()
    payloads = {}
    for step in [s.id for s in lesson.checked_steps]:
        report, blob = sandbox._run(
            {"source": source, "filename": lesson.file_name}, step, code, checks[LESSON], inputs
        )
        payloads[step] = (report.to_json(), bytes(blob))
    judge = Judge(checks, {lid: x.message_keys() for lid, x in lessons.items()})
    return judge, source, payloads


def _rendered(result: StepResult) -> None:
    """What every output does with a verdict: JSON, and its messages in both languages."""
    assert isinstance(result, StepResult)
    json.dumps(result.to_dict())
    for check in result.checks:
        if check.message is not None:
            for lang in i18n.LANGS:
                assert isinstance(i18n.t(check.message.key, lang, **check.message.params), str)


def test_the_judge_answers_every_payload(judged):
    judge, source, payloads = judged
    rng = random.Random(SEED)
    steps = sorted(payloads)
    cases = forged = 0
    for step in steps:  # the real ones first: the fuzz starts from payloads the judge passes
        head, blob = payloads[step]
        assert judge.verdict(LESSON, step, codec.pack_payload(head, blob), source).status == "pass"
    for i in range(280):
        step = steps[i % len(steps)]
        head, blob = payloads[step]
        kind = i % 7
        if kind == 0:  # random bytes, of random length
            payload = rng.randbytes(rng.choice([0, 1, 3, 4, 7, 64, 4096]))
        elif kind == 1:  # a real payload cut short
            whole = codec.pack_payload(head, blob)
            payload = whole[: rng.randrange(len(whole))]
        elif kind == 2:  # a real payload with bytes flipped (in the JSON, the blob or the length)
            payload = bytearray(codec.pack_payload(head, blob))
            for _ in range(rng.randint(1, 8)):
                payload[rng.randrange(len(payload))] = rng.randrange(256)
            payload = bytes(payload)
        elif kind == 3:  # a length that claims more than there is, or everything
            payload = struct.pack("!I", rng.choice([1 << 31, 0xFFFFFFFF])) + b"{}"
        elif kind == 6 and _calls(head):  # a call's error forged
            forged += 1
            tree = copy.deepcopy(head)
            for path in _calls(tree):
                error = _encoded({"error": rng.choice(FORGED_ERRORS)})
                tree = _replace(tree, path, error)
            payload = codec.pack_payload(tree, blob)
        elif kind in (4, 5):  # nodes replaced by crafted values, or nested deeper than encode nests
            tree = copy.deepcopy(head)
            paths = list(_nodes(tree))
            for _ in range(rng.randint(1, 4)):
                path = rng.choice(paths)
                if kind == 5:
                    value = _deep(rng.choice([20, 900, 3000]))
                else:
                    value = copy.deepcopy(rng.choice(CRAFTED))
                try:
                    tree = _replace(tree, path, value)
                except (KeyError, IndexError, TypeError):
                    continue
                paths = list(_nodes(tree)) if kind != 5 else paths
            try:
                payload = codec.pack_payload(tree, blob)
            except (ValueError, RecursionError):  # json.dumps refuses it: no child could send it
                continue
        else:
            continue
        result = judge.verdict(LESSON, step, payload, source, False)
        _rendered(result)
        cases += 1
    assert cases > 200 and forged > 20


def test_a_result_pipe_carrying_anything_is_read():
    """A child's whole result pipe, as the worker reads it: junk and forged fault-handler
    dumps before (or instead of) the frame, in chunks of any size; the reader takes only the
    job's own frame, and what came before it is read for the learner's frames."""
    rng = random.Random(SEED)
    token = b"t" * 16
    filename = "/course/s001/lm3_l3.py"
    source = "x = 1\n" * 20
    for _ in range(300):
        reader = codec.FrameReader(token)
        payload = rng.randbytes(rng.randrange(2048))
        dump = "\n".join(_dump_line(rng, filename) for _ in range(rng.randrange(1, 30)))
        parts = [rng.randbytes(rng.randrange(512)), dump.encode()]
        roll = rng.random()
        if roll < 0.3:  # the authentic frame, after junk and a half head
            parts += [codec.MAGIC + token[:5], codec.pack_frame(token, payload)]
        elif roll < 0.5:  # a frame that claims more than MAX_RESULT
            parts.append(codec.MAGIC + token + struct.pack("!Q", rng.choice([1 << 63, 1 << 40])))
        elif roll < 0.7:  # another job's token
            parts.append(codec.pack_frame(b"u" * 16, payload))
        else:  # a frame cut short
            frame = codec.pack_frame(token, payload)
            parts.append(frame[: rng.randrange(len(frame))])
        stream = b"".join(parts)
        at = 0
        while at < len(stream):
            n = rng.randint(1, 300)
            reader.feed(stream[at : at + n])
            at += n
        before = reader.before()
        assert isinstance(before, str)
        assert len(reader.prefix) <= codec.MAX_PREFIX
        frames, _ = dumped_frames(before, filename, source)
        assert all(type(f["line"]) is int for f in frames)
        if roll < 0.3:
            assert reader.payload == payload
        else:  # too big, another job's, cut short: never taken as this step's frame
            assert reader.payload is None


def _dump_line(rng: random.Random, filename: str) -> str:
    digits = "".join(rng.choice("0123456789") for _ in range(rng.choice([1, 4, 9, 10, 40])))
    digits = rng.choice([digits, "9" * rng.choice([4301, 5000, 20000]), "-" + digits, ""])
    name = rng.choice([filename, "other.py", "", '"', filename + '", line 1 in x'])
    function = rng.choice(["f", "<module>", "{0}", "likely.{0}", "x" * 10_000, ""])
    return rng.choice(
        [
            f'  File "{name}", line {digits} in {function}',
            f'  File "{name}", line {digits}',
            "Current thread 0x00007f (most recent call first):",
            "Thread 0x1 (most recent call first):",
            "Stack (most recent call first):",
            '  File "/x/tutor/runner/sandbox.py", line 3 in serve_one',
            "  ...",
            "Fatal Python error: Segmentation fault",
            rng.randbytes(rng.randrange(200)).decode("utf-8", "replace"),
            " " * rng.randrange(5000) + "File",
        ]
    )


def test_dumped_frames_reads_any_dump():
    rng = random.Random(SEED)
    filename = "/course/s001/lm3_l3.py"
    source = "\n".join(f"line_{i} = {i}" for i in range(50))
    for _ in range(400):
        dump = "\n".join(_dump_line(rng, filename) for _ in range(rng.randrange(1, 120)))
        frames, runaway = dumped_frames(dump, filename, source)
        assert isinstance(runaway, bool) and len(frames) <= 8
        for frame in frames:
            assert type(frame["line"]) is int and 0 <= frame["line"] < 10**9
            assert isinstance(frame["code"], str) and isinstance(frame["function"], str)
            json.dumps(frame)


def test_a_report_parses_or_is_malformed():
    """messages.report_from_json on any JSON: a Report or Malformed, nothing else."""
    rng = random.Random(SEED)
    shapes = [
        lambda v: {"type": "import_failed", "error": v},
        lambda v: {
            "type": "raised",
            "error": {
                "kind": "E",
                "detail": "d",
                "frames": [{"line": v, "function": "f", "code": ""}],
            },
        },
        lambda v: {"type": "raised", "error": v, "todo": v},
        lambda v: {"type": "missing", "name": v},
        lambda v: {"type": "foreign", "name": v, "origin": v},
        lambda v: {"type": "harness_error", "detail": v},
        lambda v: {"type": "outputs", "tree": v, "kernels": v},
        lambda v: {"type": v},
        lambda v: v,
    ]
    for _ in range(400):
        value = copy.deepcopy(rng.choice(CRAFTED))
        try:
            report = messages.report_from_json(rng.choice(shapes)(value))
        except messages.Malformed:
            continue
        if isinstance(report, (messages.Raised, messages.ImportFailed)):
            for frame in report.error.failure.frames:
                assert frame.line is None or isinstance(frame.line, (int, str))
        if isinstance(report, messages.Outputs):
            assert all(isinstance(k, str) for k in report.kernels)


def test_a_message_renders_whatever_its_data():
    """i18n.t substitutes data as data: keys and values that are format strings, huge numbers,
    nesting without end, keys that are not strings."""
    rng = random.Random(SEED)
    keys = ["likely.{0}", "{", "}", "{0.__class__}", "failure.exception", "check.raised", ""]
    for _ in range(300):
        params = {
            name: copy.deepcopy(rng.choice(CRAFTED))
            for name in rng.sample(["fn", "kind", "line", "detail", "code", "got", "0"], 4)
        }
        if rng.random() < 0.2:
            nested: object = "end"
            for _ in range(rng.choice([50, 2000])):
                nested = {"key": "failure.harness", "params": {"detail": nested}}
            params["detail"] = nested
        for lang in i18n.LANGS:
            text = i18n.t(rng.choice(keys), lang, **params)
            assert isinstance(text, str)
    assert i18n.t("likely.{0}", "en") == "likely.{0}"
    assert "{fn.__class__}" in i18n.t("failure.unreadable", "en", reason="{fn.__class__}")
