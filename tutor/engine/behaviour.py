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
import tempfile
import time
import types
from itertools import product
from pathlib import Path

from tutor.engine import codec, mutant_cache, protocol
from tutor.engine.mutant_cache import MISSING, MutantCache
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
NICE = 10  # a background runner's: the learner's own checks come first
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
        # A mutant that calls a kernel is told by check.kernel, never by behaviour: stopped at
        # once, as the learner's file would be (flex_attention's eager path costs seconds).
        spec = checks.STEPS[step]
        ctx.stop_at_kernel = spec.own_formula is not None
        return spec.probe(ctx, inputs)
    except probe_tools.LearnerRaised as exc:
        return {"kind": exc.failure.get("kind", "?"), "detail": exc.failure.get("detail", "")}
    except BaseException as exc:
        return _failure(exc)


def _serve(fd: int, checks, jobs: list[tuple[str, str, str]], inputs, parent: int, cache) -> None:
    import torch

    from tutor.kit import probe_tools

    torch.set_num_threads(1)
    probe_tools.install_traps()  # as in a child: a mutant's kernel is seen, and stopped at once
    for step, name, source in jobs:
        if os.getppid() != parent:  # the judge is gone: nobody will read these
            return
        try:
            tree, blob = codec.encode(_probe(checks, step, name, source, inputs))
            data = codec.pack_payload({"step": step, "name": name, "tree": tree}, blob)
        except BaseException:
            data = codec.pack_payload({"step": step, "name": name, "tree": None}, bytearray())
        if cache is not None:
            mutant_cache.store(cache.path(step, name, source), data)
        data = struct.pack("!I", len(data)) + data
        while data:
            data = data[os.write(fd, data) :]


