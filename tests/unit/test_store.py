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
from dataclasses import replace
from pathlib import Path

import pytest

from tutor.workspace.store import AnswerSheet, Section, Store, fresh_state, parse_answers

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
        state["lessons"]["lm3-l3"] = {
            "step": "scores",
            "status": {"scores": "pass"},
            "hints": {"mask": 2},
        }

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


def test_an_update_that_changes_nothing_leaves_the_file_alone(tmp_path: Path):
    """The app remembers after every verdict; most change nothing, and each write fsyncs
    twice (slow on NFS): the file is then neither replaced nor touched."""
    store = Store(tmp_path / "attn-lab")
    store.update(_set_step("lm3-l3", "mask", "fail"))
    state_file = tmp_path / "attn-lab" / ".attn-tutor" / "state.json"
    before = state_file.stat()
    returned = store.update(_set_step("lm3-l3", "mask", "fail"))
    after = state_file.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert returned["lessons"]["lm3-l3"]["status"] == {"mask": "fail"}
    store.update(_set_step("lm3-l3", "mask", "pass"))
    assert (
        state_file.stat().st_ino != before.st_ino
    )  # a change is written (a new file renamed over)
    assert store.load()["lessons"]["lm3-l3"]["status"] == {"mask": "pass"}


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


@pytest.mark.slow
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
    from tutor.workspace.store import Store
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


@pytest.mark.slow
def test_kill_during_writes_leaves_valid_json(tmp_path: Path):
    Store(tmp_path).update(_set_step("first", "s", "pass"))
    state_file = tmp_path / ".attn-tutor" / "state.json"
    rng = random.Random(1234)
    for _ in range(20):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
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


QUESTIONS = ["Why divide by sqrt(d)?", "What does the mask do?", "Why several heads?"]


# -- answers: one file per lesson, a section per step with questions -------------------------


def sheet(lesson: str, questions=(), step: str = "q") -> AnswerSheet:
    """An answers file with one step of questions (the app builds these from the lesson)."""
    return AnswerSheet(
        f"{lesson}-answers.md",
        f"{lesson}: answers",
        sections=(Section(step, "Questions", tuple(questions)),),
        legacy_step=step,
    )


def read(store: Store, lesson: str, step: str = "q") -> dict:
    return store.read_answers(sheet(lesson)).get(step, {})


def save(store: Store, lesson: str, index: int, text: str, *, base: str):
    """save_answer on step q; its answers as {index: text}, as one step's are compared below."""
    saved = store.save_answer(sheet(lesson, QUESTIONS), "q", index, text, base=base, both=both)
    return replace(saved, answers=saved.answers.get("q", {}))


def test_answers_round_trip(tmp_path: Path):
    store = Store(tmp_path / "attn-lab")
    questions = ["Why divide by sqrt(d)?", "What does the mask do?\nSecond line.", "Unanswered?"]
    answers = {
        0: "Keeps the softmax from saturating.\n\n## Not a heading of ours\n- a list",
        1: "Blocks the future.\n",  # a trailing newline survives
    }
    path = store.write_answers(sheet("lm3-l3", questions), {"q": answers})
    assert path == tmp_path / "attn-lab" / "lm3-l3-answers.md"
    text = path.read_text("utf-8")
    assert "> What does the mask do?\n> Second line." in text and "### Question 3" in text
    assert read(store, "lm3-l3") == answers
    # rewriting replaces the file as a whole
    store.write_answers(sheet("lm3-l3", questions), {"q": {2: "中文回答"}})
    assert read(Store(tmp_path / "attn-lab"), "lm3-l3") == {2: "中文回答"}


