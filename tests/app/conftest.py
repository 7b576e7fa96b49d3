"""The app under test, fed with verdicts the real engine gave once per session.

No worker runs while the app does: `TutorApp(..., start_worker=False)` and
`app.apply_results(results)`. The results come from `check_source` on the
reference solutions (everything passes) and on a broken lab-02 (the mask filled
with 0.0 instead of -inf), so the screens show real messages, heatmaps, memory
figures and exercise data, and the tests stay fast and deterministic.
"""

from __future__ import annotations

import fcntl
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tutor.model.lesson import all_lessons, get_lesson
from tutor.model.results import StepResult
from tutor.workspace.files import WORKSPACE_DIR
from tutor.workspace.store import Store

ROOT = Path(__file__).resolve().parents[2]
FILES = {lesson.id: lesson.file_name for lesson in all_lessons()}


def _sources() -> dict[str, tuple[str, str, str]]:
    """name -> (lesson id, file name, source)."""
    lab = (ROOT / "reference" / "lab_02.py").read_text(encoding="utf-8")
    broken = lab.replace('float("-inf")', "0.0")
    assert broken != lab, 'the reference lab-02 no longer fills the mask with float("-inf")'
    # Every lesson's reference by its id (a new lesson gets its screens by data), and the broken lab-02.
    return {
        **{
            lesson.id: (
                lesson.id,
                lesson.file_name,
                lesson.reference_path.read_text(encoding="utf-8"),
            )
            for lesson in all_lessons()
        },
        "lab-02-broken": ("lab-02", FILES["lab-02"], broken),
    }


def pin_measured_times(result: StepResult) -> None:
    """A view's bars of measured times (kv-cache's cost step) change from run to run: drawn at
    fixed lengths, so that the screens compare. Measured sizes (lm3-l3's memory) are exact and
    drawn as they come; those tables say "MB", not "ms". The remarks that depend on the
    machine's load (times inverted, the measuring budget run out) go too; a row too big to
    time stays blank, as its remark says."""
    view = result.visuals.get("view") or []

    def note_key(item) -> str:
        text = item.get("text") if item.get("kind") == "note" else None
        return str(text.get("key")) if isinstance(text, dict) else ""

    by_load = ("visual.timing_noisy", "visual.timing_out_of_time")
    view[:] = [item for item in view if not note_key(item).endswith(by_load)]
    too_big = {
        T
        for item in view
        if note_key(item).endswith("timing_too_big")
        for T in map(str, item["text"]["params"]["n"])
    }
    for item in view:
        if item.get("kind") != "table":
            continue
        timed = [
            i for i, c in enumerate(item["columns"]) if isinstance(c, dict) and "_ms" in c["key"]
        ]
        for n, row in enumerate(item["rows"], 1):
            for i in timed:
                if (
                    isinstance(row[i], dict)
                    and row[i].get("kind") == "bar"
                    and row[0] not in too_big
                ):
                    row[i]["top"] = 100.0  # the figures beside the bars are pinned too
                    row[i]["value"] = row[i]["top"] * n / len(item["rows"])
                    if "label" in row[i]:  # the figure beside the bar, pinned with it
                        row[i]["label"] = f"{row[i]['value']:.3g}"