def _scratch() -> int:
    """An anonymous file the runner writes its frames to: the judge reads them when it likes,
    and a runner never blocks on a pipe nobody drains."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("attn-tutor-mutants", os.MFD_CLOEXEC)
    f = tempfile.TemporaryFile()  # noqa: SIM115 - the fd outlives the object, on purpose
    fd = os.dup(f.fileno())
    f.close()
    return fd


class Runner:
    """The lesson's mutants run in a process forked from the judge, its outputs read back as
    they come: poll() never waits, wait() waits until a deadline."""

    def __init__(
        self,
        checks,
        jobs: list[tuple[str, str, str]],
        inputs,
        limit: float,
        nice: int,
        cache: MutantCache | None = None,
    ):
        self.jobs = {(step, name) for step, name, _ in jobs}
        self.fd = _scratch()
        self.read_at = 0
        self.buf = bytearray()
        self.finished = False
        self.killed = False  # out of time: what it had not sent was never run
        parent = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the forked runner
            try:
                signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the alarm ends it
                signal.alarm(int(limit) + 1)
                quiet = os.open(os.devnull, os.O_WRONLY)  # a mutant's warnings are nobody's
                os.dup2(quiet, 1)
                os.dup2(quiet, 2)
                sys.stdout = sys.stderr = open(quiet, "w")  # noqa: SIM115 - until _exit
                if nice:
                    os.nice(nice)
                _serve(self.fd, checks, jobs, inputs, parent, cache)
            finally:
                os._exit(0)
        self.deadline = time.monotonic() + limit

    def poll(self) -> dict[tuple[str, str], object]:
        """{(step, name): decoded outputs} of what arrived since the last call."""
        if self.fd < 0:
            return {}
        if not self.finished:
            try:
                pid, _ = os.waitpid(self.pid, os.WNOHANG)
                if pid == 0 and time.monotonic() > self.deadline:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
                    self.killed = True
                    pid = self.pid
            except ChildProcessError:  # reaped already
                pid = self.pid
            self.finished = pid != 0
        while chunk := os.pread(self.fd, 1 << 20, self.read_at):
            self.read_at += len(chunk)
            self.buf += chunk
        out: dict[tuple[str, str], object] = {}
        at = 0
        while at + 4 <= len(self.buf):
            (n,) = struct.unpack_from("!I", self.buf, at)
            if at + 4 + n > len(self.buf):
                break  # still being written
            try:
                head, blob = codec.unpack_payload(bytes(self.buf[at + 4 : at + 4 + n]))
                assert isinstance(head, dict)  # what _serve packs
                tree = None if head["tree"] is None else codec.decode(head["tree"], blob)
                out[(str(head["step"]), str(head["name"]))] = tree
            except (ValueError, TypeError, KeyError, RecursionError, AssertionError):
                pass
            at += 4 + n
        del self.buf[:at]
        if self.finished:
            os.close(self.fd)
            self.fd = -1
        return out

    def wait(self, until: float) -> dict[tuple[str, str], object]:
        out = self.poll()
        pidfd = os.pidfd_open(self.pid) if hasattr(os, "pidfd_open") and not self.finished else -1
        try:
            while not self.finished and (left := until - time.monotonic()) > 0:
                if pidfd >= 0:
                    select.select(
                        [pidfd], [], [], max(0.0, min(left, self.deadline - time.monotonic()))
                    )
                else:
                    time.sleep(min(left, 0.01))
                out |= self.poll()
        finally:
            if pidfd >= 0:
                os.close(pidfd)
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
    """The judge's mutants, per lesson and step: their outputs' leaves and what they are.

    wait=False (the app): a verdict never waits for the mutants; they run in the background,
    one runner at a time, and the saves after they are done get their diagnosis. wait=True
    (`check`, `grade`): the first save that needs them waits, up to RUN_LIMIT."""

    def __init__(self, modules: dict, cache_root: Path | None = None):
        """cache_root: where the mutants' outputs are kept between processes (mutant_cache),
        or None."""
        self.modules = modules
        self.cache_root = cache_root
        self._caches: dict[str, MutantCache] = {}
        self._lessons: dict[str, tuple[str, list[Mistake], Path]] = {}
        self._leaves: dict[tuple[str, str, str], dict] = {}  # (lesson, step, name) -> leaves
        self._differs: dict[tuple[str, str, str], frozenset[str]] = {}  # vs the reference
        self._trees: dict[tuple[str, str, str], object] = {}
        self._says: dict[tuple[str, str, str], dict | None] = {}
        self._deadline = 0.0  # the current explain's, for every batch it runs
        self._running: dict[Runner, str] = {}  # runner -> its lesson
        self._queued: list[tuple[str, list[tuple[str, str, str]], object]] = []  # +inputs
        self._pending: set[tuple[str, str, str]] = set()  # queued or running

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

    def _cache(self, lesson: str, inputs) -> MutantCache | None:
        """The disk cache for this lesson's mutants on these inputs (the judge's, always the
        same ones for a lesson), or None."""
        ref, _, folder = self.lesson(lesson)
        if self.cache_root is None or not ref:
            return None
        if lesson not in self._caches:
            if not self._caches:
                mutant_cache.prune(self.cache_root)
            version = mutant_cache.fingerprint(folder, ref)
            digest = mutant_cache.inputs_digest(inputs)
            self._caches[lesson] = MutantCache(self.cache_root, version, digest)
        return self._caches[lesson]

    def _start(self, lesson: str, jobs: list[tuple[str, str, str]], inputs, wait: bool) -> None:
        limit = self._deadline - time.monotonic() if wait else RUN_LIMIT
        if limit > 0:
            nice = 0 if wait else NICE
            cache = self._caches.get(lesson)
            runner = Runner(self.modules[lesson], jobs, inputs, limit, nice, cache)
            self._running[runner] = lesson
            self._pending |= {(lesson, step, name) for step, name, _ in jobs}

    def collect(self) -> None:
        """Keep what the runners have sent; start the next queued one when none runs."""
        for runner, lesson in list(self._running.items()):
            for (step, name), tree in runner.poll().items():
                self._keep(lesson, step, name, tree)
            if runner.finished:
                del self._running[runner]
                for step, name in runner.jobs:
                    key = (lesson, step, name)
                    self._pending.discard(key)
                    if key not in self._leaves and not runner.killed:
                        self._keep(lesson, step, name, None)  # it ran and sent nothing
        if not self._running and self._queued:
            lesson, jobs, inputs = self._queued.pop(0)
            self._start(lesson, jobs, inputs, wait=False)

    def _keep(self, lesson: str, step: str, name: str, tree: object) -> None:
        key = (lesson, step, name)
        self._trees[key] = tree
        self._leaves[key] = {} if tree is None else closest.leaves(tree)
        self._differs.pop(key, None)

    def _ensure(self, lesson: str, step: str, sources: dict[str, str], inputs, wait: bool) -> bool:
        """Whether every source's outputs are known; the missing ones run (wait: now, and
        waited for until the deadline; else queued behind the runner already running)."""
        self.collect()
        keys = {(lesson, step, n) for n in sources}
        todo = [(step, n, s) for n, s in sources.items() if (lesson, step, n) not in self._leaves]
        if (cache := self._cache(lesson, inputs)) is not None:
            for _, name, source in todo:
                if (tree := cache.load(cache.path(step, name, source))) is not MISSING:
                    self._keep(lesson, step, name, tree)
            todo = [j for j in todo if (lesson, step, j[1]) not in self._leaves]
        if wait:
            while True:  # until all are known, or none of them runs, or the deadline
                self.collect()
                missing = [j for j in todo if (lesson, *j[:2]) not in self._leaves]
                fresh = [j for j in missing if (lesson, *j[:2]) not in self._pending]
                if fresh:  # never run, or left by a runner stopped at its limit
                    self._start(lesson, fresh, inputs, wait=True)
                mine = [
                    r
                    for r, owner in self._running.items()
                    if owner == lesson and any((lesson, *j) in keys for j in r.jobs)
                ]
                if not mine or time.monotonic() >= self._deadline:
                    break
                for runner in mine:
                    for (st, name), tree in runner.wait(self._deadline).items():
                        self._keep(lesson, st, name, tree)
        else:
            fresh = [j for j in todo if (lesson, *j[:2]) not in self._pending]
            if fresh:
                self._queued.append((lesson, fresh, inputs))
                self._pending |= {(lesson, st, n) for st, n, _ in fresh}
                self.collect()
        return keys <= self._leaves.keys()

    def singles(
        self, lesson: str, step: str, inputs, wait: bool = True
    ) -> tuple[dict[str, Mistake], bool]:
        """The step's mistakes (those it must fail) whose outputs are known, each run once and
        kept, and whether that is all of them."""
        ref, mistakes, folder = self.lesson(lesson)
        mine = {m.id: m for m in mistakes if m.expect.get(step) and m.expect[step].status != "pass"}
        sources = {REFERENCE: ref} if ref else {}
        for m in mine.values():
            try:
                sources[m.id] = mistake_source(m, ref, folder)
            except MistakeError:
                pass
        complete = self._ensure(lesson, step, sources, inputs, wait)
        return {i: m for i, m in mine.items() if (lesson, step, i) in self._leaves}, complete

    def says(self, lesson: str, step: str, name: str, mistake: Mistake, inputs, source: str):
        """What a mistake is, as a message: its `diagnosis` in mistakes.toml, else the
        diagnosis the step's judge gives its own outputs, else None: a mistake's id is the
        lesson's, never the learner's words (dev check's run of the mistakes shows a mistake
        that says it is named from behaviour and is not)."""
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
        self._says[key] = said
        return said

    def explain(
        self, lesson: str, step: str, payload: bytes, inputs, source: str, wait: bool = True
    ) -> dict | None:
        """The diagnosis from behaviour of a failing step (a message), or None: also when
        the mutants that could name it have not all run yet (wait=False)."""
        tree = learner_tree(payload)
        if tree is None:
            return None
        self._deadline = time.monotonic() + RUN_LIMIT
        mine, complete = self.singles(lesson, step, inputs, wait)
        if (lesson, step, REFERENCE) not in self._leaves:
            return None
        reference = self._leaves[(lesson, step, REFERENCE)]
        learner = closest.leaves(tree)
        telling = closest.differing(learner, reference)
        if not telling:
            return None
        found = [
            (n, i)
            for i in mine
            if (n := closest.exact(learner, telling, *self._mutant(lesson, step, i)))
        ]
        if found:  # a known mistake computes the same: named, or nothing more is said
            named = [
                (n, i, said)
                for n, i in found
                if (said := self.says(lesson, step, i, mine[i], inputs, source)) is not None
            ]
            if not named:
                return None
            n, _, said = max(named, key=lambda f: (f[0], f[1] in source))
            key = "likely.behaves_as_one" if n == 1 else "likely.behaves_as"
            return {"key": key, "params": {"mistake": said, "n": n}}
        if not complete:  # one still to run may be the one
            return None
        pair, complete = self._pair(lesson, step, mine, learner, reference, inputs, wait)
        if pair is not None:
            (a, b), n = pair
            first = self.says(lesson, step, a, mine[a], inputs, source)
            second = self.says(lesson, step, b, mine[b], inputs, source)
            if first is None or second is None:
                return None
            return {
                "key": "likely.behaves_as_two",
                "params": {"first": first, "second": second, "n": n},
            }
        if not complete:
            return None
        differs = closest.first_difference(learner, reference)
        if differs is None or "count" not in differs:
            return None
        return {"key": "likely.behaviour_differs", "params": differs}

    def _mutant(self, lesson: str, step: str, name: str) -> tuple[dict, frozenset[str]]:
        key = (lesson, step, name)
        if key not in self._differs:
            reference = self._leaves[(lesson, step, REFERENCE)]
            self._differs[key] = closest.differing(self._leaves[key], reference)
        return self._leaves[key], self._differs[key]

    def _pair(self, lesson, step, mine, learner, reference, inputs, wait):
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
        complete = self._ensure(lesson, step, sources, inputs, wait)
        telling = closest.differing(learner, reference)
        for name in sources:
            if (lesson, step, name) not in self._leaves:
                continue
            n = closest.exact(learner, telling, *self._mutant(lesson, step, name))
            if n:
                a, _, b = name.partition("+")
                return ((a, b), n), True
        return None, complete