def test_the_answers_file_is_written_in_the_learners_language(tmp_path: Path):
    from tutor.text.i18n import t

    zh = AnswerSheet(
        "lm3-l3-answers.md",
        t("store.answers_title", "zh", lesson="lm3-l3"),
        t("store.answers_note", "zh"),
        (Section("reflect", "思考题", ("遮罩有什么用？", "第二题")),),
        t("store.answers_question", "zh"),
        legacy_step="reflect",
    )
    store = Store(tmp_path / "attn-lab")
    path = store.write_answers(zh, {"reflect": {0: "中文回答"}})
    text = path.read_text("utf-8")
    assert text.startswith("# lm3-l3：") and "第 1 题" in text and "第 2 题" in text
    assert (
        "Question" not in text and "answers between" not in text
    )  # no English left in Chinese mode
    assert store.read_answers(zh) == {"reflect": {0: "中文回答"}}
    saved = store.save_answer(zh, "reflect", 1, "二", base="", both=lambda a, b: a + b)
    assert saved.answers == {
        "reflect": {0: "中文回答", 1: "二"}
    } and "Question" not in saved.path.read_text("utf-8")


def test_answers_edited_by_hand_with_crlf(tmp_path: Path):
    store = Store(tmp_path)
    path = store.write_answers(sheet("l", ["Q?"]), {"q": {0: "one"}})
    path.write_bytes(path.read_bytes().replace(b"one", b"one, edited").replace(b"\n", b"\r\n"))
    assert read(store, "l") == {0: "one, edited"}


def test_answers_missing_file_and_bad_id(tmp_path: Path):
    store = Store(tmp_path)
    assert read(store, "nothing-yet") == {}
    with pytest.raises(ValueError):
        store.write_answers(sheet("../escape", ["q"]), {"q": {0: "x"}})


# -- one answer saved into a file the learner also edits ----------------------------------


def both(theirs: str, mine: str) -> str:
    return f"FILE: {theirs} | APP: {mine}"


def edit_answer(path: Path, index: int, old: str, new: str) -> None:
    """What the learner does in their editor: change the text between one pair of markers."""
    text = path.read_text("utf-8")
    block = f"<!-- answer q {index} -->\n{old}\n<!-- /answer q {index} -->"
    assert block in text
    path.write_text(
        text.replace(block, f"<!-- answer q {index} -->\n{new}\n<!-- /answer q {index} -->"),
        "utf-8",
    )


def test_save_answer_keeps_what_the_file_says_for_the_other_questions(tmp_path: Path):
    store = Store(tmp_path)
    path = store.write_answers(sheet("l", QUESTIONS), {"q": {0: "first"}})
    edit_answer(path, 1, "", "Blocks the future (written in the file).")
    path.write_text(path.read_text("utf-8") + "\nMy own notes, outside the markers.\n", "utf-8")
    before = path.read_text("utf-8")
    saved = save(store, "l", 0, "first, rewritten in the app", base="first")
    assert saved.written and not saved.kept_both
    assert (
        saved.answers
        == read(store, "l")
        == {0: "first, rewritten in the app", 1: "Blocks the future (written in the file)."}
    )
    # Nothing but answer 0's line changed.
    assert path.read_text("utf-8") == before.replace("\nfirst\n", "\nfirst, rewritten in the app\n")


def test_save_answer_when_both_changed_the_same_answer_keeps_both(tmp_path: Path):
    store = Store(tmp_path)
    path = store.write_answers(sheet("l", QUESTIONS), {"q": {0: "start"}})
    edit_answer(path, 0, "start", "changed in the file")
    saved = save(store, "l", 0, "changed in the app", base="start")
    assert saved.kept_both and saved.written
    assert read(store, "l") == {0: "FILE: changed in the file | APP: changed in the app"}


def test_save_answer_unchanged_in_the_app_leaves_the_file_alone(tmp_path: Path):
    store = Store(tmp_path)
    path = store.write_answers(sheet("l", QUESTIONS), {"q": {0: "start"}})
    edit_answer(path, 0, "start", "changed in the file")
    before = path.read_bytes()
    saved = save(store, "l", 0, "start", base="start")
    assert not saved.written and not saved.kept_both
    assert saved.answers == {0: "changed in the file"} and path.read_bytes() == before
    # The same text in both places is no conflict either.
    saved = save(store, "l", 0, "changed in the file", base="start")
    assert not saved.written and not saved.kept_both and path.read_bytes() == before


