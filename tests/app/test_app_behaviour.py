"""What the keys do, driven through Textual's Pilot on an app fed with recorded verdicts."""

from __future__ import annotations

import html
import io
import re

import pytest
from rich.console import Console
from textual.widgets import OptionList, Static

from tutor.app.help import HelpScreen
from tutor.model.lesson import get_lesson
from tutor.text.i18n import t
from tutor.workspace.store import Store

SIZE = (80, 24)
# Han characters, CJK punctuation and full-width forms: what must be gone after switching to English.
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


def render_text(widget: Static) -> str:
    """A Static's whole content as plain text, wrapped at the widget's width."""
    console = Console(
        width=max(widget.size.width, 20),
        file=io.StringIO(),
        color_system=None,
        legacy_windows=False,
    )
    with console.capture() as capture:
        console.print(widget.content)
    return capture.get()


def screen_text(app) -> str:
    """Everything the current screen holds as text: each Static's whole content (also the part
    scrolled out of view) rendered at the widget's width, the step list's options, and the
    screenshot itself (for anything drawn otherwise)."""
    parts = []
    for widget in app.screen.query(Static):
        if not widget.display:
            continue
        parts.append(render_text(widget))
    for options in app.screen.query(OptionList):
        parts += [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
    svg = app.export_screenshot()
    parts += [html.unescape(m) for m in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    return "\n".join(parts)


def doc_text(app) -> str:
    """The main pane's whole content: the lesson text, or the weights view."""
    return render_text(app.query_one("#doc", Static))


def leftover_cjk(text: str) -> list[str]:
    """Lines with Chinese in them, leaving out the language switch's label: in the English UI it
    names the language it switches to in that language, 中文."""
    label = t("ui.foot_lang", "en")
    return sorted(
        {line.strip() for line in text.splitlines() if CJK.search(line.replace(label, ""))}
    )


async def settle(pilot) -> None:
    await pilot.pause()
    await pilot.pause()


# ---------------------------------------------------------------------------- navigation


async def test_on_launch_the_arrows_scroll_the_text_and_tab_moves_the_focus(make_app):
    app, results = make_app("lm3-l3")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        doc = app.query_one("#doc-scroll")
        assert app.focused is doc
        await pilot.press("down", "down", "pagedown")
        await settle(pilot)
        assert doc.scroll_y > 0 and app.step.id == "single-head"  # the text moved, not the step
        await pilot.press("tab")
        assert app.focused is app.query_one("#results")
        await pilot.press("tab")
        assert app.focused is app.query_one("#steps")
        await pilot.press("down")
        await settle(pilot)
        assert app.step.id == "leakage"  # focused, the list follows the arrows


@pytest.mark.parametrize("lesson", ["lm3-l3", "lab-02"])
async def test_n_and_p_walk_the_steps_and_stop_at_the_ends(make_app, lesson):
    app, results = make_app(lesson)
    steps = get_lesson(lesson).step_ids()
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await pilot.press("p")
        assert app.step.id == steps[0]
        seen = [app.step.id]
        for _ in range(len(steps) + 2):
            await pilot.press("n")
            seen.append(app.step.id)
        assert seen == steps + [steps[-1]] * 3
        await pilot.press("p")
        assert app.step.id == steps[-2]
        for _ in range(len(steps) + 2):
            await pilot.press("p")
        assert app.step.id == steps[0]
        # The step list follows.
        assert app.query_one("#steps", OptionList).highlighted == 0


async def test_the_step_is_remembered(make_app, workspace):
    app, results = make_app("lab-02")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await pilot.press("n", "n")
        await pilot.press("q")
    state = Store(workspace).load()
    assert state["lessons"]["lab-02"]["step"] == "weights"
    assert state["lessons"]["lab-02"]["status"]["weights"] == "pass"


def test_with_no_lesson_on_record_the_app_opens_the_one_whose_file_is_there(workspace):
    """As check, solution and reset choose (workspace.files.folder_lesson): a folder with only
    lab_02.py and no state opens lab-02 on that file, and makes no lm3_l3.py beside it."""
    from tutor.app.main import _app_for

    mine = "# my own lab-02 file\n"
    (workspace / "lab_02.py").write_text(mine, encoding="utf-8")
    app = _app_for(
        Store(workspace),
        None,  # type: ignore[arg-type]  # never started: the app is built, not run
        lesson_id=None,
        step_id=None,
        file=None,
        lang="en",
        poll=False,
        timeout=None,
    )
    assert (app.lesson.id, app.path, app.created) == ("lab-02", workspace / "lab_02.py", False)
    assert not (workspace / "lm3_l3.py").exists()
    assert (workspace / "lab_02.py").read_text(encoding="utf-8") == mine


# ---------------------------------------------------------------------------- language


@pytest.mark.parametrize("name", ["lm3-l3", "lab-02", "lab-02-broken"])
async def test_l_switches_every_visible_string(make_app, name):
    """On every step, in Chinese, `l` leaves no Chinese on screen but the label of the `l` key
    itself; and `l` again brings Chinese back. Also in the weights view where there is one."""
    app, results = make_app(name, lang="zh")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        for _index, step in enumerate(app.lesson.step_ids()):
            assert app.step.id == step
            for view in ("text", "weights"):
                if view == "weights":
                    await pilot.press("w")
                    await settle(pilot)
                assert CJK.search(screen_text(app)), f"{step} ({view}): no Chinese in zh"
                await pilot.press("l")
                await settle(pilot)
                assert app.lang == "en"
                left = leftover_cjk(screen_text(app))
                assert not left, f"{step} ({view}): Chinese left after switching to English: {left}"
                await pilot.press("l")
                await settle(pilot)
                assert app.lang == "zh"
                assert CJK.search(screen_text(app)), (
                    f"{step} ({view}): no Chinese after switching back"
                )
                if view == "weights":
                    await pilot.press("w")
            await pilot.press("n")
            await settle(pilot)


async def test_l_switches_the_help_screen_language_next_time(make_app):
    app, results = make_app("lm3-l3", lang="zh")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await pilot.press("l", "question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert t("ui.help_title", "en") in text
        assert not [line for line in leftover_cjk(text) if t("ui.key_lang_long", "en") not in line]


async def test_the_language_is_remembered(make_app, workspace):
    app, results = make_app("lm3-l3", lang="en")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await pilot.press("l")
        await pilot.press("q")
    assert Store(workspace).load()["lang"] == "zh"


async def test_a_language_nobody_chose_is_not_remembered(make_app, workspace):
    """The language from the locale (or the default) is not a choice: saved progress leaves
    "lang" as it was, so the next run (or `--help`) follows LANG again."""
    app, results = make_app("lm3-l3", lang="en")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await pilot.press("n", "h")
        await pilot.press("q")
    state = Store(workspace).load()
    assert state["lessons"]["lm3-l3"]["step"] == "leakage" and state["lang"] is None
    # --lang is a choice (main.run_app passes lang_chosen)
    app, results = make_app("lm3-l3", lang="zh", lang_chosen=True)
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)  # saved with the verdicts
        await pilot.press("q")
    assert Store(workspace).load()["lang"] == "zh"


# ---------------------------------------------------------------------------- hints


async def test_h_shows_the_hints_one_by_one_and_they_persist(make_app, workspace):
    app, results = make_app("lm3-l3", step_id="single-head")
    hints = app.step.hints["en"]
    assert len(hints) == 3
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        assert t("ui.hint", "en", n=1, total=3) not in screen_text(app)
        for n in (1, 2, 3):
            await pilot.press("h")
            await settle(pilot)
            assert app.hints_shown["single-head"] == n
            text = screen_text(app)
            assert t("ui.hint", "en", n=n, total=3) in text
            assert Store(workspace).load()["lessons"]["lm3-l3"]["hints"]["single-head"] == n
        await pilot.press("h")  # no fourth hint: the count stays, the panel says so
        await settle(pilot)
        assert app.hints_shown["single-head"] == 3
        assert t("ui.no_more_hints", "en") in screen_shot_text(app)
        # The same hints in the other language.
        await pilot.press("l")
        await settle(pilot)
        assert t("ui.hint", "zh", n=3, total=3) in screen_text(app)
        await pilot.press("q")
    # A new session on the same workspace shows them again.
    again, _ = make_app("lm3-l3", step_id="single-head")
    assert again.hints_shown == {"single-head": 3}
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert t("ui.hint", "en", n=3, total=3) in screen_text(again)


async def test_hints_are_per_step(make_app):
    app, results = make_app("lab-02")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await pilot.press("h", "n")
        await settle(pilot)
        assert app.hints_shown == {"scores": 1}
        assert t("ui.hint", "en", n=1, total=len(app.step.hints["en"])) not in screen_text(app)


# ---------------------------------------------------------------------------- help


async def test_question_mark_opens_and_closes_the_help(make_app):
    app, results = make_app("lm3-l3")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for key in ("ui.help_title", "ui.key_next", "ui.key_hint", "ui.key_quit", "ui.help_close"):
            assert t(key, "en") in text, key
        await pilot.press("question_mark")
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark")
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen)
        # q on the help screen closes the help, not the app.
        await pilot.press("question_mark", "q")
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen)
        assert app.is_running