@pytest.fixture(scope="session")
def engine_results(tmp_path_factory, worker_id) -> dict[str, list[StepResult]]:
    """name -> the StepResults of every step (checked and experiments), from the real engine.

    Made once per test run, not once per xdist process: the first process to get here runs
    the engine (four workers, each importing torch) and leaves the results as JSON (the form
    the app gets them in from a worker) for the others, which wait on the lock meanwhile."""
    if worker_id == "master":  # not under xdist
        return _engine_results()
    shared = tmp_path_factory.getbasetemp().parent  # the same for every xdist process
    data = shared / "app-engine-results.json"
    with open(shared / "app-engine-results.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if data.is_file():
            saved = json.loads(data.read_text(encoding="utf-8"))
            return {n: [StepResult.from_dict(r) for r in rs] for n, rs in saved.items()}
        results = _engine_results()
        made = {n: [r.to_dict() for r in rs] for n, rs in results.items()}
        data.write_text(json.dumps(made), encoding="utf-8")
        return results


def _engine_results() -> dict[str, list[StepResult]]:
    from tutor.engine.client import check_source

    sources = _sources()

    def run(item):
        name, (lesson_id, file_name, source) = item
        steps = get_lesson(lesson_id).step_ids()
        # A loaded machine (other suites in parallel) must not turn a reference's slow step
        # into a timeout: the screens are of verdicts, not of time limits.
        return name, check_source(lesson_id, file_name, source, timeout=30, steps=steps)

    with ThreadPoolExecutor(len(sources)) as pool:  # a worker each, at once: ~8 s instead of ~24 s
        results = dict(pool.map(run, sources.items()))
    for name, steps in results.items():
        lesson_id = sources[name][0]
        lesson = get_lesson(lesson_id)
        # Every checked step, and the others that run code (a reflection without a probe has none).
        assert (
            {s.id for s in lesson.checked_steps} <= {r.id for r in steps} <= set(lesson.step_ids())
        ), name
    for steps in results.values():
        for result in steps:
            pin_measured_times(result)
    # Never take screenshots of a broken engine: the references pass everything, and the
    # broken file fails exactly where a 0.0 mask shows.
    for name in FILES:
        bad = {
            r.id: (r.status, r.failure and r.failure.detail)
            for r in results[name]
            if r.status != "pass"
        }
        assert not bad, f"the engine does not pass the reference {name}: {bad}"
    broken = {r.id: r.status for r in results["lab-02-broken"]}
    assert (
        broken["scores"] == broken["mask"] == "pass"
        and broken["weights"] == broken["output"] == "fail"
    ), broken
    return results


@pytest.fixture(scope="session")
def mask_raises_results() -> list[StepResult]:
    """lab-02's reference with causal_mask raising: every step that uses it fails, by the real
    engine. Apart from engine_results: only the tests about it pay for it."""
    from tutor.engine.client import check_source

    lab = (ROOT / "reference" / "lab_02.py").read_text(encoding="utf-8")
    mask = "def causal_mask(seq_len):\n"
    assert mask in lab, "the reference lab-02 no longer defines causal_mask(seq_len)"
    raises = lab.replace(mask, mask + '    raise ValueError("not written yet")\n')
    results = check_source(
        "lab-02", FILES["lab-02"], raises, timeout=30, steps=get_lesson("lab-02").step_ids()
    )
    statuses = {r.id: r.status for r in results}
    assert statuses["mask"] == statuses["heatmap"] == "error", statuses
    return results


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    """A fresh attn-lab/ under a temporary folder that is also the cwd, so the app shows
    `attn-lab/<file>` as it does for a learner.

    The environment is pinned: Rich picks the console's colour system from TERM and
    COLORTERM when the app starts, and the heatmaps draw differently per colour system,
    so without this the screenshots would depend on the terminal pytest runs in."""
    monkeypatch.chdir(tmp_path)
    for var in (
        "LC_ALL",
        "LC_MESSAGES",
        "LANG",
        "NO_COLOR",
        "FORCE_COLOR",
        "TTY_COMPATIBLE",
        "TTY_INTERACTIVE",
        "COLUMNS",
        "LINES",
        "VISUAL",
        "EDITOR",
        "ATTN_TUTOR_TRACE",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLORTERM", "truecolor")
    folder = tmp_path / WORKSPACE_DIR
    folder.mkdir()
    return folder


@pytest.fixture
def make_app(workspace, engine_results):
    """make_app(results_name, step_id=None, lang="en") -> (app, results): a TutorApp on
    the workspace, its file a copy of the source those results are for."""
    from tutor.app.app import TutorApp

    sources = _sources()

    def make(
        name: str = "lm3-l3",
        step_id: str | None = None,
        lang: str = "en",
        store: Store | None = None,
        **kwargs,
    ):
        lesson_id, file_name, source = sources[name]
        lesson = get_lesson(lesson_id)
        path = workspace / file_name
        path.write_text(source, encoding="utf-8")
        app = TutorApp(
            lesson=lesson,
            path=path,
            created=False,
            step_id=step_id or lesson.steps[0].id,
            lang=lang,
            store=store or Store(workspace),
            start_worker=False,
            **kwargs,
        )
        return app, engine_results[name]

    return make