def test_save_answer_emptied_on_one_side(tmp_path: Path):
    store = Store(tmp_path)
    path = store.write_answers(sheet("l", QUESTIONS), {"q": {0: "start", 1: "two"}})
    edit_answer(path, 0, "start", "")  # cleared in the file, rewritten in the app: the app's
    assert save(store, "l", 0, "new", base="start").answers[0] == "new"
    edit_answer(
        path, 1, "two", "two, edited"
    )  # changed in the file, cleared in the app: the file's
    assert save(store, "l", 1, "", base="two").answers[1] == "two, edited"
    # cleared in the app, the file unchanged: cleared
    assert 0 not in save(store, "l", 0, "", base="new").answers


def test_save_answer_creates_the_file_and_adds_a_deleted_section(tmp_path: Path):
    store = Store(tmp_path / "attn-lab")
    saved = save(store, "l", 1, "two", base="")
    assert saved.path == tmp_path / "attn-lab" / "l-answers.md" and saved.answers == {1: "two"}
    text = saved.path.read_text("utf-8")
    assert "Edit answers between the markers" in text and "### Question 3" in text
    # The learner deleted question 3's section (markers and all), then answers it in the app.
    start, end = (
        text.index("\n### Question 3"),
        text.index("<!-- /answer q 2 -->\n") + len("<!-- /answer q 2 -->\n"),
    )
    saved.path.write_text(text[:start] + text[end:], "utf-8")
    saved = save(store, "l", 2, "three", base="")
    assert saved.answers == {1: "two", 2: "three"}
    assert saved.path.read_text("utf-8").count("### Question 3") == 1


def test_save_answer_keeps_crlf_and_bytes_that_are_not_utf8(tmp_path: Path):
    store = Store(tmp_path)
    path = store.write_answers(sheet("l", QUESTIONS), {"q": {0: "one"}})
    raw = path.read_bytes().replace(b"\n", b"\r\n").replace(b"> Why several", b"> \xff Why several")
    path.write_bytes(raw)
    save(store, "l", 1, "two\nlines", base="")
    assert path.read_bytes() == raw.replace(
        b"<!-- answer q 1 -->\r\n\r\n", b"<!-- answer q 1 -->\r\ntwo\r\nlines\r\n"
    )
    assert read(store, "l") == {0: "one", 1: "two\nlines"}


def test_save_answer_keeps_the_mode_and_a_symlink(tmp_path: Path):
    store = Store(tmp_path / "ws")
    notes = tmp_path / "notes.md"
    notes.write_text(store.write_answers(sheet("l", QUESTIONS), {"q": {}}).read_text("utf-8"))
    store.answers_path("l-answers.md").unlink()
    store.answers_path("l-answers.md").symlink_to(notes)
    os.chmod(notes, 0o600)
    save(store, "l", 0, "one", base="")
    assert store.answers_path("l-answers.md").is_symlink() and read(store, "l") == {0: "one"}
    assert os.stat(notes).st_mode & 0o777 == 0o600


def test_save_answer_reads_again_if_the_file_changes_before_the_rename(tmp_path: Path, monkeypatch):
    """An editor saves the file between the read and the rename: the rename does not happen,
    the merge starts over from the file as the editor left it."""
    import tutor.workspace.store as store_module

    store = Store(tmp_path)
    path = store.write_answers(sheet("l", QUESTIONS), {"q": {}})
    real = store_module.atomic_write
    calls = []

    def editor_saves_first(target, data, mode=None, still=None):
        if not calls:
            edit_answer(path, 2, "", "three, saved by the editor just now")
        calls.append(target)
        return real(target, data, mode, still)

    monkeypatch.setattr(store_module, "atomic_write", editor_saves_first)
    saved = save(store, "l", 0, "one", base="")
    assert len(calls) == 2 and saved.written
    assert read(store, "l") == {0: "one", 2: "three, saved by the editor just now"}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")) == []