# ---------------------------------------------------------------------------- weights


async def test_w_shows_the_heatmap_of_single_head(make_app):
    app, results = make_app("lm3-l3", step_id="single-head")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        lesson_heading = "Single-head causal attention"
        assert lesson_heading in doc_text(app)
        await pilot.press("w")
        await settle(pilot)
        assert app.show_weights
        text = doc_text(app)
        assert t("ui.weights", "en") in text
        assert t("lm3-l3.visual.batch", "en", n=0) in text
        assert t("ui.axis_keys", "en") in text and t("ui.axis_queries", "en") in text
        assert t("ui.legend_learner", "en") in text
        assert lesson_heading not in text
        await pilot.press("b")  # the next batch
        await settle(pilot)
        assert t("lm3-l3.visual.batch", "en", n=1) in doc_text(app)
        await pilot.press("w")
        await settle(pilot)
        assert not app.show_weights
        assert lesson_heading in doc_text(app)


async def test_w_before_any_verdict_and_on_a_step_without_weights(make_app):
    app, results = make_app("lm3-l3", step_id="single-head")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("w")
        await settle(pilot)
        # PyTorch still loading: the loading state, not "no weights yet" (nothing has run)
        assert t("ui.worker_loading", "en") in screen_text(app)
        app.worker_state = "ready"
        await pilot.press("w", "w")  # back to the text, and to the weights again
        await settle(pilot)
        assert t("ui.weights_waiting", "en")[:30] in screen_text(app)
        app.apply_results(results)
        await pilot.press("n", "n", "n")  # shapes: no weight matrix


async def test_w_left_on_shows_a_step_without_weights_and_comes_back(make_app):
    """Issue #28, 9: `w` on, then `n` to a step without weights: "This step draws no weight
    matrix." instead of the step, until `w` was pressed again. Now the step's text, with a line
    that says why, and the weights again on the next step that has them."""
    app, results = make_app("lm3-l3", step_id="multi-head")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        assert "your weights" in doc_text(app)
        await pilot.press("n")  # shapes: no weight matrix
        await settle(pilot)
        assert app.step.id == "shapes"
        text = " ".join(doc_text(app).split())
        assert " ".join(t("ui.weights_none_here", "en").split()) in text
        assert app.lesson.step("shapes").title["en"] in text  # the step itself
        await pilot.press("p")
        await settle(pilot)
        assert "your weights" in doc_text(app)


# ---------------------------------------------------------------------------- quitting


async def test_q_quits_with_return_code_0(make_app):
    app, results = make_app("lm3-l3")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await pilot.press("q")
        await settle(pilot)
    assert app.return_code == 0
    assert not app.is_running


@pytest.mark.parametrize("step", ["output"])
async def test_a_failing_step_still_draws_its_weights(make_app, step):
    """The heatmap matters most when the weights are wrong: a 0.0 mask shows as leaks in the future."""
    app, results = make_app("lab-02-broken", step_id=step)
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await pilot.press("w")
        await settle(pilot)
        assert app.results[step].status == "fail"
        assert t("ui.legend_leak", "en") in doc_text(app)


# ---------------------------------------------------------------------------- layout


