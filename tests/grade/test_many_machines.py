"""Many machines (issue #29, part 4): N shard processes graded side by side, merged, give exactly
what one run gives (every output, similarity.json included); docs/many-machines.md's Slurm,
Kubernetes and GitHub Actions examples shard and merge that way."""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from class_kit import plan, write_class  # noqa: E402
from similar_kit import independent, near_copy  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), LANG="C.UTF-8")
DOC = (ROOT / "docs" / "many-machines.md").read_text(encoding="utf-8")
N = 3


def _grade(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tutor", "grade", *args, "--timeout", "15", "--jobs", "1"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _untimed(path: Path) -> dict:
    r = json.loads(path.read_text(encoding="utf-8"))
    r.pop("seconds"), r.pop("ms")
    return r


def test_shards_side_by_side_merge_to_the_single_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths, as a batch job gives them
    cls = write_class(Path("class"), plan(12), layout="files")
    for i in range(4):  # similar submissions across shards: similarity.json must agree too
        (cls / f"v{i}_lm3_l3.py").write_text(independent(300 + i), encoding="utf-8")
    (cls / "w_lm3_l3.py").write_text(near_copy(independent(301), 5), encoding="utf-8")
    shards = [
        _grade("class", "--shard", f"{k}/{N}", "--out", f"shard-{k}") for k in range(1, N + 1)
    ]
    single = _grade("class", "--out", "one")
    for proc in [*shards, single]:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
    counts = [len(list(Path(f"shard-{k}/students").glob("*.json"))) for k in range(1, N + 1)]
    assert all(counts) and sum(counts) == 17
    merge = subprocess.run(
        [
            sys.executable,
            "-m",
            "tutor",
            "grade",
            "--merge",
            *(f"shard-{k}" for k in range(1, N + 1)),
        ]
        + ["--out", "merged"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert merge.returncode == 0, merge.stderr
    assert json.loads(Path("one/similarity.json").read_text())[
        "groups"
    ]  # there is something to agree on
    for name in ("grades.csv", "report.md", "report.html", "similarity.json", "junit.xml"):
        one, merged = (Path(d, name).read_text(encoding="utf-8") for d in ("one", "merged"))
        if name == "junit.xml":  # its times are the runs' own
            one, merged = (re.sub(r'time="[\d.]+"', "", x) for x in (one, merged))
        assert merged == one, (
            name,
            "\n".join(difflib.unified_diff(one.splitlines(), merged.splitlines(), lineterm="")),
        )
    for path in sorted(Path("one/students").glob("*.json")):
        assert _untimed(Path("merged/students") / path.name) == _untimed(path)


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


def test_the_slurm_example_is_an_array_of_shards_then_a_merge():
    scripts = _blocks("bash")
    grade, merge = scripts[0], scripts[1]
    for script in scripts:
        assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    array = re.search(r"#SBATCH --array=1-(\d+)", grade)
    assert array and f"N={array.group(1)}" in grade
    assert '--shard "${SLURM_ARRAY_TASK_ID}/${N}"' in grade and "--merge grades/shard-*" in merge
    assert "--dependency=afterok" in scripts[2]


def test_the_kubernetes_and_github_examples_shard_and_merge():
    yaml = pytest.importorskip("yaml")
    job, merge_job, workflow = (yaml.safe_load(b) for b in _blocks("yaml"))
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == 8
    args = " ".join(spec["template"]["spec"]["containers"][0]["args"])
    assert '--shard "$((JOB_COMPLETION_INDEX + 1))/8"' in args
    assert "--merge grades/shard-*" in " ".join(
        merge_job["spec"]["template"]["spec"]["containers"][0]["command"]
    )
    shards = workflow["jobs"]["grade"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    runs = " ".join(s.get("run", "") for s in workflow["jobs"]["grade"]["steps"])
    assert f"--shard ${{{{ matrix.shard }}}}/{len(shards)}" in runs
    assert workflow["jobs"]["merge"]["needs"] == "grade"
    assert any(
        "--merge grades/shard-*" in s.get("run", "") for s in workflow["jobs"]["merge"]["steps"]
    )
    pips = re.findall(r"run: pip install[^\n]*", DOC)
    assert len(pips) == 2
    for run in pips:
        assert run.index("torch==2.13.0") < run.index("attn-tutor"), run
