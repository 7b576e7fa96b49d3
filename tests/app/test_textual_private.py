"""What each use of Textual's private API (tutor.app.textual_private) relies on, and the one the
app replaced with its own code (breakpoint_class): a Textual release that changes one fails here.
Small apps of their own, no worker, no lesson."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.clock import Clock
from textual.geometry import Size
from textual.widgets import OptionList, ProgressBar
from textual.widgets.option_list import Option

from tutor.app.app import TutorApp, breakpoint_class
from tutor.app.textual_private import (
    Bar,
    OneOptionRepaint,
    SelfScrollingStatic,
    progress_clock,
)
from tutor.app.widgets import PassBar, Progress


def line_text(widget: OptionList, y: int) -> str:
    return "".join(segment.text for segment in widget.render_line(y)).strip()


class Counting(OneOptionRepaint):
    def __init__(self, *options: Option) -> None:
        super().__init__(*options, id="list")
        self.drawn: list[str | None] = []

    def option_lines(self, option, style):
        self.drawn.append(option.id)
        return super().option_lines(option, style)


class ListApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Counting(*(Option(f"option {c}", id=c) for c in "abcd"))


async def test_a_new_prompt_repaints_its_option_only_and_shows_at_once():
    app = ListApp()
    async with app.run_test(size=(40, 10)) as pilot:
        listed = app.query_one(Counting)
        await pilot.pause()
        assert [line_text(listed, y) for y in range(4)] == [f"option {c}" for c in "abcd"]
        listed.drawn.clear()
        listed.replace_option_prompt_at_index(2, "changed")
        assert listed.get_option_at_index(2).prompt == "changed"
        await pilot.pause()
        # The frame after it drew that option's lines only (through option_lines, the hook
        # StepList keeps its lines in): a full redraw would have drawn the others again.
        assert listed.drawn == ["c"]
        assert line_text(listed, 2) == "changed"
        assert [line_text(listed, y) for y in (0, 1, 3)] == ["option a", "option b", "option d"]


async def test_a_new_prompt_before_the_first_layout_is_drawn_when_laid_out():
    class Early(App[None]):
        def compose(self) -> ComposeResult:
            listed = Counting(Option("one", id="one"), Option("two", id="two"))
            listed.replace_option_prompt_at_index(1, Text("second"))
            yield listed

    app = Early()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        assert line_text(app.query_one(Counting), 1) == "second"


class Ranged(SelfScrollingStatic):
    def __init__(self) -> None:
        super().__init__(id="ranged")
        self.regions: list[Size] = []

    def region_changed(self) -> None:
        self.regions.append(self.scrollable_content_region.size)


class RangedApp(App[None]):
    CSS = "#ranged { overflow-y: auto; height: 10; }"

    def compose(self) -> ComposeResult:
        yield Ranged()


async def test_a_self_scrolling_static_keeps_the_range_it_sets_and_hears_of_new_sizes():
    app = RangedApp()
    async with app.run_test(size=(40, 20)) as pilot:
        ranged = app.query_one(Ranged)
        await pilot.pause()
        assert ranged.regions and ranged.regions[-1].width > 0
        ranged.set_scroll_range(Size(30, 50))
        await pilot.pause()
        assert ranged.virtual_size == Size(30, 50)
        assert ranged.show_vertical_scrollbar
        assert ranged.max_scroll_y == 50 - ranged.scrollable_content_region.height
        ranged.scroll_to(y=ranged.max_scroll_y, animate=False, immediate=True)
        # A smaller range pulls scroll_y back inside it.
        ranged.set_scroll_range(Size(30, 12))
        await pilot.pause()
        assert ranged.scroll_y <= max(0, 12 - ranged.scrollable_content_region.height)
        # A new layout (the screen resized) keeps the range the widget set, and says so.
        heard = len(ranged.regions)
        await pilot.resize_terminal(30, 20)
        await pilot.pause()
        assert ranged.virtual_size == Size(30, 12)
        assert len(ranged.regions) > heard


class BarApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ProgressBar(total=4, id="plain", show_eta=False, show_percentage=False)
        yield Progress(total=4, id="ours")


async def test_our_progress_bar_draws_as_textuals_own_and_shares_its_clock():
    app = BarApp()
    async with app.run_test(size=(60, 6)) as pilot:
        plain, ours = app.query_one("#plain", ProgressBar), app.query_one("#ours", Progress)
        theirs_bar, our_bar = plain.query_one(Bar), ours.query_one(Bar)
        assert isinstance(our_bar, PassBar) and not isinstance(theirs_bar, PassBar)
        assert isinstance(progress_clock(ours), Clock)
        for done in (1, 3, 1, 4):  # back to a look drawn before: PassBar's kept line
            plain.update(progress=done)
            ours.update(progress=done)
            await pilot.pause()
            assert our_bar.percentage == pytest.approx(done / 4)
            assert our_bar.size == theirs_bar.size
            assert our_bar.render_line(0).text == theirs_bar.render_line(0).text


@pytest.mark.parametrize(
    ("size", "horizontal", "vertical"),
    [
        (0, "-narrow", "-short"),
        (35, "-narrow", "-short"),
        (36, "-narrow", "-tall"),
        (71, "-narrow", "-tall"),
        (72, "-normal", "-tall"),
        (99, "-normal", "-tall"),
        (100, "-wide", "-tall"),
        (120, "-xwide", "-tall"),
        (500, "-xwide", "-tall"),
    ],
)
def test_breakpoint_class_is_the_largest_breakpoint_reached(size, horizontal, vertical):
    assert breakpoint_class(size, TutorApp.HORIZONTAL_BREAKPOINTS) == horizontal
    assert breakpoint_class(size, TutorApp.VERTICAL_BREAKPOINTS) == vertical
    assert breakpoint_class(size, [(100, "b"), (0, "a"), (60, "c")]) == (
        "b" if size >= 100 else "c" if size >= 60 else "a"
    )
    assert breakpoint_class(size, [(40, "x")]) == ("x" if size >= 40 else None)


class Sized(App[None]):
    HORIZONTAL_BREAKPOINTS = TutorApp.HORIZONTAL_BREAKPOINTS
    VERTICAL_BREAKPOINTS = TutorApp.VERTICAL_BREAKPOINTS


@pytest.mark.parametrize("size", [(60, 20), (80, 24), (100, 40), (130, 50)])
async def test_the_classes_textual_puts_on_a_screen_are_breakpoint_class(size):
    # TutorApp.compose sets them before Textual does (after the first layout): the same ones.
    app = Sized()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        width, height = size
        names = {n for _, n in Sized.HORIZONTAL_BREAKPOINTS + Sized.VERTICAL_BREAKPOINTS}
        assert set(app.screen.classes) & names == {
            breakpoint_class(width, Sized.HORIZONTAL_BREAKPOINTS),
            breakpoint_class(height, Sized.VERTICAL_BREAKPOINTS),
        }
