"""What a child's memory holds (issue #23, class 10): nothing of the reference solutions nor of
the lessons' model answers, whichever way the learner's code looks for them.

In `grade` a student's printed text reaches their Gradescope output: a file that finds a
solution in its own process and prints it would hand it to the class. The learner files here
search where such a file would: the frames above their code (sys._getframe, inspect), what the
collector tracks and what that refers to (strings, code objects' constants), and the raw memory
of the process (/proc/self/maps, then /proc/self/mem or ctypes.string_at), freed blocks included.

A needle is never whole in the searching file: each is split in two halves, and a hit is the
first half followed by the second. Needles are lines of each reference that no starter or
checks file holds, and slices of each model answer, as UTF-8 and as UTF-16 (how CPython keeps
a non-ASCII str in memory).
"""

from __future__ import annotations

import textwrap

import pytest
from reliability_kit import LESSONS, REFERENCE, LiveWorker

from tutor import toml

# The module's worker (or graded class) is made once: its tests run in one xdist process.
pytestmark = pytest.mark.xdist_group("test_child_memory")

SCAN_TIMEOUT = 30.0  # s: a raw scan reads a few hundred MB of the child's memory


def _public_text() -> str:
    """What a child may hold, as every learner has it: each lesson's starter, checks and hints."""
    files = [
        path.read_text(encoding="utf-8")
        for lesson in LESSONS
        for path in (lesson.starter_path, lesson.checks_path)
    ]
    hints = [h for lesson in LESSONS for s in lesson.steps for v in s.hints.values() for h in v]
    return "\n".join(files + hints)


def reference_needles(per_lesson: int = 2) -> list[tuple[str, str]]:
    public = _public_text()
    found = []
    for lesson in LESSONS:
        lines = [line.strip() for line in REFERENCE[lesson.id].splitlines()]
        secret = sorted({line[:48] for line in lines if len(line) >= 28}, key=len, reverse=True)
        secret = [line for line in secret if line not in public]
        assert secret, lesson.id
        found += [(f"reference:{lesson.id}", line) for line in secret[:per_lesson]]
    return found


def test_no_warmup_file_holds_a_line_of_its_reference():
    """Each lesson's warmup.py runs in every spare before the learner's code (sandbox._warm_up),
    so it stays in the child's memory: it must share no line of the reference that the public
    files lack (every such line, shorter ones too, not only the needles searched for below)."""
    public = _public_text()
    for lesson in LESSONS:
        assert lesson.warmup_path.is_file(), lesson.id  # else the starter warms: nothing to see
        warmup = {line.strip() for line in lesson.warmup_path.read_text("utf-8").splitlines()}
        lines = {line.strip() for line in REFERENCE[lesson.id].splitlines()}
        secret = {line for line in lines if len(line) >= 16 and line not in public}
        assert secret, lesson.id
        assert not sorted(secret & warmup), lesson.id
        assert not [line for line in secret if len(line) >= 28 and line in "\n".join(warmup)]


def answer_needles() -> list[tuple[str, str]]:
    found = []
    for lesson in LESSONS:
        data = toml.loads((lesson.folder / "lesson.toml").read_text(encoding="utf-8"))
        for step in data["steps"]:
            for lang, answers in step.get("answers", {}).items():
                for answer in answers[:1]:
                    middle = len(answer) // 2
                    width = 40 if answer.isascii() else 14
                    found.append(
                        (f"answer:{lesson.id}:{step['id']}:{lang}", answer[middle:][:width])
                    )
    assert found
    return found


def halves(needles: list[tuple[str, str]]) -> list[tuple]:
    """(label, str halves, then bytes halves per encoding): the searcher never holds a needle whole."""
    out = []
    for label, text in needles:
        h = len(text) // 2
        encoded = []
        for encoding in ("utf-8",) if text.isascii() else ("utf-8", "utf-16-le"):
            data = text.encode(encoding)
            cut = len(text[:h].encode(encoding))
            encoded.append((data[:cut], data[cut:]))
        out.append((label, text[:h], text[h:], encoded))
    return out


