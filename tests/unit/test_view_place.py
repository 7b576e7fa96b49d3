"""Where a step's view goes in its text (render.doc.split_for_view): at a line `<!-- view -->`
where the author put one, else after the first paragraph; the mark is never drawn."""

from __future__ import annotations

import io

from rich.console import Console

from tutor.render.doc import VIEW_MARK, render_markdown, split_for_view

TEXT = "First paragraph.\n\nSecond, about the view.\n\n{mark}\n\nThird, after it.\n"


def drawn(md: str) -> str:
    console = Console(width=60, record=True, file=io.StringIO())
    console.print(render_markdown(md))
    return console.export_text()


def test_the_view_goes_where_the_text_marks_it():
    intro, rest = split_for_view(TEXT.format(mark=VIEW_MARK))
    assert intro == "First paragraph.\n\nSecond, about the view."
    assert rest == "Third, after it."


def test_without_a_mark_the_view_follows_the_first_paragraph():
    intro, rest = split_for_view(TEXT.format(mark=""))
    assert intro == "First paragraph."
    assert "Second" in rest and "Third" in rest


def test_the_mark_is_never_drawn_even_twice_or_indented():
    body = f"One.\n\n  {VIEW_MARK}\n\nTwo.\n\n{VIEW_MARK}\n\nThree."
    intro, rest = split_for_view(body)
    assert (intro, rest.split()) == ("One.", ["Two.", "Three."])
    assert VIEW_MARK not in drawn(intro) + drawn(rest)