@pytest.mark.parametrize("size, scrollbar", [(SIZE, True), ((200, 80), False)])
async def test_the_lesson_text_is_laid_out_once_at_its_final_width(
    make_app, monkeypatch, size, scrollbar
):
    """DocScroll takes the scrollbar's columns in the layout that finds the text too tall
    (Textual alone lays the text out at the full width first, then again without the columns),
    and leaves them alone when the text fits. It overrides Textual 8 internals: this is their test."""
    from textual.widget import Widget

    widths = []
    real = Widget._size_updated

    def size_updated(self, size, virtual_size, container_size, layout=True):
        if self.id == "doc" and size.width:
            widths.append(size.width)
        return real(self, size, virtual_size, container_size, layout)

    monkeypatch.setattr(Widget, "_size_updated", size_updated)
    app, results = make_app("lm3-l3")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        scroll = app.query_one("#doc-scroll")
        assert scroll.show_vertical_scrollbar is scrollbar
        assert set(widths) == {scroll.scrollable_content_region.width}
        app.apply_results(results)
        await pilot.press("n")  # another text: the same width
        await settle(pilot)
        assert set(widths) == {scroll.scrollable_content_region.width}


async def test_the_gc_paused_for_the_start_up_is_back_after_the_first_screen(make_app):
    """main.run_app pauses the cyclic GC for the start-up; the app turns it back on."""
    import gc

    app, _ = make_app("lm3-l3")
    gc.disable()
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert gc.isenabled()
            assert gc.get_freeze_count() > 0  # the start-up's objects, out of later passes
    finally:
        gc.unfreeze()
        gc.enable()


# ---------------------------------------------------------------------------- reflection answers


def edit_in_the_file(path, index: int, new: str, step: str = "reflect") -> None:
    """The learner's editor: the text between one pair of markers replaced, the file saved."""
    text = path.read_text("utf-8")
    found = re.search(
        rf"<!-- answer {step} {index} -->\n(.*?)\n?<!-- /answer {step} {index} -->", text, re.S
    )
    assert found, f"no markers for answer {step} {index} in {path}"
    path.write_text(
        text[: found.start()]
        + f"<!-- answer {step} {index} -->\n{new}\n<!-- /answer {step} {index} -->"
        + text[found.end() :],
        "utf-8",
    )


def answers_of(app, step: str = "reflect") -> dict:
    """The answers file's answers to one step's questions, as the store reads them."""
    return app.store.read_answers(app.answer_sheet()).get(step, {})


async def write_in_the_box(pilot, n: str, text: str, *, before_closing=None) -> str:
    """Open answer n, type `text` at its end, run `before_closing`, close with Escape;
    returns what the box showed when it opened."""
    from textual.widgets import TextArea

    from tutor.app.answer import AnswerScreen

    await pilot.press(n)
    await settle(pilot)
    assert isinstance(pilot.app.screen, AnswerScreen)
    area = pilot.app.screen.query_one(TextArea)
    shown = area.text
    area.move_cursor(area.document.end)
    area.insert(text)
    if before_closing:
        before_closing()
    await pilot.press("escape")
    await settle(pilot)
    assert not isinstance(pilot.app.screen, AnswerScreen)
    return shown


async def test_an_answer_written_in_the_file_is_never_overwritten(make_app, workspace):
    """Issue #15: answer 2 written in the answers file while the app runs, then answer 1 written
    in the app: answer 2 is still in the file, and the app shows it."""
    app, results = make_app("lm3-l3", step_id="reflect")
    path = workspace / "lm3-l3-answers.md"
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await write_in_the_box(pilot, "1", "Scale keeps the softmax soft.")
        assert answers_of(app) == {0: "Scale keeps the softmax soft."}
        edit_in_the_file(path, 1, "The mask hides the future. (typed in my editor)")
        # The step shows it without a key (the file is read again every ANSWERS_EVERY s)...
        for _ in range(40):
            if "typed in my editor" in doc_text(app):
                break
            await pilot.pause(0.05)
        assert "typed in my editor" in doc_text(app)
        # ...and answer 1 written again in the app leaves it where it is.
        await write_in_the_box(pilot, "1", " Edited in the app.")
        assert answers_of(app) == {
            0: "Scale keeps the softmax soft. Edited in the app.",
            1: "The mask hides the future. (typed in my editor)",
        }
        assert app.answers["reflect"] == answers_of(app)
        # The box opens on what the file says, even when the change is a moment old.
        edit_in_the_file(path, 1, "Rewritten in the editor.")
        assert await write_in_the_box(pilot, "2", "") == "Rewritten in the editor."
        assert answers_of(app)[1] == "Rewritten in the editor."
        assert "Rewritten in the editor." in doc_text(app)


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_an_answer_changed_in_the_file_and_the_box_at_once_keeps_both(
    make_app, workspace, lang
):
    app, results = make_app("lm3-l3", step_id="reflect", lang=lang)
    path = workspace / "lm3-l3-answers.md"
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await write_in_the_box(pilot, "3", "Heads look at different things.")
        await write_in_the_box(
            pilot,
            "3",
            " (app)",
            before_closing=lambda: edit_in_the_file(path, 2, "Several subspaces. (file)"),
        )
        answer = answers_of(app)[2]
        assert answer == t(
            "ui.answer_both",
            lang,
            file="Several subspaces. (file)",
            app="Heads look at different things. (app)",
        )
        assert app.answers["reflect"][2] == answer
        assert any(
            t("ui.answer_kept_both", lang, n=3, path=path.name) in str(n.message)
            for n in app._notifications
        )
        # Opened again, the box holds both versions, to be made one.
        assert await write_in_the_box(pilot, "3", "") == answer


async def test_an_answer_that_could_not_be_saved_is_offered_again(make_app, workspace):
    app, results = make_app("lm3-l3", step_id="reflect")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        (workspace / "lm3-l3-answers.md").mkdir()  # a folder in its place: the write fails
        await write_in_the_box(pilot, "1", "Not lost.")
        assert app.answers["reflect"][0] == "Not lost."
        await pilot.pause(
            1.2
        )  # the file is read again meanwhile: the unsaved answer stays on screen
        assert "Not lost." in doc_text(app)
        (workspace / "lm3-l3-answers.md").rmdir()
        assert await write_in_the_box(pilot, "1", " Saved now.") == "Not lost."
        assert answers_of(app) == {0: "Not lost. Saved now."}


