"""Diagnosis from behaviour, in the judge: when a step fails and the hand-written diagnosis is
the generic one, the learner's outputs are compared with those of the lesson's own mutants
(its mistakes.toml, each a variant of the reference) on the same inputs, one mistake and then
two at once, and the closest is named; when none computes the same, what differs is said.

The mutants are the lesson's code, never the learner's: each runs once per input set, in a
process forked from the judge (what a mutant does to its memory cannot reach the judge), and
its outputs are kept here. A correct save never comes here.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import sys
import time
import types
from itertools import product
from pathlib import Path

from tutor.engine import codec, protocol
from tutor.kit import closest
from tutor.kit.judge_tools import Stop, Verdict
from tutor.kit.spec import JudgeContext
from tutor.model.mistakes import Mistake, MistakeError, apply_patches, mistake_source
from tutor.model.records import is_generic, record_of
from tutor.model.results import StepResult

# s for all the mutants one failing save runs (the first waits for them), well under the
# worker's JUDGE_LIMIT; a mutant not run in time is never a match.
RUN_LIMIT = 40.0
# When no mistake alone is exact: each of the PAIR_FIRST closest is tried with each of the
# PAIR_WITH closest (a mistake that hides the other's effect is rarely among the very closest).
PAIR_FIRST, PAIR_WITH = 3, 12
REFERENCE = "reference"


def _failure(exc: BaseException) -> dict:
    return {"kind": type(exc).__name__, "detail": str(exc)[:300]}


def _probe(checks, step: str, name: str, source: str, inputs) -> object:
    """A mutant's outputs on the judge's inputs, or the failure it raised (kind, detail)."""
    from tutor.kit import probe_tools

    module = types.ModuleType("learner")
    module.__file__ = name
    sys.modules["learner"] = module  # what a class defined in the file looks itself up by
    try:
        exec(compile(source, name, "exec", dont_inherit=True), module.__dict__)
        ctx = probe_tools.ProbeContext(module, name, source, None)
        ctx.views = False
        return checks.STEPS[step].probe(ctx, inputs)
    except probe_tools.LearnerRaised as exc:
        return {"kind": exc.failure.get("kind", "?"), "detail": exc.failure.get("detail", "")}
    except BaseException as exc:
        return _failure(exc)


def _serve(fd: int, checks, step: str, sources: dict[str, str], inputs) -> None:
    import torch

    torch.set_num_threads(1)
    for name, source in sources.items():
        try:
            tree, blob = codec.encode(_probe(checks, step, name, source, inputs))
            data = codec.pack_payload({"name": name, "tree": tree}, blob)
        except BaseException:
            continue
        data = struct.pack("!I", len(data)) + data
        while data:
            data = data[os.write(fd, data) :]


def run_mutants(
    checks, step: str, sources: dict[str, str], inputs, limit: float = RUN_LIMIT
) -> dict[str, object]:
    """{name: decoded outputs} of each source's probe, run in a process forked from here."""
    if not sources or limit <= 0:
        return {}
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked runner
        try:
            os.close(r)
            signal.alarm(int(limit) + 1)
            _serve(w, checks, step, sources, inputs)
        finally:
            os._exit(0)
    os.close(w)
    buf = bytearray()
    deadline = time.monotonic() + limit
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([r], [], [], left)[0]:
                break
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            buf += chunk
    finally:
        os.close(r)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    out: dict[str, object] = {}
    at = 0
    while at + 4 <= len(buf):
        (n,) = struct.unpack_from("!I", buf, at)
        if at + 4 + n > len(buf):
            break
        try:
            head, blob = codec.unpack_payload(bytes(buf[at + 4 : at + 4 + n]))
            assert isinstance(head, dict)  # what _serve packs
            out[str(head["name"])] = codec.decode(head["tree"], blob)
        except (ValueError, TypeError, KeyError, RecursionError, AssertionError):
            pass
        at += 4 + n
    return out


