"""The progress store against real files and real processes."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tutor.store import Store, fresh_state

ROOT = Path(__file__).resolve().parents[2]


def _set_step(lesson: str, step: str, status: str):
    def fn(state: dict) -> None:
        entry = state["lessons"].setdefault(lesson, {"step": step, "status": {}, "hints": {}})
        entry["status"][step] = status
        entry["step"] = step

    return fn


def test_fresh_workspace_loads_defaults(tmp_path: Path):
    store = Store(tmp_path / "attn-lab")
    assert store.load() == fresh_state()
    assert store.notice is None


def test_round_trip(tmp_path: Path):
    ws = tmp_path / "attn-lab"
    store = Store(ws)

    def fn(state: dict) -> None:
        state["lang"] = "zh"
        state["lesson"] = "lm3-l3"
        state["lessons"]["lm3-l3"] = {"step": "scores", "status": {"scores": "pass"}, "hints": {"mask": 2}}

    returned = Store(ws).update(fn)
    loaded = Store(ws).load()
    assert loaded == returned
    assert loaded["lang"] == "zh" and loaded["lessons"]["lm3-l3"]["hints"] == {"mask": 2}
    assert json.loads((ws / ".attn-tutor" / "state.json").read_text("utf-8"))["version"] == 1
    store.update(_set_step("lm3-l3", "mask", "fail"))
    assert store.load()["lessons"]["lm3-l3"]["status"] == {"scores": "pass", "mask": "fail"}


def test_peek_reads_without_touching_anything(tmp_path: Path):
    ws = tmp_path / "attn-lab"
    assert Store(ws).peek() == fresh_state() and not ws.exists()  # no folder made
    Store(ws).update(lambda state: state.update(lang="zh"))
    assert Store(ws).peek()["lang"] == "zh"
    state_file = ws / ".attn-tutor" / "state.json"
    state_file.write_bytes(b"{broken")
    store = Store(ws)
    assert store.peek() == fresh_state() and store.notice is None
    assert state_file.read_bytes() == b"{broken"  # left for load() to move aside and report


def test_failing_update_writes_nothing(tmp_path: Path):
    store = Store(tmp_path)
    store.update(_set_step("a", "s1", "pass"))

    def boom(state: dict) -> None:
        state["lang"] = "en"
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        store.update(boom)
    assert store.load()["lang"] is None


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"lessons": 3}', b""])
def test_corrupt_file_is_moved_aside(tmp_path: Path, content: bytes):
    store = Store(tmp_path)
    state_file = tmp_path / ".attn-tutor" / "state.json"
    state_file.parent.mkdir()
    state_file.write_bytes(content)
    assert store.load() == fresh_state()
    assert store.notice is not None and store.notice.key == "store.corrupt"
    moved = Path(store.notice.params["path"])
    assert moved.name.startswith("state.json.corrupt-") and moved.read_bytes() == content
    assert not state_file.exists()
    # and the next save starts a good file
    store.update(_set_step("a", "s1", "pass"))
    assert Store(tmp_path).load()["lessons"]["a"]["status"] == {"s1": "pass"}


def test_two_corrupt_files_in_one_second_both_kept(tmp_path: Path):
    state_file = tmp_path / ".attn-tutor" / "state.json"
    state_file.parent.mkdir()
    moved = set()
    for content in (b"{bad 1", b"{bad 2"):
        state_file.write_bytes(content)
        store = Store(tmp_path)
        store.load()
        moved.add(store.notice.params["path"])
    assert len(moved) == 2
    assert sorted(Path(p).read_bytes() for p in moved) == [b"{bad 1", b"{bad 2"]


def test_folder_in_place_of_the_state_file(tmp_path: Path):
    state_file = tmp_path / ".attn-tutor" / "state.json"
    state_file.mkdir(parents=True)
    (state_file / "inside.txt").write_text("keep me")
    store = Store(tmp_path)
    assert store.load() == fresh_state()
    moved = Path(store.notice.params["path"])
    assert (moved / "inside.txt").read_text() == "keep me"
    store.update(_set_step("a", "s1", "pass"))
    assert Store(tmp_path).load()["lessons"]["a"]["step"] == "s1"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file anyway")
def test_unreadable_file(tmp_path: Path):
    state_file = tmp_path / ".attn-tutor" / "state.json"
    state_file.parent.mkdir()
    state_file.write_text("{}")
    state_file.chmod(0)
    store = Store(tmp_path)
    assert store.load() == fresh_state()
    assert store.notice.key == "store.corrupt"


def _hammer(workspace: str, who: str, n: int) -> None:
    store = Store(Path(workspace))
    for i in range(n):
        store.update(_set_step("lm3-l3", f"{who}-{i}", "pass"))


def test_two_processes_lose_nothing(tmp_path: Path):
    ctx = multiprocessing.get_context("spawn")  # the test process may have threads: no fork
    procs = [ctx.Process(target=_hammer, args=(str(tmp_path), who, 100)) for who in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    status = Store(tmp_path).load()["lessons"]["lm3-l3"]["status"]
    assert len(status) == 200
    assert set(status) == {f"{w}-{i}" for w in "ab" for i in range(100)}


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from tutor.store import Store
    store = Store(Path(sys.argv[1]))
    big = "x" * 200_000  # large writes widen the window a kill can land in
    i = 0
    def fn(state):
        state["lessons"]["l"] = {"step": str(i), "status": {"pad": big}, "hints": {}}
    while True:
        i += 1
        store.update(fn)
        if i == 1:
            print("ready", flush=True)
    """
)