OLD_FORMAT = """# lm3-l3: reflection answers

<!-- Written by attn-tutor. Edit answers between the markers. -->

## Question 1

> Why must the causal mask be applied before the softmax?

<!-- answer 0 -->
Masked scores become exp(-inf) = 0.
<!-- /answer 0 -->

## Question 2

> You double the context length...

<!-- answer 1 -->

<!-- /answer 1 -->

## Question 4

<!-- answer 3 -->
head_dim = 64
<!-- /answer 3 -->
"""


def two_steps() -> AnswerSheet:
    return AnswerSheet(
        "lm3-l3-answers.md",
        "lm3-l3: answers",
        legacy_step="reflect",
        sections=(
            Section("reflect", "Reflection questions", ("Q1?", "Q2?", "Q3?", "Q4?")),
            Section("exercises", "Exercises", ("E1?", "E2?")),
        ),
    )


def test_an_answers_file_in_the_format_from_before_steps_is_read_and_kept(tmp_path: Path):
    """Files written before answers had a section per step (markers without a step id) are
    the first questions step's answers: read as such, and nothing in them lost on a save."""
    store = Store(tmp_path)
    path = store.answers_path(two_steps())
    path.write_text(OLD_FORMAT, "utf-8")
    assert store.read_answers(two_steps()) == {
        "reflect": {0: "Masked scores become exp(-inf) = 0.", 3: "head_dim = 64"}
    }
    # Answer 2 of the same step: its old block is rewritten in place, with the step in its markers.
    store.save_answer(two_steps(), "reflect", 1, "×4 and ×2", base="", both=both)
    # An answer of another step: its own section, added at the end.
    store.save_answer(two_steps(), "exercises", 0, "It collapses.", base="", both=both)
    assert store.read_answers(two_steps()) == {
        "reflect": {0: "Masked scores become exp(-inf) = 0.", 1: "×4 and ×2", 3: "head_dim = 64"},
        "exercises": {0: "It collapses."},
    }
    text = path.read_text("utf-8")
    assert text.startswith(OLD_FORMAT.split("<!-- answer 1 -->")[0])  # the learner's file as it was
    assert "<!-- answer reflect 1 -->\n×4 and ×2\n<!-- /answer reflect 1 -->" in text
    assert "<!-- answer 0 -->" in text and "\n## Exercises\n" in text


def test_answers_of_several_steps_each_in_its_section(tmp_path: Path):
    store = Store(tmp_path)
    store.save_answer(two_steps(), "exercises", 1, "two", base="", both=both)
    store.save_answer(two_steps(), "reflect", 0, "one", base="", both=both)
    store.save_answer(two_steps(), "exercises", 0, "first", base="", both=both)
    text = store.answers_path(two_steps()).read_text("utf-8")
    # A new file has every step's section, in the lesson's order, each question in its place.
    assert (
        text.index("## Reflection questions")
        < text.index("<!-- answer reflect 0 -->")
        < text.index("## Exercises")
        < text.index("<!-- answer exercises 0 -->")
        < text.index("<!-- answer exercises 1 -->")
    )
    assert parse_answers(text, "reflect") == {
        "reflect": {0: "one"},
        "exercises": {0: "first", 1: "two"},
    }


def test_atomic_write_still_false_replaces_nothing(tmp_path: Path):
    from tutor.workspace.store import atomic_write

    path = tmp_path / "f"
    path.write_bytes(b"old")
    assert atomic_write(path, b"new", still=lambda: False) is False
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["f"]
    assert atomic_write(path, b"new", still=lambda: True) is True and path.read_bytes() == b"new"
