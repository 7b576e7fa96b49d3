"""Wrapping by cell width: Chinese, mixed and punctuation-heavy paragraphs."""

from __future__ import annotations

import re

import pytest
from rich.cells import cell_len
from rich.text import Text

from tutor.render.wrap import CLOSE, OPEN, wrap_cells, wrap_text

CHINESE = (
    "因果注意力要求每个位置只能读取它之前的位置，包括它自己，而不能读取未来的位置。"
    "为此，我们在做归一化之前，把上三角部分的分数设为负无穷，这样指数之后它们的权重恰好为零。"
    "缩放项控制点积的方差，使得维度增大时分布不会过于尖锐。"
)
MIXED = (
    "实现 `causal_attention(x, Wq, Wk, Wv)`，返回 `(out, weights)`。其中 weights 的形状是"
    "`(B, T, T)`，每一行之和为 1；用 torch.softmax 沿最后一维归一化，再与 "
    "`F.scaled_dot_product_attention(q, k, v, is_causal=True)` 比较，误差应小于 1e-5。"
    "Apply the mask before the softmax, not after it."
)
PUNCT = (
    "注意：“遮罩”必须在 softmax 之前！为什么？因为——"
    "如果之后再遮罩，每行之和就不再是 1。（见第 3 步。）「对角线」呢？"
    "……它保留；《练习》2、3、4，都要做。Yes, really: do it (now)!"
)
TEXTS = {"chinese": CHINESE, "mixed": MIXED, "punct": PUNCT}
WIDTHS = (20, 40, 76)


def _latin_words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9_.]+", text)


def _code_spans(text: str) -> list[str]:
    return re.findall(r"`[^`]*`", text)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", TEXTS)
def test_lines_fit_and_obey_kinsoku(name, width):
    text = TEXTS[name]
    lines = wrap_cells(text, width)
    assert len(lines) > 1
    for line in lines:
        assert cell_len(line) <= width, line
        assert line and line[0] not in CLOSE, f"line starts with closing punctuation: {line!r}"
        assert line[-1] not in OPEN, f"line ends with an opening bracket: {line!r}"
        assert line == line.strip(), "spaces at a break are dropped"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", TEXTS)
def test_nothing_lost_but_break_spaces(name, width):
    text = TEXTS[name]
    lines = wrap_cells(text, width)
    assert _rejoin(lines, text)


def _rejoin(lines: list[str], text: str) -> bool:
    """Joining the lines, with the spaces dropped at each break put back, gives the text."""
    pos = 0
    for line in lines:
        while text[pos] == " ":
            pos += 1
        assert text.startswith(line, pos), (line, text[pos : pos + 20])
        pos += len(line)
    return text[pos:].strip() == ""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", TEXTS)
def test_latin_words_and_code_stay_whole(name, width):
    text = TEXTS[name]
    lines = wrap_cells(text, width)
    joined = "\n".join(lines)
    for word in _latin_words(text):
        if cell_len(word) <= width:
            assert re.search(rf"(?<![A-Za-z0-9_.]){re.escape(word)}", joined), word
    for code in _code_spans(text):
        if cell_len(code) <= width:
            assert any(code in line for line in lines), code


def test_chinese_breaks_between_characters():
    lines = wrap_cells(CHINESE, 20)
    # No spaces in the text, yet every full line is filled to the edge (or one
    # short of it, when kinsoku pulled a character down).
    assert all(cell_len(line) >= 16 for line in lines[:-1])


def test_closing_punctuation_pulls_previous_char_down():
    # At width 10, "五" would end line 1 and "。" start line 2: both go down.
    assert wrap_cells("一二三四五。六七八", 10) == ["一二三四", "五。六七八"]
    assert wrap_cells("一二三四「五六七八", 10) == ["一二三四", "「五六七八"]
    assert wrap_cells("hello world, again", 11) == ["hello", "world,", "again"]


def test_word_wider_than_line_is_cut():
    assert wrap_cells("abcdefghijklmnopqrstuvwxyz", 10) == ["abcdefghij", "klmnopqrst", "uvwxyz"]


def test_newlines_are_hard_breaks():
    assert wrap_cells("甲乙\n\nabc", 8) == ["甲乙", "", "abc"]


@pytest.mark.parametrize("width", WIDTHS)
def test_wrap_text_keeps_styles(width):
    text = Text()
    text.append("因果注意力", "bold")
    text.append("要求每个位置只能读取它之前的位置，调用 ")
    start = len(text)
    text.append("torch.softmax(scores, dim=-1)", "red")
    end = len(text)
    text.append(" 之后每行之和为 1。" * 3)
    lines = wrap_text(text, width, [(start, end)])
    assert all(cell_len(line.plain) <= width for line in lines)
    # Styles survive the split: the bold and the red parts are still styled.
    bold = "".join(
        line.plain[s.start : s.end] for line in lines for s in line.spans if s.style == "bold"
    )
    red = "".join(
        line.plain[s.start : s.end] for line in lines for s in line.spans if s.style == "red"
    )
    assert bold == "因果注意力"
    assert red == "torch.softmax(scores, dim=-1)"
    if width >= 29:  # the atomic span fits, so it stays on one line
        assert any("torch.softmax(scores, dim=-1)" in line.plain for line in lines)


