"""The step-text renderer: widths, CJK wrapping, lists, code blocks, NO_COLOR."""

from __future__ import annotations

import io

import pytest
from rich.cells import cell_len
from rich.console import Console

from tutor.render.doc import parse, render_markdown
from tutor.render.wrap import CLOSE

MD_ZH = """\
# 实验 02：从公式实现因果注意力

**运行条件：** CPU，约 1 分钟，内存低于 1 GB。

## 1. 缩放点积和因果遮罩

缩放项 $\\sqrt{d_k}$ 控制点积方差；上三角遮罩阻止当前位置读取
未来 token。实现 `causal_attention(x, Wq, Wk, Wv)`，返回 `(out, weights)`，
其中 `weights` 的形状是 `(B, T, T)`，每一行之和为 1。

1. 删除缩放项，增大 `head_dim`，比较 softmax 熵。
2. 把因果遮罩对角线改为 `diagonal=0`，解释为什么当前 token 也无法读取自己。

```python
scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
weights = torch.softmax(scores, dim=-1)
```

> 未知的结构原样显示。
"""

MD_EN = """\
## 2. TODO: single-head causal attention

Given `x` of shape `(B, T, d_in)` and three projection matrices `Wq, Wk, Wv`
of shape `(d_in, d_k)`:

1. `q = x @ Wq`, `k = x @ Wk`, `v = x @ Wv`, each of shape `(B, T, d_k)`.
2. Set the scores of future positions (column index greater than row index) to `-inf` **before** the softmax.
   This line continues the item.
- a bullet with *emphasis*

Return `(out, weights)`.
"""


def render(md: str, width: int, color_system: str | None = "truecolor") -> list[str]:
    console = Console(
        width=width,
        record=True,
        color_system=color_system,
        force_terminal=color_system is not None,
        file=io.StringIO(),
    )
    console.print(render_markdown(md))
    return console.export_text(styles=False).rstrip("\n").split("\n")


@pytest.mark.parametrize("color_system", [None, "256", "truecolor"])
@pytest.mark.parametrize("width", [40, 76])
@pytest.mark.parametrize("md", [MD_ZH, MD_EN], ids=["zh", "en"])
def test_no_line_wider_than_console(md, width, color_system):
    lines = render(md, width, color_system)
    assert all(cell_len(line) <= width for line in lines), [
        text for text in lines if cell_len(text) > width
    ]


def test_cjk_paragraph_wraps_between_characters():
    lines = render(MD_ZH, 40)
    para = [text for text in lines if text.startswith("缩放项")]
    assert para, lines
    start = lines.index(para[0])
    # The paragraph is broken inside a run of Chinese (no spaces there) and
    # every line but the last is (nearly) full.
    first = lines[start]
    assert 36 <= cell_len(first) <= 40
    assert not any(text and text[0] in CLOSE for text in lines)


def test_soft_breaks_join_without_space_between_cjk():
    text = parse("甲乙丙\n丁戊\nand\nmore")[0].text
    assert text == "甲乙丙丁戊 and more"


def test_code_block_preserved_and_not_wrapped():
    lines = render(MD_ZH, 76)
    assert any("scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)" in text for text in lines)
    assert any("weights = torch.softmax(scores, dim=-1)" in text for text in lines)
    narrow = render(MD_ZH, 40)
    code = [text for text in narrow if "scores = q @" in text]
    assert len(code) == 1 and code[0].rstrip().endswith("…"), code  # cropped, marked, not wrapped


def test_lists_hang_and_inline_markup_is_consumed():
    lines = render(MD_EN, 40)
    item = next(i for i, text in enumerate(lines) if text.startswith("2. Set the scores"))
    assert lines[item + 1].startswith("   ") and lines[item + 1].strip()
    text = "\n".join(lines)
    assert "**" not in text and "*emphasis*" not in text and "• a bullet with emphasis" in text
    assert "`" not in text  # with colour, code is shown by its style, not by backticks


def test_no_color_keeps_structure():
    lines = render(MD_ZH, 76, color_system=None)
    assert lines[0] == "实验 02：从公式实现因果注意力"
    text = "\n".join(lines)
    assert "`causal_attention(x, Wq, Wk, Wv)`" in text  # without colour, backticks are the cue
    assert "> 未知的结构原样显示。" in text


def test_headings_are_bold_even_without_colour():
    console = Console(
        width=60,
        record=True,
        no_color=True,
        force_terminal=True,
        color_system="truecolor",
        file=io.StringIO(),
    )
    console.print(render_markdown("# Title\n\ntext"))
    html = console.export_html(inline_styles=True)
    assert "font-weight: bold" in html.split("Title")[0].rsplit("<span", 1)[-1]
