"""Finding submissions and naming their students (tutor/grade/collect.py): files on disk, no worker."""

from __future__ import annotations

import pytest

from tutor.grade.collect import (
    CollectError,
    collect,
    guess_lesson,
    in_shard,
    parse_shard,
    shard,
    student_id,
)
from tutor.model.lesson import get_lesson

LM3 = get_lesson("lm3-l3")


@pytest.mark.parametrize(
    "name, expected",
    [
        ("alice.py", "alice"),
        ("alice_lm3_l3.py", "alice"),
        ("alice-lm3-l3.py", "alice"),
        ("lm3_l3_alice.py", "alice"),
        ("lm3-l3 alice.py", "alice"),
        ("Bob.Smith_lm3_l3.py", "Bob.Smith"),
        ("lm3_l3x.py", "lm3_l3x"),  # not the lesson's name followed by a separator: kept whole
    ],
)
def test_a_file_names_its_student(tmp_path, name, expected):
    assert student_id(tmp_path / name, LM3) == expected


def test_the_lessons_own_file_name_takes_the_folders_name(tmp_path):
    folder = tmp_path / "carol"
    folder.mkdir()
    (folder / "lm3_l3.py").write_text("x = 1\n")
    assert student_id(folder / "lm3_l3.py", LM3) == "carol"


def test_a_class_folder_of_folders_and_files(tmp_path):
    for student in ("alice", "bob"):
        (tmp_path / student).mkdir()
        (tmp_path / student / "lm3_l3.py").write_text("x = 1\n")
    (tmp_path / "bob" / "notes.py").write_text("y = 2\n")  # the lesson's file wins over others
    (tmp_path / "dave").mkdir()  # a folder with no file: still a student, with no file
    (tmp_path / "erin").mkdir()
    (tmp_path / "erin" / "attention.py").write_text("x = 1\n")  # the only .py in it
    (tmp_path / "carol_lm3_l3.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("not a submission\n")
    (tmp_path / ".hidden").mkdir()
    subs = collect([tmp_path], LM3)
    assert [(s.student, s.path and s.path.name) for s in subs] == [
        ("alice", "lm3_l3.py"),
        ("bob", "lm3_l3.py"),
        ("carol", "carol_lm3_l3.py"),
        ("dave", None),
        ("erin", "attention.py"),
    ]


def test_two_submissions_of_one_student_are_a_usage_error(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "lm3_l3.py").write_text("x = 1\n")
    (tmp_path / "alice.py").write_text("x = 1\n")
    with pytest.raises(CollectError) as err:
        collect([tmp_path], LM3)
    assert err.value.key == "grade.duplicate_students" and err.value.params["students"] == "alice"


def test_a_path_that_does_not_exist(tmp_path):
    with pytest.raises(CollectError) as err:
        collect([tmp_path / "nope"], LM3)
    assert err.value.key == "grade.no_such_path"


def test_the_lesson_is_guessed_from_names_then_contents(tmp_path):
    (tmp_path / "a_lab_02.py").write_text("x = 1\n")
    assert guess_lesson(collect([tmp_path], None), lambda p, raw: None).id == "lab-02"
    (tmp_path / "a_lab_02.py").unlink()
    (tmp_path / "b.py").write_text("def causal_attention(x):\n    pass\n")
    from tutor.cli.main import _guess_lesson

    assert guess_lesson(collect([tmp_path], None), _guess_lesson).id == "lm3-l3"
    (tmp_path / "c_lab_02.py").write_text("x = 1\n")
    with pytest.raises(CollectError) as err:
        guess_lesson(collect([tmp_path], None), _guess_lesson)
    assert err.value.key == "grade.several_lessons"


@pytest.mark.parametrize(
    "text, ok", [("1/2", (1, 2)), ("3/3", (3, 3)), ("0/2", None), ("3/2", None), ("x", None)]
)
def test_parse_shard(text, ok):
    if ok:
        assert parse_shard(text) == ok
    else:
        with pytest.raises(CollectError):
            parse_shard(text)


def test_shards_split_a_class_exactly_and_stably(tmp_path):
    for i in range(40):
        (tmp_path / f"s{i:02d}.py").write_text("x = 1\n")
    subs = collect([tmp_path], LM3)
    parts = [shard(subs, k, 3) for k in (1, 2, 3)]
    ids = [s.student for part in parts for s in part]
    assert sorted(ids) == [s.student for s in subs] and len(ids) == len(set(ids))
    assert all(parts)  # 40 ids over 3 shards: none empty
    # A student's shard does not depend on who else submitted.
    assert [in_shard(s.student, 2, 3) for s in subs[:10]] == [
        in_shard(s.student, 2, 3) for s in shard(subs[:10], 1, 1)
    ]