SEARCH = """
import ctypes, gc, inspect, os, sys, types

NEEDLES = {needles!r}
_found = set()


def _has(s, a, b):
    i = s.find(a)
    while i >= 0:
        if s.startswith(b, i + len(a)):
            return True
        i = s.find(a, i + 1)
    return False


def _look_str(s):
    for label, a, b, _ in NEEDLES:
        if label not in _found and _has(s, a, b):
            _found.add(label)


def _walk(obj, depth, seen):
    if depth > 10 or seen.get(id(obj), 99) <= depth:
        return
    seen[id(obj)] = depth
    if isinstance(obj, str):
        _look_str(obj)
    elif isinstance(obj, (bytes, bytearray)):
        for label, _, _, encoded in NEEDLES:
            if label not in _found and any(_has(obj, a, b) for a, b in encoded):
                _found.add(label)
    elif isinstance(obj, types.CodeType):
        for c in obj.co_consts:
            _walk(c, depth + 1, seen)
    elif isinstance(obj, types.ModuleType):
        return
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for o in list(obj)[:4096]:
            _walk(o, depth + 1, seen)
    elif isinstance(obj, dict):
        for k, v in list(obj.items())[:4096]:
            _walk(k, depth + 1, seen)
            _walk(v, depth + 1, seen)
    elif isinstance(obj, types.FunctionType):
        _walk(obj.__code__, depth + 1, seen)
    else:
        try:
            attrs = object.__getattribute__(obj, "__dict__")
        except Exception:
            attrs = None
        if isinstance(attrs, dict):
            _walk(attrs, depth + 1, seen)
        for name in getattr(type(obj), "__slots__", ()) or ():
            try:
                _walk(object.__getattribute__(obj, name), depth + 1, seen)
            except Exception:
                pass


def by_frames():
    seen = dict()
    frame = sys._getframe()
    while frame is not None:
        _walk(dict(frame.f_locals), 0, seen)
        _walk(frame.f_globals, 0, seen)
        _walk(frame.f_code, 0, seen)
        frame = frame.f_back
    for info in inspect.stack(0):
        _walk(dict(info.frame.f_locals), 0, seen)


def by_gc():
    seen = dict()
    for obj in gc.get_objects():
        if isinstance(obj, types.ModuleType):
            continue
        _walk(obj, 1, seen)
        for ref in gc.get_referents(obj):
            if isinstance(ref, (str, bytes, types.CodeType)):
                _walk(ref, 2, seen)


def _regions():
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            path = parts[5] if len(parts) > 5 else ""
            if parts[1].startswith("rw") and (not path or path in ("[heap]", "[stack]")):
                yield lo, hi


def _scan(read):
    # Each needle half by half; a hit is only counted when the second half follows the first.
    for lo, hi in _regions():
        pos = lo
        while pos < hi:
            size = min(hi - pos, 8 << 20)
            try:
                chunk = read(pos, size)
            except (OSError, ValueError):
                break
            if not chunk:
                break
            for label, _, _, encoded in NEEDLES:
                if label not in _found and any(_has(chunk, a, b) for a, b in encoded):
                    _found.add(label)
            pos += max(len(chunk) - 256, 1) if len(chunk) == size and pos + size < hi else len(chunk)


def by_memory():
    try:
        fd = os.open("/proc/self/mem", os.O_RDONLY)
    except OSError:
        fd = None
    if fd is not None:
        try:
            _scan(lambda pos, size: os.pread(fd, size, pos))
        finally:
            os.close(fd)
    else:
        _scan(lambda pos, size: ctypes.string_at(pos, size))


{route}()
print("FOUND", sorted(_found) if _found else "nothing")
"""

ROUTES = ["by_frames", "by_gc", "by_memory"]
# by_gc found nothing in a child before the zygote either (what it reaches the frames reach too):
# it is checked on a process that holds the needles, not asserted on the children.
CHILD_ROUTES = ["by_frames", "by_memory"]


