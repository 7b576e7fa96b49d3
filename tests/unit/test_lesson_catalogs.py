"""Each lesson's own messages: kept in its folder, put under its id, and found by the checks' keys."""

from __future__ import annotations

import shutil

import pytest

from tutor.model import lesson as lesson_mod
from tutor.model.lesson import all_lessons, get_lesson, lessons_in
from tutor.text import i18n
from tutor.text.i18n import LANGS, engine_catalog, local_key, qualify, t


@pytest.mark.parametrize("lesson", all_lessons(), ids=lambda each: each.id)
def test_a_lessons_messages_are_under_its_id_and_not_in_the_engines(lesson):
    own = lesson.message_keys()
    assert own, f"{lesson.id} has no messages.en.toml / messages.zh.toml"
    for lang in LANGS:
        assert set(lesson.messages(lang)) == own  # both languages, key for key
        for key in own:
            assert f"{lesson.id}.{key}" in i18n.catalog(lang)
            assert t(f"{lesson.id}.{key}", lang) != f"{lesson.id}.{key}"
    # A key is the engine's or a lesson's, never both: a lesson's text could otherwise hide the
    # engine's. But for words (word.X): a lesson's is meant to stand for the engine's.
    both = {key for key in own & set(engine_catalog("en")) if not key.startswith("word.")}
    assert not both, sorted(both)
    assert {key for key in own if key.startswith("word.")} <= set(engine_catalog("en"))


def test_a_words_placeholder_is_the_lessons_word_else_the_engines():
    """{word_state}: the judge puts in the lesson's own word (kv-cache: "cache"); rendered
    without one, the engine's ("state"); a word the checks passed themselves stays theirs."""
    own = get_lesson("kv-cache").message_keys()
    assert "word.state" in own
    message = {"key": "check.steps_growth", "params": {"n": 2, "likely": {}}}
    nested = {
        "key": "check.raised",
        "params": {"likely": {"key": "likely.state_twice", "params": {}}},
    }
    qualify([message, nested], "kv-cache", own)
    assert message["params"]["word_state"] == {"key": "kv-cache.word.state", "params": {}}
    inner = nested["params"]["likely"]
    assert inner["params"] == {"word_state": {"key": "kv-cache.word.state", "params": {}}}
    assert "word_state" not in nested["params"]  # check.raised asks for no word
    for lang, word in (("en", "cache"), ("zh", "缓存")):
        assert word in t(inner["key"], lang, **inner["params"])
    for lang, word in (("en", "the state grows"), ("zh", "状态每步")):
        assert word in t("likely.state_twice", lang)  # no lesson word: the engine's
    theirs = {"key": "likely.state_twice", "params": {"word_state": "buffer"}}
    qualify(theirs, "kv-cache", own)
    assert "the buffer grows" in t(theirs["key"], "en", **theirs["params"])
    lm3 = {"key": "likely.state_twice", "params": {}}
    qualify(lm3, "lm3-l3", get_lesson("lm3-l3").message_keys())
    assert lm3["params"] == {}  # a lesson with no word of its own: nothing put in


def test_qualify_prefixes_only_the_lessons_own_keys_at_any_depth():
    own = frozenset({"likely.mine", "check.mine"})
    value = {
        "likely": {
            "key": "likely.mine",
            "params": {"reason": {"key": "check.raised", "params": {}}},
        },
        "items": [{"kind": "note", "text": {"key": "check.mine", "params": {"n": 1}}}, [0.5, None]],
    }
    qualify(value, "les-1", own)
    assert value["likely"]["key"] == "les-1.likely.mine"
    assert value["likely"]["params"]["reason"]["key"] == "check.raised"  # the engine's stays
    assert value["items"][0]["text"]["key"] == "les-1.check.mine"
    assert (
        local_key("lm3-l3.likely.leak") == "likely.leak"
        and local_key("check.raised") == "check.raised"
    )