@pytest.mark.slow
def test_the_ascii_shortcut_breaks_where_the_general_rules_break():
    """Printable ASCII takes a regex path; it must find the breaks the general loop finds."""
    import random
    from unittest import mock

    from tutor.render import wrap

    rng = random.Random(7)
    alphabet = "ab  (),.;:!?[]{}%`x"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        atomic = tuple(wrap.code_spans(text))
        units, cands, cell_at = wrap._breaks(text, atomic)
        assert units is None, text  # the shortcut was taken
        _, want_cands, want_cells = wrap._breaks_any(text, atomic)
        assert (cands, list(cell_at)) == (want_cands, want_cells), text
        for width in (1, 3, 7, 12):  # the narrow ones cut words too (_hard_break)
            fast = wrap._line_spans.__wrapped__(text, width, atomic)
            with mock.patch.object(wrap, "_breaks", wrap._breaks_any):
                assert fast == wrap._line_spans.__wrapped__(text, width, atomic), (text, width)


@pytest.mark.parametrize(
    "text,formula",
    [
        (
            "成 H 个较窄的头并行计算，每个头的宽度为 head_dim = d_out / H，最后拼接起来。",
            "head_dim = d_out / H",
        ),
        ("熵为 0 表示权重全部集中在一个键上；第 i 行共有 i + 1 个可见的键。", "i + 1"),
        ("字节）。每层分数个数 = 12·T²，内存 = 4·12·T² / 10⁶ MB。", "4·12·T² / 10⁶ MB"),
        (
            "The lab's table: scores per layer = 12·T², memory = 4·12·T² / 10⁶ MB, for one sequence.",
            "4·12·T² / 10⁶ MB",
        ),
        (
            "Multi-head attention runs H narrower heads, each of width head_dim = d_out / H, and more.",
            "head_dim = d_out / H",
        ),
    ],
)
@pytest.mark.parametrize("width", range(14, 60))
def test_an_inline_formula_never_breaks_at_its_spaces(text, formula, width):
    if cell_len(formula) + 10 > width:  # room for the formula and the word it hangs on ("memory =")
        return
    lines = wrap_cells(text, width)
    assert any(formula in line for line in lines), (width, lines)


def test_a_no_break_space_never_breaks():
    text = "单单一层的分数，到 T = 8192\u00a0时就要 3.2 GB。" * 2
    for width in range(10, 40):
        lines = wrap_cells(text, width)
        assert not any(line.startswith("时") for line in lines), (width, lines)
        assert "".join(lines).count("\u00a0") == 2


def test_a_name_too_long_for_the_line_is_cut_where_its_parts_meet():
    """Issue #28, 7: `CausalMultiHeadAttention.forwa` / `rd_cached` at 120×40."""
    from tutor.render.wrap import wrap_cells

    name = "`CausalMultiHeadAttention.forward_cached`"
    assert wrap_cells(f"Expected {name} to return", 30) == [
        "Expected",
        "`CausalMultiHeadAttention.",
        "forward_cached` to return",
    ]
    assert wrap_cells("see `a_very_long_function_name_here`", 20) == [
        "see",
        "`a_very_long_",
        "function_name_here`",
    ]
    assert wrap_cells("x CausalMultiHeadAttention", 20) == ["x", "CausalMultiHead", "Attention"]
    assert wrap_cells("x " + "a" * 30, 20) == ["x", "a" * 20, "a" * 10]  # no part: by cells


def test_no_line_splits_a_whole_term_of_the_lessons_chinese_texts():
    """因果 | 自注意力 and 上一 | 步 read as two words (language review, item 44): over every
    paragraph of every lesson's Chinese text, at every width from 20 to 60 cells, no line ends
    inside one of wrap.WHOLE_TERMS."""
    from pathlib import Path

    from tutor.render.wrap import _TERMS, line_spans

    root = Path(__file__).resolve().parents[2] / "lessons"
    paragraphs = [
        line
        for path in sorted(root.glob("*/text/zh/*.md"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if _TERMS.search(line)
    ]
    assert len(paragraphs) > 20  # the property is about real texts: there are some
    split = []
    for para in paragraphs:
        terms = [m.span() for m in _TERMS.finditer(para)]
        for width in range(20, 61):
            ends = {end for _, end in line_spans(para, width)[:-1]}
            split += [(para[a:b], width) for a, b in terms if any(a < e < b for e in ends)]
    assert split == []