# ---------------------------------------------------------------------------- the results panel's scroll


def visible(app, anchor: str) -> bool:
    """Whether the first line of the results' Anchored(anchor) part is in the panel's view."""
    panel = app.query_one("#results")
    lines = panel.anchor_lines(anchor)
    assert lines is not None, f"no {anchor} in the results panel"
    top = round(panel.scroll_y)
    return top <= lines[0] < top + panel.scrollable_content_region.height


async def test_a_new_failure_is_in_view_after_a_scroll(make_app, engine_results):
    """Issue #15: after `h` or a scroll, the results panel kept its scroll position, and the ✗
    line of the next run's verdict was above the view."""
    app, broken = make_app("lab-02-broken", step_id="weights")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(broken)
        await settle(pilot)
        assert visible(app, "failure")
        await pilot.press("h", "h")
        await settle(pilot)
        panel = app.query_one("#results")
        panel.scroll_end(animate=False, immediate=True)
        await settle(pilot)
        assert panel.max_scroll_y > 0 and not visible(app, "failure")  # as the learner left it
        # The next save: a pass, then the failure again.
        app.apply_results(engine_results["lab-02"])
        await settle(pilot)
        assert round(panel.scroll_y) == 0
        panel.scroll_end(animate=False, immediate=True)
        await settle(pilot)
        app.apply_results(broken)
        await settle(pilot)
        assert visible(app, "failure")
        assert (
            round(panel.scroll_y) <= panel.anchor_lines("failure")[0]
        )  # near the top: at most the status above
        # The diagnosis, first (its first line: the message wraps in the panel).
        assert "Likely mistake: the future scores were filled" in screen_shot_text(app)


async def test_h_shows_the_new_hint_and_keeps_the_failure_in_view(make_app):
    app, broken = make_app("lab-02-broken", step_id="weights")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(broken)
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        assert visible(app, "failure") and visible(app, "hint")
        shot = screen_shot_text(app)
        assert (
            t("ui.hint", "en", n=1, total=3) in shot
            and "Likely mistake: the future scores were filled" in shot  # its first line
        )
        for n in (2, 3):  # three hints and a failure do not fit at 80×24: the newest is in view
            await pilot.press("h")
            await settle(pilot)
            assert visible(app, "hint"), f"hint {n} is not in view"
            assert t("ui.hint", "en", n=n, total=3) in screen_shot_text(app)


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_hints_run_oldest_first_and_the_solution_is_announced(make_app, lang):
    """Issue #28, 5: hints were shown newest first; at 80×24 the "No more hints" toast covered
    the hint text; the last hint, the whole solution, came with nothing said before it."""
    app, broken = make_app("lab-02-broken", step_id="weights", lang=lang)
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(broken)
        await settle(pilot)
        await pilot.press("h", "h")
        await settle(pilot)
        text = render_text(app.query_one("#results", Static))
        first, second = (text.find(t("ui.hint", lang, n=n, total=3)) for n in (1, 2))
        assert 0 <= first < second, text
        warning = t("ui.hint_last_is_solution", lang, n=3)
        assert warning[:12] in screen_shot_text(app)  # in view, before hint 3 is shown
        assert t("ui.hint", lang, n=3, total=3) not in text
        await pilot.press("h")
        await settle(pilot)
        assert warning[:12] not in screen_shot_text(app)
        await pilot.press("h")  # none left: said in the panel, in view, with no toast over it
        await settle(pilot)
        assert t("ui.no_more_hints", lang) in screen_shot_text(app)
        assert not app._notifications


