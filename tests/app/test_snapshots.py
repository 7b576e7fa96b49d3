"""Screenshots of every step of both lessons in both languages, at 80×24, plus a few
extra screens (failures, the weights heatmap, help, NO_COLOR, a larger terminal).

Each app starts at the first step with no verdicts, gets the engine's recorded
verdicts through `apply_results`, and is then driven with the keys a learner uses.
Regenerate with `python -m pytest tests/app --snapshot-update` and look at the
SVGs in tests/app/__snapshots__/ before committing them.
"""

from __future__ import annotations

import pytest

from tutor.model.lesson import all_lessons, get_lesson

CASES = [
    pytest.param(lesson, index, step, lang, id=f"{lesson}-{index + 1}-{step}-{lang}")
    for lesson in [lesson.id for lesson in all_lessons()]  # every lesson, by data
    for index, step in enumerate(get_lesson(lesson).step_ids())
    for lang in ("en", "zh")
]


def driver(results, *keys: str):
    """A run_before that shows the verdicts, presses `keys` and lets the screen settle."""

    async def run_before(pilot) -> None:
        pilot.app.apply_results(results)
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("lesson,index,step,lang", CASES)
def test_every_step(snap_compare, make_app, lesson, index, step, lang):
    app, results = make_app(lesson, lang=lang)
    assert snap_compare(app, run_before=driver(results, *["n"] * index))
    assert app.step.id == step


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_failure_messages(snap_compare, make_app, lang):
    """lab-02 with the mask filled with 0.0: the weights step fails with the likely mistake."""
    app, results = make_app("lab-02-broken", step_id="weights", lang=lang)
    assert snap_compare(app, run_before=driver(results))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_leaking_heatmap(snap_compare, make_app, lang):
    """The broken lab-02's output step with the weights view: leaks drawn in the future."""
    app, results = make_app("lab-02-broken", step_id="output", lang=lang)
    assert snap_compare(app, run_before=driver(results, "w"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_weights_view(snap_compare, make_app, lang):
    app, results = make_app("lm3-l3", step_id="single-head", lang=lang)
    assert snap_compare(app, run_before=driver(results, "w"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_leakage_map_view(snap_compare, make_app, lang):
    """The leakage step's panel is its leakage map: its own legend and axes, not the weights'."""
    app, results = make_app("lm3-l3", step_id="leakage", lang=lang)
    assert snap_compare(app, run_before=driver(results, "w"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_help_screen(snap_compare, make_app, lang):
    app, results = make_app("lm3-l3", lang=lang)
    assert snap_compare(app, run_before=driver(results, "question_mark"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_command_palette_finds_the_open_lesson_by_its_id(snap_compare, make_app, lang):
    """Ctrl+P in lab-02, "02" typed: the open lesson is found too, and said to be open."""
    app, results = make_app("lab-02", step_id="mask", lang=lang)

    async def run_before(pilot) -> None:
        from textual.widgets import Input

        await driver(results, "ctrl+p")(pilot)
        pilot.app.screen.query_one(Input).cursor_blink = False  # the cursor always drawn
        await pilot.press("0", "2")
        await pilot.pause(0.5)  # the palette searches in a worker of its own
        await pilot.pause()

    assert snap_compare(app, run_before=run_before)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_hints_open(snap_compare, make_app, lang):
    app, results = make_app("lm3-l3", step_id="single-head", lang=lang)
    assert snap_compare(app, run_before=driver(results, "h", "h"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_failure_with_hints_open(snap_compare, make_app, lang):
    """The newest hint under the failure, the failure's ✗ line still in view."""
    app, results = make_app("lab-02-broken", step_id="weights", lang=lang)
    assert snap_compare(app, run_before=driver(results, "h", "h"))


@pytest.mark.parametrize(
    "lesson,step,keys,lang",
    [
        pytest.param("lm3-l3", "single-head", ("w",), "en", id="lm3-l3-weights-en"),
        pytest.param("lab-02", "heatmap", (), "zh", id="lab-02-heatmap-zh"),
        pytest.param("lab-02-broken", "weights", (), "zh", id="lab-02-broken-weights-zh"),
        pytest.param("lm3-l3", "memory", (), "en", id="lm3-l3-memory-en"),
    ],
)
def test_no_color(snap_compare, make_app, monkeypatch, lesson, step, keys, lang):
    monkeypatch.setenv("NO_COLOR", "1")
    app, results = make_app(lesson, step_id=step, lang=lang)
    assert snap_compare(app, run_before=driver(results, *keys))


@pytest.mark.parametrize(
    "lesson,step,lang",
    [
        pytest.param("lab-02", "heatmap", "en", id="lab-02-heatmap-en"),
        pytest.param("lm3-l3", "memory", "zh", id="lm3-l3-memory-zh"),
    ],
)
def test_large_terminal(snap_compare, make_app, lesson, step, lang):
    app, results = make_app(lesson, step_id=step, lang=lang)
    assert snap_compare(app, terminal_size=(120, 40), run_before=driver(results))


def scrolled_to_end(results):
    """Verdicts in, then the main pane scrolled to its end: the parts of long steps below the fold."""

    async def run_before(pilot) -> None:
        pilot.app.apply_results(results)
        await pilot.pause()
        pilot.app.query_one("#doc-scroll").scroll_end(animate=False)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize(
    "lesson,step", [("lab-02", "exercises"), ("lm3-l3", "reflect"), ("lab-02", "heatmap")]
)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_end_of_long_steps(snap_compare, make_app, lesson, step, lang):
    app, results = make_app(lesson, step_id=step, lang=lang)
    assert snap_compare(app, run_before=scrolled_to_end(results))
