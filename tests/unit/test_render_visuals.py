"""The view renderer (tutor.render.views) as pure functions: items in, lines of text out."""

from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console, Group

from tutor.model import view_items as v
from tutor.render.bars import bar
from tutor.render.views import (
    Context,
    Packed,
    Questions,
    by_question,
    draw_questions,
    draw_view,
    text_of,
)


def lines(renderables, width=60) -> list[str]:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(Group(*renderables))
    return [line.rstrip() for line in console.export_text(styles=False).rstrip("\n").split("\n")]


def test_texts_are_message_references_or_plain():
    assert text_of(v.text("ui.updating"), "en") == "updating…"
    assert text_of(v.text("ui.updating"), "zh") == "正在更新…"
    assert text_of("head_dim", "zh") == "head_dim" and text_of(12, "en") == "12"


def test_a_table_with_numbers_none_and_bars():
    view = [
        v.heading("Memory"),
        v.table(
            ["T", "MB", ""],
            [
                ["64", "0.2", v.bar(0.2, 50.3, "cyan", 6)],
                ["1024", None, v.bar(50.3, 50.3, "cyan", 6)],
            ],
            align=["right", "right", "left"],
        ),
    ]
    got = lines(draw_view(view, Context("en")))
    assert got[0] == "Memory"
    assert got[1].split() == ["T", "MB"]
    row_64, row_1024 = got[2], got[3]
    assert row_64.split()[:2] == ["64", "0.2"] and row_64.endswith("▏")  # tiny but visible
    assert row_1024.split()[:2] == ["1024", "—"] and row_1024.endswith("█" * 6)
    assert row_64.index("0.2") + 3 == row_1024.index("—") + 1  # numbers aligned right


def test_sections_are_set_apart_and_a_heading_keeps_its_block():
    view = [
        v.heading("One"),
        v.table(["a"], [["1"]]),
        v.note("said"),
        v.heading("Two"),
        v.note("more"),
    ]
    assert lines(draw_view(view, Context("en"))) == ["One", "a", "1", "", "said", "", "Two", "more"]


def test_keys_go_where_the_view_puts_them_and_unknown_kinds_are_skipped():
    view = [v.heading("H"), v.keys(), {"kind": "sparkline", "values": [1, 2]}, v.note("n")]
    got = lines(draw_view(view, Context("en", keys_line=Packed("Keys: ", ["1 heads: 12"]))))
    assert got == ["H", "Keys: 1 heads: 12", "n"]
    assert lines(draw_view(view, Context("en"))) == ["H", "n"]  # no settings: no line


def test_a_settings_line_breaks_only_between_settings():
    items = ["1 heads: 12", "2 batch: 1", "3 dtype: float32", "4 T: 64–1024"]
    got = lines([Packed("Keys: ", items)], width=40)
    assert got == ["Keys: 1 heads: 12 · 2 batch: 1 ·", "3 dtype: float32 · 4 T: 64–1024"]
    assert all(cell_len(line) <= 40 for line in got)


def test_heatmaps_and_rows():
    m = [[1.0, None], [0.5, 0.5]]
    view = [v.row(v.heatmap(m, "left"), v.heatmap(m, "right"))]
    narrow = "\n".join(lines(draw_view(view, Context("en", color_hint="none")), width=60))
    wide = lines(draw_view(view, Context("en", color_hint="none")), width=100)
    assert narrow.index("left") < narrow.index("right")  # one under the other
    assert any("left" in line and "right" in line for line in wide)  # side by side
    assert "NaN" in narrow and "query position ↓" in narrow


def test_an_after_answer_item_shows_under_its_question_only_once_answered_or_asked():
    view = [v.after_answer(2, v.note("head_dim = **64**"))]
    assert draw_view(view, Context("en")) == []  # never in the view's own flow
    questions = ("First?", "Second?")

    def shown(answers, show_model=False):
        q = Questions(questions, answers, ("m1", "m2"), show_model, "attn-lab/x-answers.md")
        return "\n".join(lines(draw_questions(q, Context("en"), by_question(view)), width=80))

    assert "head_dim" not in shown({})
    assert "head_dim" not in shown({0: "an answer to the first"})
    after = shown({1: "mine"})
    assert after.index("Second?") < after.index("mine") < after.index("head_dim = 64")
    asked = shown({}, show_model=True)
    assert (
        "head_dim = 64" in asked and "m2" not in asked
    )  # m: the numbers, not an unasked model answer