def test_a_verdict_carries_the_lessons_keys_under_its_id(tmp_path):
    from tutor.engine import codec
    from tutor.engine import protocol as messages
    from tutor.engine.checks_loader import load_checks
    from tutor.engine.judge import Judge

    lessons = {lesson.id: lesson for lesson in all_lessons()}
    judge = Judge(
        load_checks(lessons.values()),
        {lid: lesson.message_keys() for lid, lesson in lessons.items()},
    )
    # The shapes step given a wrong shape for every stage: the engine's check.shapes_value, with
    # lm3-l3's own likely.shape_stage for the first stage.
    stages = "projected_q q_split_into_heads q_per_head scores weights context_per_head"
    shapes = {name: (1,) for name in [*stages.split(), "context_merged"]}
    tree, blob = codec.encode({"calls": [{"value": shapes}] * 3})
    report = messages.Outputs(tree, []).to_json()
    result = judge.verdict("lm3-l3", "shapes", codec.pack_payload(report, blob), "")
    found = [c.message for c in result.checks if c.message]
    keys = [m.key for m in found] + [
        m.params["likely"]["key"] for m in found if isinstance(m.params.get("likely"), dict)
    ]
    assert keys and all(k.startswith("lm3-l3.") or k in engine_catalog("en") for k in keys), keys
    assert any(k.startswith("lm3-l3.") for k in keys), keys


def test_a_course_folder_of_lessons_is_loaded_beside_the_built_in_ones(tmp_path, monkeypatch):
    course = tmp_path / "course"
    copy = course / "my-copy"
    shutil.copytree(lesson_mod.get_lesson("lab-02").folder, copy)
    toml_path = copy / "lesson.toml"
    toml_path.write_text(
        toml_path.read_text(encoding="utf-8").replace('id = "lab-02"', 'id = "my-copy"'),
        encoding="utf-8",
    )
    monkeypatch.setenv(lesson_mod.LESSONS_ENV, str(course))
    lesson_mod.all_lessons.cache_clear()
    i18n.catalog.cache_clear()
    try:
        ids = [lesson.id for lesson in all_lessons()]
        assert ids[:2] == ["lm3-l3", "lab-02"] and "my-copy" in ids
        assert [each.id for each in lessons_in(copy)] == [
            "my-copy"
        ]  # a lesson's own folder works too
        key = next(iter(lesson_mod.get_lesson("my-copy").message_keys()))
        assert t(f"my-copy.{key}", "zh") == t(f"lab-02.{key}", "zh")
    finally:
        monkeypatch.delenv(lesson_mod.LESSONS_ENV)
        lesson_mod.all_lessons.cache_clear()
        i18n.catalog.cache_clear()


@pytest.mark.parametrize(
    "lesson",
    [each for each in all_lessons() if each.id in ("lm3-l3", "lab-02")],
    ids=lambda each: each.id,
)
def test_each_checked_step_has_its_own_fallback_likely_mistake(lesson):
    own = lesson.message_keys()
    for step in lesson.steps:
        if step.kind == "checked":
            assert f"fallback.{step.id}" in own, (
                f"{lesson.id}: step {step.id} has no fallback.{step.id}"
            )
    # Only the steps that draw the learner's weights send the learner to them (`w`).
    for lang in LANGS:
        for step in ("shapes", "leakage"):
            assert "`w`" not in t(f"lm3-l3.fallback.{step}", lang)
        for step in ("scores", "mask", "weights"):
            assert "`w`" not in t(f"lab-02.fallback.{step}", lang)


def test_the_judge_puts_the_steps_fallback_for_an_unknown_mistake():
    from tutor.engine.judge import _step_fallback

    params = {
        "what": "weights",
        "likely": {"key": "likely.unknown", "params": {}},
        "reason": {
            "key": "check.raised",
            "params": {"likely": {"key": "likely.unknown", "params": {}}},
        },
    }
    _step_fallback(params, "fallback.mask")
    assert params["likely"]["key"] == "fallback.mask"
    assert params["reason"]["params"]["likely"]["key"] == "fallback.mask"
    assert params["reason"]["key"] == "check.raised"