def searcher(route: str) -> str:
    needles = halves(reference_needles() + answer_needles())
    return textwrap.dedent(SEARCH).format(needles=needles, route=route)


def test_the_needles_are_found_where_they_are():
    """The searcher's own check: in a process that holds the reference and the answers, each
    route finds them (else a test below that finds nothing proves nothing)."""
    import subprocess
    import sys

    for route in ROUTES:
        holder = (
            "import tutor.model.lesson as L\n"
            "HELD = [open(l.reference_path).read() for l in L.all_lessons()]\n"
            "ANSWERS = [s.answers for l in L.all_lessons() for s in l.steps]\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", holder + searcher(route)],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
        assert "FOUND [" in out, (route, out)
        labels = out.split("FOUND", 1)[1]
        for lesson in LESSONS:
            assert f"reference:{lesson.id}" in labels, (route, out)
        assert "answer:" in labels, (route, out)


@pytest.fixture(scope="module")
def app_worker():
    lw = LiveWorker(SCAN_TIMEOUT)
    lw.start()
    try:
        yield lw
    finally:
        lw.close()


@pytest.fixture(scope="module")
def grade_worker():
    lw = LiveWorker(SCAN_TIMEOUT, batch=True)
    lw.start()
    try:
        yield lw
    finally:
        lw.close()


def _found_in(worker: LiveWorker, lesson: str, route: str) -> str:
    # A run of the lesson first: the app's spares then warm up on it (runs_for), and a `grade`
    # worker on its first run's lesson.
    starter = next(item for item in LESSONS if item.id == lesson).starter_path.read_text()
    worker.run(lesson, starter, wait=120)
    run = worker.run(lesson, searcher(route), steps=[_first_checked(lesson)], wait=120)
    (result,) = run.results.values()
    assert "FOUND" in result.output, (result.status, result.output[-600:])
    return result.output.split("FOUND", 1)[1].strip()


def _first_checked(lesson: str) -> str:
    return next(item for item in LESSONS if item.id == lesson).checked_steps[0].id


@pytest.mark.parametrize("route", CHILD_ROUTES)
@pytest.mark.parametrize("lesson", ["kv-cache", "lm3-l3"])
def test_an_app_child_holds_no_reference_and_no_answer(app_worker, lesson, route):
    assert _found_in(app_worker, lesson, route) == "nothing"


@pytest.mark.parametrize("route", CHILD_ROUTES)
@pytest.mark.parametrize("lesson", ["kv-cache", "lab-02"])
def test_a_grade_child_holds_no_reference_and_no_answer(grade_worker, lesson, route):
    assert _found_in(grade_worker, lesson, route) == "nothing"


def _other_student(secret: str, lesson: str) -> str:
    """Another student's file: the starter, with text of their own in a comment and a constant."""
    starter = next(item for item in LESSONS if item.id == lesson).starter_path.read_text()
    return f"# {secret}\nNOTE = {secret!r}\n" + starter


@pytest.mark.parametrize("route", CHILD_ROUTES)
def test_a_grade_child_holds_no_other_students_source(grade_worker, route):
    """The worker receives every student's file: the children are forked from a process that
    never held one, so a file finds no other student's text in its memory."""
    import secrets

    lesson = "lm3-l3"
    secret = f"student {secrets.token_hex(12)} wrote this {secrets.token_hex(12)}"
    for _ in range(2):  # one whose child ran, one whose source the worker just had
        grade_worker.run(lesson, _other_student(secret, lesson), wait=120)
    needles = halves([("other-student", secret)])
    search = textwrap.dedent(SEARCH).format(needles=needles, route=route)
    run = grade_worker.run(lesson, search, steps=[_first_checked(lesson)], wait=120)
    (result,) = run.results.values()
    assert "FOUND" in result.output, (result.status, result.output[-600:])
    assert result.output.split("FOUND", 1)[1].strip() == "nothing"
