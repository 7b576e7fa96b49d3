"""Every use of Textual's private API, in one place (the reason for `textual<9`).

Each one is a speed-up of a frame that Textual 8's public API has no way to ask for. The app's
widgets subclass what is here and use only public names of it; tests/app/test_textual_private.py
pins the behaviour each use relies on, so a Textual release that changes one fails there first.
"""

from __future__ import annotations

from textual.clock import Clock
from textual.geometry import Size
from textual.strip import Strip
from textual.style import Style
from textual.visual import VisualType
from textual.widget import Widget
from textual.widgets import OptionList, ProgressBar, Static

# ProgressBar's bar widget, not exported: PassBar subclasses it to keep its drawn lines.
from textual.widgets._progress_bar import Bar
from textual.widgets.option_list import Option

__all__ = ["Bar", "OneOptionRepaint", "SelfScrollingStatic", "progress_clock"]


def progress_clock(progress: ProgressBar) -> Clock:
    """The clock a ProgressBar gives its bar (ProgressBar._clock: its compose passes it the
    same way), for a ProgressBar that composes a bar of its own."""
    return progress._clock


class OneOptionRepaint(OptionList):
    """An OptionList whose replace_option_prompt_at_index repaints that option only, for prompts
    that never change an option's height, and whose options' lines go through option_lines.

    OptionList's own replacement forgets every option's height and drawn lines, so a new prompt
    re-measures and redraws the whole list."""

    def _replace_option_prompt(self, index: int, prompt: VisualType) -> None:
        self.get_option_at_index(index)._set_prompt(prompt)
        self._option_render_cache.clear()  # a memo by option, now stale
        line = self._line_cache.index_to_line.get(index)
        if line is None:  # not laid out yet: nothing drawn to keep
            self._clear_caches()
        else:
            self.refresh_lines(line, self._line_cache.heights[index])

    def _get_option_render(self, option: Option, style: Style) -> list[Strip]:
        return self.option_lines(option, style)

    def option_lines(self, option: Option, style: Style) -> list[Strip]:
        """The option's lines as OptionList draws them; a subclass may keep them."""
        return super()._get_option_render(option, style)


class SelfScrollingStatic(Static):
    """A Static whose scroll range (virtual size) is set by the widget itself, as Textual's
    ScrollView's is, rather than measured by the compositor from its children: see
    set_scroll_range and region_changed."""

    is_scrollable = True  # a Static is not, and its scrollbars would never be drawn

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        # No children for the compositor to measure: keep the virtual size set_scroll_range set.
        resized = super()._size_updated(size, self.virtual_size, container_size, layout)
        self.region_changed()
        return resized

    def region_changed(self) -> None:
        """Called after each new size the layout gives the widget."""

    def set_scroll_range(self, size: Size) -> None:
        """A new virtual size: the scrollbars' thumbs, and scroll_y kept within the range."""
        self.set_reactive(Widget.virtual_size, size)
        self._scroll_update(size)