def screen_shot_text(app) -> str:
    svg = app.export_screenshot()
    return "".join(html.unescape(m) for m in re.findall(r"<text[^>]*>([^<]*)</text>", svg)).replace(
        "\xa0", " "
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_the_footer_keeps_help_and_quit_at_60_columns(make_app, lang):
    app, _ = make_app("lm3-l3")
    async with app.run_test(size=(60, 20)) as pilot:
        if lang == "zh":
            await pilot.press("l")
        await settle(pilot)
        footer = app.query_one("#footer").render().plain
        assert footer.rstrip().endswith(f"q {t('ui.foot_quit', lang)}"), footer
        assert f"? {t('ui.foot_help', lang)}" in footer


@pytest.mark.parametrize("size", [(60, 20), (80, 24), (100, 30)])
async def test_step_titles_take_one_line_and_fit_whole_from_100_columns(make_app, size):
    app, _ = make_app("lm3-l3")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        steps = app.query_one("#steps")
        lines = [steps.render_line(y).text for y in range(len(app.lesson.steps))]
        for step, line in zip(
            app.lesson.steps, lines, strict=False
        ):  # line i is step i: no title took two
            shown, title = line.strip()[2:], step.title["en"]
            assert shown == title or (
                shown.endswith("…") and title.startswith(shown[:-1].rstrip())
            ), line
        if size[0] >= 100:
            assert [line.strip()[2:] for line in lines] == [s.title["en"] for s in app.lesson.steps]


async def test_text_and_results_sit_side_by_side_from_120_by_40(make_app):
    app, _ = make_app("lm3-l3")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        doc, results = app.query_one("#doc-scroll").region, app.query_one("#results").region
        assert results.x >= doc.right and results.y == doc.y and results.height == doc.height
    app, _ = make_app("lm3-l3")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        doc, results = app.query_one("#doc-scroll").region, app.query_one("#results").region
        assert results.y >= doc.bottom  # under it, as at 80×24


async def test_after_a_pass_the_results_say_what_next_and_s_shows_the_solution(make_app):
    from tutor.app.solution import SolutionScreen

    app, results = make_app("lab-02-broken")  # scores passes, weights fails
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")  # nothing has passed yet
        await settle(pilot)
        assert not isinstance(app.screen, SolutionScreen)
        app.apply_results(results)
        await settle(pilot)
        said = render_text(app.query_one("#results"))
        assert "n" in said and app.lesson.steps[1].title["en"] in said  # the next step, by name
        await pilot.press("s")
        await settle(pilot)
        assert isinstance(app.screen, SolutionScreen)
        assert "def scaled_scores" in "\n".join(render_text(w) for w in app.screen.query(Static))
        await pilot.press("escape")
        await pilot.press("n", "n")  # weights: failed, so no solution
        await settle(pilot)
        assert app.step.id == "weights" and app.status_of("weights") == "fail"
        await pilot.press("s")
        await settle(pilot)
        assert not isinstance(app.screen, SolutionScreen)


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_the_solutions_long_lines_go_on_under_their_indentation(make_app, lang):
    """At 80×24 reference lines are wider than the box: each continues under its own indentation
    (it went on from the left edge, reading as a statement outside the function)."""
    from tutor.app.solution import SolutionScreen

    app, results = make_app("lm3-l3", lang=lang)  # the reference: every step passes
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        assert isinstance(app.screen, SolutionScreen)
        rows = "\n".join(render_text(w) for w in app.screen.query(Static)).split("\n")
        start = next(i for i, r in enumerate(rows) if "future = torch.triu(" in r)
        assert rows[start].startswith("    future")
        went_on = rows[start + 1]
        assert went_on.startswith(" " * 8) and went_on.strip(), rows[start : start + 3]


async def test_an_experiment_shows_in_the_step_list_how_its_run_went(make_app):
    app, results = make_app("lm3-l3")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        steps = app.query_one("#steps")
        memory = app.lesson.step_ids().index("memory")
        assert steps.render_line(memory).text.strip().startswith("·")  # not run yet
        app.apply_results(results)
        await settle(pilot)
        assert steps.render_line(memory).text.strip().startswith("✓")


async def test_L_switches_the_lesson_and_keeps_the_worker_for_the_next(make_app, workspace):
    from tutor.app.lessons import LessonScreen

    app, results = make_app("lm3-l3")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await pilot.press("L")
        await settle(pilot)
        assert isinstance(app.screen, LessonScreen)
        text = "\n".join(str(o.prompt) for o in app.screen.query_one("#lessons-list").options)
        assert "lm3-l3 · 4/4 passed" in text and "lab-02 · 0/4 passed" in text
        await pilot.press("down", "enter")
        await settle(pilot)
    assert app.switch_to == "lab-02"
    assert Store(workspace).load()["lesson"] == "lm3-l3"  # its progress saved before it went


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_the_command_palette_speaks_the_learners_language(make_app, lang):
    app, _ = make_app("lm3-l3", lang=lang)
    async with app.run_test(size=SIZE) as pilot:
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert commands[0] == t(
            "ui.command_lesson", lang, title=get_lesson("lab-02").title[lang], id="lab-02"
        )
        assert t("ui.key_quit", lang) in commands
        await pilot.press("ctrl+p")
        await settle(pilot)
        assert t("ui.command_search", lang) in screen_shot_text(app)


# ---------------------------------------------------------------------------- a step's own keys (lesson.toml)


async def wait_for(pilot, done, seconds: float = 30.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if done():
            return
        await pilot.pause(0.05)
    assert done(), "timed out"


SLOW_WITH_16_HEADS = """

import time as _time

_Fast = CausalMultiHeadAttention
_held = []


class CausalMultiHeadAttention(_Fast):
    def __init__(self, d_in, d_out, num_heads, *args, **kwargs):
        if num_heads == 16 and not _held:
            _held.append(_time.sleep(1.0))
        super().__init__(d_in, d_out, num_heads, *args, **kwargs)
"""


async def test_settings_keys_rerun_the_step_with_the_new_settings_in_the_real_worker(workspace):
    """Issue #14: the memory step's keys come from lesson.toml; a key changes the setting, the step
    runs again with it (ctx.params), the last table stays on screen, marked "updating…", until
    the new one comes; the setting is remembered for the next start."""
    from tutor.app.app import TutorApp

    lesson = get_lesson("lm3-l3")
    path = workspace / lesson.file_name
    # The 16-head run is held back a second, so that "updating…" is drawn before its table comes
    # on any machine (a quick run may end before the spinner's delay, and then shows none).
    path.write_text(lesson.reference_path.read_text("utf-8") + SLOW_WITH_16_HEADS, "utf-8")
    app = TutorApp(
        lesson=lesson, path=path, created=False, step_id="memory", lang="en", store=Store(workspace)
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "memory" in app.views and not app.running)
        assert "Keys: 1 heads: 12" in doc_text(app) and re.search(
            r"1024 +12,582,912", doc_text(app)
        )
        await pilot.press("1")
        assert app.settings["memory"]["heads"] == 16
        # The old table stays on screen meanwhile.
        assert "memory" in app.running and re.search(r"1024 +12,582,912", doc_text(app))
        assert "Keys: 1 heads: 16" in doc_text(app)
        await wait_for(
            pilot, lambda: t("ui.updating", "en") in doc_text(app) or "memory" not in app.running
        )
        assert "memory" in app.running and t("ui.updating", "en") in doc_text(app)
        await wait_for(pilot, lambda: "memory" not in app.running)
        await settle(pilot)
        shown = doc_text(app)
        assert re.search(r"1024 +16,777,216", shown) and not re.search(
            r"1024 +12,582,912", shown
        )  # 16 heads · 1024²
        assert "16 heads, batch 1, float32" in shown and t("ui.updating", "en") not in shown
        for key in "234":
            await pilot.press(key)
        await wait_for(pilot, lambda: not app.running)
        await settle(pilot)
        assert app.settings["memory"] == {
            "heads": 16,
            "batch": 2,
            "dtype": "bfloat16",
            "range": [128, 2048],
        }
        assert "2048" in doc_text(app) and "bfloat16" in doc_text(app)
    saved = Store(workspace).load()["lessons"]["lm3-l3"]["settings"]["memory"]
    assert saved == {"heads": 16, "batch": 2, "dtype": "bfloat16", "range": [128, 2048]}
    again = TutorApp(
        lesson=lesson,
        path=path,
        created=False,
        step_id="memory",
        lang="en",
        store=Store(workspace),
        start_worker=False,
    )
    assert again.settings["memory"]["heads"] == 16


async def test_the_exercises_have_no_setting_and_questions_keys_are_the_steps_own(make_app):
    """The learner makes each exercise's change in their file: x is nobody's key here, and
    each result shows under its question before it is answered."""
    app, results = make_app("lab-02", step_id="exercises")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        shown = " ".join(doc_text(app).split())
        assert "Keys:" not in shown and "x change" not in shown
        first, second = shown.index("Remove the 1/√d_k scale"), shown.index("Build the causal")
        assert first < shown.index("In `exercise_scores`, return the scores") < second
        await pilot.press("x")
        await pilot.press("p")  # the heatmap step has neither settings nor questions
        await pilot.press("x", "1")
        await settle(pilot)
        assert "exercises" not in app.settings and len(app.screen_stack) == 1


async def test_the_exercises_questions_can_be_answered(make_app, workspace):
    """Issue #15 bug 3: lab-02's exercises step has questions in lesson.toml: they are shown, 1–3
    open their boxes, the answers go to the lesson's answers file, m shows the model answers."""
    app, results = make_app("lab-02", step_id="exercises")
    lesson = get_lesson("lab-02")
    questions, models = (
        lesson.step("exercises").questions["en"],
        lesson.step("exercises").answers["en"],
    )
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        shown = doc_text(app)
        assert "1–3 write an answer" in shown and "attn-lab/lab-02-answers.md" in shown
        assert "Remove the 1/√d_k scale" in shown and "Change the Q of one head only" in shown
        await write_in_the_box(pilot, "2", "Row 0 sees nothing: 0/0.")
        path = workspace / "lab-02-answers.md"
        assert "<!-- answer exercises 1 -->\nRow 0 sees nothing: 0/0.\n" in path.read_text("utf-8")
        assert answers_of(app, "exercises") == {1: "Row 0 sees nothing: 0/0."}
        assert models[1][:40] not in doc_text(app)
        await pilot.press("m")
        await settle(pilot)
        plain = lambda text: " ".join(text.replace("`", "").split())  # noqa: E731
        assert plain(models[1])[:60] in plain(doc_text(app))
        assert plain(models[0])[:30] not in plain(
            doc_text(app)
        )  # question 1 is not answered: no model answer yet
    assert questions[1].split()[0] in path.read_text("utf-8")


async def test_question_4s_numbers_only_after_it_is_answered_or_m(make_app):
    """Issue #15 bug 4: the reflect step's numbers (head_dim 64, 1,769,472 parameters) are question
    4's answer: not on screen before it is answered or `m` is pressed."""
    app, results = make_app("lm3-l3", step_id="reflect")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        assert "1,769,472" not in doc_text(app)
        assert "once you have, press m for the model answer" in " ".join(doc_text(app).split())
        await write_in_the_box(pilot, "1", "Before: it renormalises.")
        assert "1,769,472" not in doc_text(app)  # another question answered: still hidden
        await pilot.press("m")
        await settle(pilot)
        assert "1,769,472" in doc_text(app) and "head_dim = 64" in doc_text(app)
        await pilot.press("m")
        await settle(pilot)
        assert "1,769,472" not in doc_text(app)
        await write_in_the_box(pilot, "4", "64, and 3·768·768.")
        assert "1,769,472" in doc_text(app)


async def test_an_answers_file_from_before_the_sections_is_read_and_nothing_in_it_is_lost(
    make_app, workspace
):
    """An attn-lab/lm3-l3-answers.md written by the version before answers had a section per step
    (markers `<!-- answer N -->`): its answers show on the reflect step, and answering another
    question keeps them, byte for byte outside the new answer."""
    old = (
        "# lm3-l3: reflection answers\n\n<!-- Written by attn-tutor. Edit answers between the markers. -->\n"
        "\n## Question 1\n\n> Why must the causal mask be applied before the softmax, not after it?\n\n"
        "<!-- answer 0 -->\nThe old answer, kept.\n<!-- /answer 0 -->\n"
        "\n## Question 2\n\n> You double the context length.\n\n<!-- answer 1 -->\n\n<!-- /answer 1 -->\n"
    )
    path = workspace / "lm3-l3-answers.md"
    path.write_text(old, "utf-8")
    app, results = make_app("lm3-l3", step_id="reflect")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        assert "The old answer, kept." in doc_text(app)
        assert await write_in_the_box(pilot, "1", "") == "The old answer, kept."
        await write_in_the_box(pilot, "3", "transpose only swaps strides.")
    assert answers_of(app) == {0: "The old answer, kept.", 2: "transpose only swaps strides."}
    assert path.read_text("utf-8").startswith(old)


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_protections_the_worker_lacks_are_said_once(make_app, lang):
    """A worker on a platform without Landlock and seccomp (macOS) says so in its ready event:
    the app tells the learner once, even if the worker is restarted and says it again."""
    from tutor.app.checking import WorkerEvent
    from tutor.engine.confine.platform_probe import describe_off
    from tutor.engine.protocol import Ready

    app, _ = make_app(lang=lang)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(2):
            app.post_message(WorkerEvent(Ready(1, ["landlock", "seccomp"])))
            await pilot.pause()
        said = [
            n
            for n in app._notifications
            if str(n.message) == describe_off(["landlock", "seccomp"], lang)
        ]
        assert len(said) == 1, [str(n.message) for n in app._notifications]
        assert ("Landlock" in said[0].message) and (
            lang == "en" or "文件访问限制" in said[0].message
        )


async def test_nothing_is_said_of_protections_when_none_is_off(make_app):
    from tutor.app.checking import WorkerEvent
    from tutor.engine.protocol import Ready

    app, _ = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        app.post_message(WorkerEvent(Ready(1, [])))
        await pilot.pause()
        assert app.worker_state == "ready"
        assert not [
            n
            for n in app._notifications
            if "Landlock" in str(n.message) or "seccomp" in str(n.message)
        ]


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_once_every_checked_step_passes_the_lab_says_what_is_left(make_app, lang):
    app, results = make_app("lm3-l3", lang=lang)
    async with app.run_test(size=(100, 40)) as pilot:
        app.apply_results(results)
        await settle(pilot)
        said = "".join(
            render_text(app.query_one("#results")).split()
        )  # lines joined as they wrapped
        reflect = get_lesson("lm3-l3").step("reflect")
        expected = t(
            "ui.lab_done", lang, n=4, answered=0, total=4, left=reflect.title[lang]
        ).replace("**", "")
        assert "".join(expected.split()) in said


@pytest.mark.parametrize("name", ["lm3-l3", "lab-02", "kv-cache"])
async def test_a_step_with_questions_is_passed_by_its_answers_not_by_a_visit(
    make_app, workspace, name
):
    """Issue #28, 1: with every checked step passing, `n` onto lm3-l3's reflection marked it ✓
    with no question answered (its probe ran and passed), while kv-cache's stayed · after an
    answer. In every lesson the mark now says whether each question has an answer."""
    app, results = make_app(name)
    asked = [s for s in app.lesson.steps if s.questions]
    assert asked
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        steps = app.query_one("#steps")
        for step in asked:
            app.go_to(app.lesson.step_ids().index(step.id))
            await settle(pilot)
            row = app.lesson.step_ids().index(step.id)
            assert steps.render_line(row).text.strip().startswith("·"), step.id
            for n in range(1, len(step.questions["en"])):
                await write_in_the_box(pilot, str(n), f"answer {n}")
            # One question left: still not passed.
            assert steps.render_line(row).text.strip().startswith("·"), step.id
            await write_in_the_box(pilot, str(len(step.questions["en"])), "the last")
            assert steps.render_line(row).text.strip().startswith("✓"), step.id


async def test_a_step_whose_code_now_raises_keeps_no_view_of_the_old_code(
    make_app, mask_raises_results
):
    """Issue #28, 2: lab-02 passing, the heatmap step on screen, then causal_mask made to raise:
    the heatmap kept the old matrices, labelled as the learner's weights. What is on screen
    belongs to the file as it is now: the view goes, and the step says why."""
    app, results = make_app("lab-02", step_id="heatmap")
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        assert "your weights" in doc_text(app) and ".51" in doc_text(app)
        app.apply_results(mask_raises_results)
        await settle(pilot)
        after = doc_text(app)
        assert "your weights" not in after and ".51" not in after, after
        assert " ".join(t("ui.view_failed", "en").split()[:6]) in " ".join(after.split())
        shown = " ".join(screen_text(app).split())
        assert "not written yet" in shown  # the reason, in the results under the text
        await pilot.press("w")  # nor does the weights panel draw the old file's weights
        await settle(pilot)
        assert "your weights" not in doc_text(app) and ".51" not in doc_text(app)


@pytest.mark.parametrize("box", ["help", "lessons", "solution"])
async def test_l_switches_the_language_in_every_box(make_app, workspace, box):
    """Issue #28, 4: `l` was ignored in the help, the lesson switcher and the solution diff
    (the README says "everywhere, at once"). The box and the screen under it switch."""
    from tutor.app.lessons import LessonScreen
    from tutor.app.solution import SolutionScreen

    app, results = make_app("lm3-l3", step_id="single-head")
    kind = {"help": HelpScreen, "lessons": LessonScreen, "solution": SolutionScreen}[box]
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        await pilot.press({"help": "question_mark", "lessons": "L", "solution": "s"}[box])
        await settle(pilot)
        assert isinstance(app.screen, kind)
        assert not leftover_cjk(screen_shot_text(app))
        await pilot.press("l")
        await settle(pilot)
        assert isinstance(app.screen, kind) and app.lang == "zh"
        shot = screen_shot_text(app)
        assert CJK.search(shot), shot
        title = {
            "help": t("ui.help_title", "zh"),
            "lessons": t("ui.lessons_title", "zh"),
            "solution": t("ui.solution_title", "zh", title=app.lesson.steps[0].title["zh"]),
        }[box]
        assert title[:8] in shot, shot
        await pilot.press("escape")
        await settle(pilot)
        assert app.lesson.steps[0].title["zh"][:4] in screen_shot_text(app)  # the lesson too


async def _palette_shot(pilot, app, query: str) -> str:
    """The screen after Ctrl+P and `query` typed into the palette."""
    await settle(pilot)
    await pilot.press("ctrl+p")
    await settle(pilot)
    await pilot.press(*query)
    await pilot.pause(0.5)
    await settle(pilot)
    return screen_shot_text(app)


@pytest.mark.parametrize("query", ["lab-02", "02"])
async def test_the_command_palette_finds_a_lesson_by_its_id(make_app, query):
    """Issue #28, 4: typing a lesson's id in Ctrl+P found nothing."""
    app, results = make_app("lm3-l3")
    async with app.run_test(size=SIZE) as pilot:
        shot = await _palette_shot(pilot, app, query)
        assert get_lesson("lab-02").title["en"][:20] in shot, shot


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("query", ["lab-02", "02"])
async def test_the_command_palette_finds_the_lesson_that_is_open_too(make_app, query, lang):
    """In lab-02, its own id in Ctrl+P said "No matches found", as if the palette could not find
    lessons by id: the open lesson is listed too, said to be open, and choosing it stays."""
    app, results = make_app("lab-02", step_id="mask", lang=lang)
    async with app.run_test(size=SIZE) as pilot:
        shot = await _palette_shot(pilot, app, query)
        title = get_lesson("lab-02").title[lang]
        assert t("ui.command_lesson_open", lang, title=title, id="lab-02")[:12] in shot, shot
        await pilot.press("enter")
        await settle(pilot)
        assert app.switch_to is None and app.step.id == "mask" and app.is_running


def screen_lines(app) -> list[str]:
    """The screenshot's rows as text."""
    svg = app.export_screenshot()
    rows: dict[float, list[str]] = {}
    for m in re.finditer(r'<text[^>]*\by="([\d.]+)"[^>]*>([^<]*)</text>', svg):
        rows.setdefault(float(m.group(1)), []).append(html.unescape(m.group(2)))
    return ["".join(parts).replace("\xa0", " ") for _, parts in sorted(rows.items())]


async def test_at_120_by_40_the_results_keep_identifiers_whole(make_app):
    """Issue #28, 7: at 120×40 the results column (about 32 cells) split identifiers,
    `CausalMultiHeadAttention.forwa` / `rd_cached`. Now it is wider, and a name too long for
    it is cut where its parts meet."""
    from tutor.model.results import Check, Message, StepResult

    app, _ = make_app("kv-cache", step_id="cached-attention")
    name = "CausalMultiHeadAttention.forward_cached"
    todo = StepResult(
        "cached-attention",
        "todo",
        checks=[Check("runs", "todo", Message("check.todo", {"fn": name}))],
    )
    async with app.run_test(size=(120, 40)) as pilot:
        app.apply_results([todo])
        await settle(pilot)
        panel = app.query_one("#results")
        assert panel.size.width >= 38, panel.size
        rows = [row.split("│")[-1].strip() for row in screen_lines(app)]
        held = [r for r in rows if "CausalMultiHead" in r or "forward_cached" in r]
        assert held, rows
        for row in held:  # whole, or cut at the dot: never inside a word
            assert (
                name in row
                or row.endswith("CausalMultiHeadAttention.")
                or row.startswith("forward_cached")
            ), held


async def test_at_100_by_30_a_failing_message_uses_the_room_there_is(make_app):
    """Issue #28, 7: at 100×30 failing messages were cut to four lines with room to spare."""
    app, broken = make_app("lab-02-broken", step_id="weights")
    async with app.run_test(size=(100, 30)) as pilot:
        app.apply_results(broken)
        await settle(pilot)
        await settle(pilot)
        assert app.message_lines() > 4
        assert t("ui.message_more", "en")[:12] not in " ".join(screen_lines(app))
    small, _ = make_app("lab-02-broken", step_id="weights")
    async with small.run_test(size=SIZE) as pilot:  # 80×24: four lines, as before
        small.apply_results(broken)
        await settle(pilot)
        assert small.message_lines() == 4


async def test_lab_02s_questions_appear_once_and_their_why_waits_for_the_answer(
    make_app, workspace
):
    """Issue #28: 实验 02's questions were printed twice, worded differently (lesson.toml and a
    **Question:** in exercises.md), and each result's explanation, the answer, stood above its
    question before it was answered."""
    app, results = make_app("lab-02", step_id="exercises")
    why = " ".join(t("lab-02.visual.ex1_why", "en").split())[:40]
    async with app.run_test(size=SIZE) as pilot:
        app.apply_results(results)
        await settle(pilot)
        text = " ".join(doc_text(app).split())
        assert "Question:" not in text
        asked = " ".join(app.step.questions["en"][0].split())[:40]
        assert text.count(asked) == 1, text
        assert why not in text
        await write_in_the_box(pilot, "1", "it collapses")
        assert why in " ".join(doc_text(app).split())


# ------------------------------------------------------------ a save runs only what it changed

LM3_READS = {
    "single-head": ("causal_attention",),
    "leakage": ("causal_attention",),
    "multi-head": ("CausalMultiHeadAttention",),
    "shapes": ("expected_shapes",),
}


class RecordingWorker:
    """Takes the app's runs without running them: the test hands back the verdicts."""

    proc = None

    def __init__(self):
        self.runs: list[list[str]] = []

    def submit(self, lesson, path, text, steps, params=None) -> int:
        self.runs.append(list(steps))
        return len(self.runs)

    def close(self) -> None:
        pass


async def test_a_save_runs_again_only_the_steps_whose_code_changed(make_app):
    import dataclasses

    from tutor.app.checking import WorkerEvent
    from tutor.engine.protocol import StepVerdict

    app, results = make_app("lm3-l3")
    source = app.path.read_text(encoding="utf-8")
    passes = {
        r.id: dataclasses.replace(r, reads=LM3_READS[r.id]) for r in results if r.id in LM3_READS
    }
    shapes_changed = source.replace(
        "def expected_shapes(B, T, H, hd):", "def expected_shapes(B, T, H, hd):\n    pass", 1
    )
    assert shapes_changed != source
    async with app.run_test(size=SIZE) as pilot:
        worker = RecordingWorker()
        app.worker, app.worker_state = worker, "ready"

        def deliver(*step_results):
            for r in step_results:
                app.on_worker_event(WorkerEvent(StepVerdict(len(worker.runs), r)))

        app.run_checks(source, source.encode())
        assert sorted(worker.runs[-1]) == sorted(LM3_READS)
        deliver(*passes.values())
        await settle(pilot)
        assert "checked steps of this lesson pass" in screen_text(app)
        app.run_checks(shapes_changed, shapes_changed.encode())
        assert worker.runs[-1] == ["shapes"]  # the other three: their passes, shown again
        assert app.running == {"shapes"}
        assert all(app.results[s].status == "pass" for s in LM3_READS)
        failed = dataclasses.replace(passes["shapes"], status="fail")
        deliver(failed)
        await settle(pilot)
        # The current step's verdict is the same; the line under it, all steps pass, is not.
        assert "checked steps of this lesson pass" not in screen_text(app)
        app.run_checks(source, source.encode())  # back as it was: shapes failed since, so it runs
        assert worker.runs[-1] == ["shapes"]
        deliver(passes["shapes"])
        app.run_checks(source, source.encode())  # the same again: nothing runs, all is shown
        assert worker.runs[-1] == [] and not app.running
        await settle(pilot)
        assert all(app.results[s].status == "pass" for s in LM3_READS)


async def test_the_learners_step_runs_first_and_its_verdict_is_drawn_at_once(make_app):
    """The others' verdicts are gathered into one frame (GATHER); the one on screen is not kept
    waiting for them."""
    import dataclasses

    from tutor.app.checking import WorkerEvent
    from tutor.engine.protocol import StepVerdict

    app, results = make_app("lm3-l3", step_id="multi-head")
    by_id = {r.id: r for r in results}
    source = app.path.read_text(encoding="utf-8")
    async with app.run_test(size=SIZE) as pilot:
        worker = RecordingWorker()
        app.worker, app.worker_state = worker, "ready"
        app.run_checks(source, source.encode())
        assert worker.runs[-1][0] == "multi-head"
        assert sorted(worker.runs[-1]) == sorted(LM3_READS)
        gen = len(worker.runs)
        other = dataclasses.replace(by_id["single-head"], status="fail")
        app.on_worker_event(WorkerEvent(StepVerdict(gen, other)))
        assert app.shown_status.get("single-head") != "fail"  # gathered: drawn later
        mine = dataclasses.replace(by_id["multi-head"], status="fail")
        app.on_worker_event(WorkerEvent(StepVerdict(gen, mine)))
        assert app.shown_status["multi-head"] == "fail"  # drawn now, the others still running
        assert app.shown_status["single-head"] == "fail"  # and what came before it with it
        assert app.running == {"leakage", "shapes"}
        await settle(pilot)
