"""The issue #7 targets as tests. Not part of the default run (pyproject's addopts ignore
tests/benchmarks); run them by naming the file:

    python -m pytest tests/benchmarks/test_bench.py -v -s            # the full benchmark, ~5 min
    ATTN_BENCH_ARGS="--quick" python -m pytest tests/benchmarks/test_bench.py -v -s

The benchmark runs once per session (bench_latency.main); each target is its own test so
a run shows all that are met and missed. Other jobs on the machine move the numbers:
the load is printed with them.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _harness  # noqa: E402
import bench_latency  # noqa: E402

T = bench_latency.TARGETS


@pytest.fixture(scope="session")
def results(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("bench") / "results.json"
    args = shlex.split(os.environ.get("ATTN_BENCH_ARGS", "")) + ["--json", str(out)]
    bench_latency.main(args)
    return json.loads(out.read_text(encoding="utf-8"))


def _load(res: dict) -> str:
    la = res["load"]
    return f"(load average {la['start']['1m']:.2f} → {la['end']['1m']:.2f})"


def test_every_save_got_its_verdicts(results):
    assert not results["problems"], results["problems"]


def test_save_to_verdict_p50(results):
    s = results["save_verdict"]["trace"]
    assert s["p50"] <= T["save_p50_ms"], (
        f"p50 {s['p50']} ms > {T['save_p50_ms']} ms {_load(results)}"
    )


def test_save_to_verdict_p95(results):
    s = results["save_verdict"]["trace"]
    assert s["p95"] <= T["save_p95_ms"], (
        f"p95 {s['p95']} ms > {T['save_p95_ms']} ms {_load(results)}"
    )


def test_far_ahead_of_a_fresh_pytest(results):
    r = results["ratio"]["trace"]
    assert r is not None and r >= T["ratio_min"], (
        f"only {r:.1f}× faster than a cold pytest {_load(results)}"
    )


def test_first_screen(results):
    worst = max(r["first_screen_ms"] for r in results["startup"])
    assert worst <= T["first_screen_ms"], f"first screen after {worst} ms {_load(results)}"


def test_first_verdict(results):
    worst = max(r["first_verdict_ms"] for r in results["startup"])
    assert worst <= T["first_verdict_ms"], f"first verdict after {worst} ms {_load(results)}"


def test_ui_memory(results):
    ui = results["memory"]["peak_mb"]["ui"]
    assert ui <= T["ui_rss_mb"], f"UI peak RSS {ui} MB"


def test_older_verdicts_never_replace_newer(results):
    assert results["burst"]["stale_after_last"] == 0
    assert results["burst"]["last_event_is_last_content"]


@pytest.mark.parametrize(
    "kind, passes",
    [("correct", True), ("no_mask", False), ("mha_no_mask", False), ("shapes_wrong", False)],
)
def test_cold_checks_are_the_notebooks(tmp_path, kind, passes):
    """The cold approach checks what the notebook checks: the reference passes, mistakes fail."""
    (tmp_path / "lm3_l3.py").write_text(_harness.learner_text(kind, "t"), encoding="utf-8")
    test_file = tmp_path / "test_selfchecks_lm3.py"
    test_file.write_text(
        (HERE / "cold_selfchecks_lm3.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file.name],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert (proc.returncode == 0) == passes, proc.stdout[-2000:]