def test_a_with_question_item_shows_under_its_question_before_its_answer():
    view = [
        v.with_question(1, v.note("entropy **0.12**")),
        v.after_answer(1, v.note("the why")),
    ]
    assert draw_view(view, Context("en")) == []
    q = Questions(("First?", "Second?"), {}, ("m1", "m2"), False, "x-answers.md")
    text = "\n".join(lines(draw_questions(q, Context("en"), by_question(view)), width=80))
    assert text.index("First?") < text.index("entropy 0.12") < text.index("Press 1")
    assert text.index("entropy 0.12") < text.index("Second?") and "the why" not in text
    q.answers[0] = "Mine."
    text = "\n".join(lines(draw_questions(q, Context("en"), by_question(view)), width=80))
    assert text.index("entropy 0.12") < text.index("Mine.") < text.index("the why")


def test_two_notes_in_a_row_are_set_apart_by_a_blank_line():
    drawn = lines(draw_view([v.note("one"), v.note("two")], Context("en")), width=40)
    assert [line.strip() for line in drawn] == ["one", "", "two"]


def test_the_questions_say_truly_when_the_model_answer_appears():
    q = Questions(("Why?",), {}, ("Because.",), False, "attn-lab/l-answers.md")
    text = "\n".join(lines(draw_questions(q, Context("en")), width=100))
    assert "1 write an answer" in text and "attn-lab/l-answers.md" in text
    assert "Press 1 to write your answer; once you have, press m for the model answer." in text
    answered = Questions(("Why?",), {0: "Mine."}, ("Because.",), True, "f.md")
    assert "Because." in "\n".join(lines(draw_questions(answered, Context("en"))))


def test_bar_grows_and_never_vanishes():
    assert bar(50.3, 50.3) == "█" * 20
    assert bar(0.2, 50.3) == "▏"
    assert bar(0, 1) == "" and bar(1, 0) == ""
    assert bar(0.5, 1.0, 8) == "████"


def test_a_number_in_a_table_is_never_cut_short_and_headers_wrap_instead():
    from rich.console import Console

    from tutor.model import view_items as v
    from tutor.render.views import draw_table

    item = v.table(
        ["T", "cache MB", "FLOPs with the cache", "FLOPs recomputing", "ms"],
        [
            [16, "0.016", "2.2 M", "18.6 M", v.bar(1, 2)],
            [128, "0.131", "21.0 M", "1.4 G", v.bar(2, 2)],
        ],
    )
    console = Console(width=40, record=True, file=io.StringIO())
    console.print(draw_table(item, "en"))
    values = (
        console.export_text().rstrip("\n").splitlines()[-2:]
    )  # the rows, under a header that wrapped
    assert values[1].split()[:4] == ["128", "0.131", "21.0", "M"] and "1.4 G" in values[1]
    assert not any("…" in line for line in values)


def test_a_measured_bar_has_its_figure_beside_it_and_an_unmeasured_one_a_dash():
    """Issue #28, 6: kv-cache's time columns were bars with no numbers, a row not timed blank."""
    view = [
        v.table(
            ["T", "ms"],
            [
                ["16", v.bar(0.42, 27.5, "green", 6, label="0.42")],
                ["32", v.bar(27.5, 27.5, "green", 6, label="27.5")],
                ["64", v.bar(None, 27.5, "green", 6, label="")],
            ],
        )
    ]
    got = lines(draw_view(view, Context("en")))
    assert got[1].endswith(" 0.42") and got[2].endswith("█" * 6 + " 27.5"), got
    assert got[1].index("0.42") == got[2].index("27.5")  # the figures line up
    assert got[3].split() == ["64", "—"], got
    assert v.bar(None, 1.0) == {
        "kind": "bar",
        "value": None,
        "top": 1.0,
        "style": "green",
        "width": 8,
    }