def test_kill_during_writes_leaves_valid_json(tmp_path: Path):
    Store(tmp_path).update(_set_step("first", "s", "pass"))
    state_file = tmp_path / ".attn-tutor" / "state.json"
    rng = random.Random(1234)
    for _ in range(20):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        try:
            assert child.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0, 0.05))
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
            child.stdout.close()
        assert child.returncode == -signal.SIGKILL
        state = json.loads(state_file.read_text("utf-8"))  # valid, complete JSON
        assert state["lessons"]["first"]["status"] == {"s": "pass"}
        store = Store(tmp_path)
        assert store.load()["lessons"]["l"]["status"]["pad"] == "x" * 200_000
        assert store.notice is None
    assert not list(state_file.parent.glob("state.json.corrupt-*"))
    Store(tmp_path).update(_set_step("first", "t", "pass"))  # cleans temp files of killed writers
    assert sorted(p.name for p in state_file.parent.iterdir()) == ["state.json", "state.lock"]


def test_answers_round_trip(tmp_path: Path):
    store = Store(tmp_path / "attn-lab")
    questions = ["Why divide by sqrt(d)?", "What does the mask do?\nSecond line.", "Unanswered?"]
    answers = {
        0: "Keeps the softmax from saturating.\n\n## Not a heading of ours\n- a list",
        1: "Blocks the future.\n",  # a trailing newline survives
    }
    path = store.write_answers("lm3-l3", answers, questions)
    assert path == tmp_path / "attn-lab" / "lm3-l3-answers.md"
    text = path.read_text("utf-8")
    assert "> What does the mask do?\n> Second line." in text and "## Question 3" in text
    assert store.read_answers("lm3-l3") == answers
    # rewriting replaces the file as a whole
    store.write_answers("lm3-l3", {2: "中文回答"}, questions)
    assert Store(tmp_path / "attn-lab").read_answers("lm3-l3") == {2: "中文回答"}


def test_answers_edited_by_hand_with_crlf(tmp_path: Path):
    store = Store(tmp_path)
    path = store.write_answers("l", {0: "one"}, ["Q?"])
    path.write_bytes(path.read_bytes().replace(b"one", b"one, edited").replace(b"\n", b"\r\n"))
    assert store.read_answers("l") == {0: "one, edited"}


def test_answers_missing_file_and_bad_id(tmp_path: Path):
    store = Store(tmp_path)
    assert store.read_answers("nothing-yet") == {}
    with pytest.raises(ValueError):
        store.write_answers("../escape", {0: "x"}, ["q"])