def learner_tree(payload: bytes) -> object | None:
    """What the learner's code gave, as closest.leaves reads it: the outputs, or what it raised."""
    try:
        child, blob = codec.unpack_payload(payload)
        report = protocol.report_from_json(child)
        if isinstance(report, protocol.Outputs):
            return codec.decode(report.tree, blob)
        if isinstance(report, protocol.Raised) and not report.todo:
            return {"kind": report.error.failure.kind, "detail": report.error.failure.detail}
    except (ValueError, TypeError, RecursionError):
        pass
    return None


def _first_failing(result: StepResult):
    return next((c for c in result.checks if c.status != "pass" and c.message), None)


def wants_behaviour(result: StepResult) -> bool:
    """A failing step whose first failing check names no mistake."""
    check = _first_failing(result)
    if result.status not in ("fail", "error") or check is None:
        return False
    if check.id in ("file-loads", "judge", "implemented", "defined", "own-code"):
        return False
    if check.message.key in ("failure.channel", "failure.harness"):
        return False
    record = record_of(check)
    return (
        record is None
        or not record.diagnosis
        or all(is_generic({"key": d.key, "params": d.params}) for d in record.diagnosis)
    )


class Behaviour:
    """The judge's mutants, per lesson and step: their outputs' leaves and what they are."""

    def __init__(self, modules: dict):
        self.modules = modules
        self._lessons: dict[str, tuple[str, list[Mistake], Path]] = {}
        self._leaves: dict[tuple[str, str, str], dict] = {}  # (lesson, step, name) -> leaves
        self._differs: dict[tuple[str, str, str], frozenset[str]] = {}  # vs the reference
        self._trees: dict[tuple[str, str, str], object] = {}
        self._says: dict[tuple[str, str, str], dict] = {}
        self._deadline = 0.0  # the current explain's, for every batch it runs

    def lesson(self, lesson: str) -> tuple[str, list[Mistake], Path]:
        if lesson not in self._lessons:
            from tutor.model.lesson import load_lesson
            from tutor.model.mistakes import read_mistakes

            folder = Path(self.modules[lesson].__file__).parent
            try:
                ref = load_lesson(folder).reference_path.read_text(encoding="utf-8")
                mistakes = read_mistakes(folder / "mistakes.toml")[0]
            except (OSError, ValueError, KeyError):
                ref, mistakes = "", []
            self._lessons[lesson] = (ref, mistakes, folder)
        return self._lessons[lesson]

    def _ensure(self, lesson: str, step: str, sources: dict[str, str], inputs) -> None:
        todo = {n: s for n, s in sources.items() if (lesson, step, n) not in self._leaves}
        if not todo:
            return
        left = self._deadline - time.monotonic()
        got = run_mutants(self.modules[lesson], step, todo, inputs, left)
        for name in todo:
            tree = got.get(name)
            self._trees[(lesson, step, name)] = tree
            self._leaves[(lesson, step, name)] = {} if tree is None else closest.leaves(tree)
        reference = self._leaves.get((lesson, step, REFERENCE), {})
        for name in todo:
            leaves = self._leaves[(lesson, step, name)]
            self._differs[(lesson, step, name)] = closest.differing(leaves, reference)

    def singles(self, lesson: str, step: str, inputs) -> dict[str, Mistake]:
        """The step's mistakes (those it must fail), their outputs run once and kept."""
        ref, mistakes, folder = self.lesson(lesson)
        mine = {m.id: m for m in mistakes if m.expect.get(step) and m.expect[step].status != "pass"}
        sources = {REFERENCE: ref} if ref else {}
        for m in mine.values():
            try:
                sources[m.id] = mistake_source(m, ref, folder)
            except MistakeError:
                pass
        self._ensure(lesson, step, sources, inputs)
        return {i: m for i, m in mine.items() if (lesson, step, i) in self._leaves}

    def says(self, lesson: str, step: str, name: str, mistake: Mistake, inputs, source: str):
        """What a mistake is, as a message: its `diagnosis` in mistakes.toml, else the
        diagnosis the step's judge gives its own outputs, else its id."""
        key = (lesson, step, name)
        if key in self._says:
            return self._says[key]
        said = None
        if mistake.diagnosis:
            said = {"key": mistake.diagnosis, "params": {}}
        else:
            tree = self._trees.get(key)
            if isinstance(tree, dict) and not set(tree) <= {"kind", "detail"}:
                verdict = Verdict(source)
                try:
                    self.modules[lesson].STEPS[step].judge(
                        verdict, tree, inputs, JudgeContext(source, [], False)
                    )
                except Stop:
                    pass
                except Exception:
                    verdict.checks = []
                check = _first_failing(StepResult(step, "fail", verdict.checks))
                record = record_of(check) if check else None
                for d in record.diagnosis if record else []:
                    if not is_generic({"key": d.key, "params": d.params}):
                        said = {"key": d.key, "params": d.params}
                        break
        said = said or {"key": "likely.behaves_as_id", "params": {"id": name}}
        self._says[key] = said
        return said

    def explain(self, lesson: str, step: str, payload: bytes, inputs, source: str) -> dict | None:
        """The diagnosis from behaviour of a failing step (a message), or None."""
        tree = learner_tree(payload)
        if tree is None:
            return None
        self._deadline = time.monotonic() + RUN_LIMIT
        mine = self.singles(lesson, step, inputs)
        reference = self._leaves.get((lesson, step, REFERENCE), {})
        learner = closest.leaves(tree)
        telling = closest.differing(learner, reference)
        if not telling:
            return None
        found = [
            (n, i)
            for i in mine
            if (n := closest.exact(learner, telling, *self._mutant(lesson, step, i)))
        ]
        if found:
            n, best = max(found, key=lambda f: (f[0], f[1] in source))
            said = self.says(lesson, step, best, mine[best], inputs, source)
            return {"key": "likely.behaves_as", "params": {"mistake": said, "n": n}}
        pair = self._pair(lesson, step, mine, learner, reference, inputs)
        if pair is not None:
            (a, b), n = pair
            first = self.says(lesson, step, a, mine[a], inputs, source)
            second = self.says(lesson, step, b, mine[b], inputs, source)
            return {
                "key": "likely.behaves_as_two",
                "params": {"first": first, "second": second, "n": n},
            }
        differs = closest.first_difference(learner, reference)
        if differs is None or "count" not in differs:
            return None
        return {"key": "likely.behaviour_differs", "params": differs}

    def _mutant(self, lesson: str, step: str, name: str) -> tuple[dict, frozenset[str]]:
        key = (lesson, step, name)
        return self._leaves[key], self._differs[key]

    def _pair(self, lesson, step, mine, learner, reference, inputs):
        """Two of the step's patch mistakes at once whose outputs are the learner's."""
        ref, _, _ = self.lesson(lesson)
        patched = [i for i, m in mine.items() if m.patches and not m.header]
        far = {
            i: closest.distance(learner, self._leaves[(lesson, step, i)], reference)
            for i in patched
        }
        near = sorted((i for i in patched if far[i] < float("inf")), key=far.__getitem__)
        pairs = {tuple(sorted(p)) for p in product(near[:PAIR_FIRST], near[:PAIR_WITH])}
        sources = {}
        for a, b in sorted(p for p in pairs if p[0] != p[1]):
            try:
                both = apply_patches(apply_patches(ref, mine[a].patches), mine[b].patches)
            except MistakeError:
                continue
            sources[f"{a}+{b}"] = both
        self._ensure(lesson, step, sources, inputs)
        telling = closest.differing(learner, reference)
        for name in sources:
            n = closest.exact(learner, telling, *self._mutant(lesson, step, name))
            if n:
                a, _, b = name.partition("+")
                return (a, b), n
        return None
