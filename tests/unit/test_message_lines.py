"""Failure messages a learner can read at 80×24: in the results panel at 80 columns, no failing
check takes more than four lines, in either language. The finding itself (the message without its
likely mistake) always fits whole; with a long likely mistake the panel cuts the message to four
lines and says that `f` shows the rest."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from tutor.model.results import Check, Message, StepResult
from tutor.render.doc import render_markdown
from tutor.render.verdicts import MESSAGE_LINES, marked, status_mark, step_results
from tutor.text import i18n
from tutor.text.i18n import placeholders, t

ROOT = Path(__file__).resolve().parents[2]
TCSS = (ROOT / "tutor" / "app" / "tutor.tcss").read_text(encoding="utf-8")


def panel_width(columns: int = 80) -> int:
    """The results panel's width at `columns`: the side bar, the panel's padding, a scrollbar."""
    side = int(re.search(r"#side\s*\{[^}]*?width:\s*(\d+);", TCSS).group(1))
    padding = re.search(r"#results\s*\{[^}]*?padding:\s*0 (\d+);", TCSS)
    return columns - side - 2 * int(padding.group(1)) - 2


WIDTH = panel_width()

# What the checks pass, as they pass it: names, shapes, a PyTorch error of the usual length.
PARAMS = dict(
    fn="causal_attention",
    kind="RuntimeError",
    line=10,
    code="scores = q @ k.T",
    detail="mat1 and mat2 shapes cannot be multiplied (12x8 and 16x8)",
    what="weights",
    expected="(2, 6, 6)",
    got="(2, 6, 4)",
    err="0.4067",
    where="(0, 5, 1)",
    tol="1e-5",
    name="causal_attention",
    origin="torch.nn.functional",
    arg="x",
    row=3,
    col=4,
    count=2,
    sizes="B=3, T=11, d_in=16, d_k=5",
    kernel="F.scaled_dot_product_attention",
    seconds=3,
    mb=1900,
    limit=2048,
    signal="SIGSEGV",
    byte="0xff",
    module="numpy",
    pos=5,
    T=6,
    n=6,
    key="scores",
    keys="scores, weights",
    t=4,
    p=0.1,
    shape="(2, 6, 8)",
    fewer=264,
    more=264,
    args="d_in=8, d_out=8, n_heads=2, context_length=16",
    attr="W_q",
    type="list",
    reason="",
    diff="T = 11 (6)",
    value=6,
    now="T = 11",
    ones="B",
    d_in=8,
    d_k=4,
    d_out=8,
    hd=4,
    width=8,
    lab_rank=4,
    rank=3,
    size=8,
    word_state="cache",  # a lesson's word for the state (the engine's is "state", as long)
)


def failure_keys() -> list[str]:
    """Every message a failing check can show: check.* and failure.*, the engine's and the lessons'."""
    keys = i18n.catalog("en")
    return sorted(k for k in keys if re.match(r"^([\w-]+\.)?(check|failure)\.", k))


def params_for(key: str, lang: str, likely) -> dict:
    out = {name: PARAMS.get(name, f"<{name}>") for name in placeholders(i18n.catalog(lang)[key])}
    if "likely" in out:
        out["likely"] = likely
    return out


def drawn_lines(renderable) -> list[str]:
    console = Console(
        width=WIDTH, file=io.StringIO(), force_terminal=True, color_system="truecolor"
    )
    return [
        "".join(seg.text for seg in line).rstrip()
        for line in console.render_lines(renderable, pad=False)
    ]


def longest_likely(lang: str) -> dict:
    cat = i18n.catalog(lang)
    key = max(
        (k for k in cat if re.match(r"^([\w-]+\.)?(likely|fallback)\.", k)),
        key=lambda k: len(cat[k]),
    )
    return {"key": key, "params": {n: PARAMS.get(n, n) for n in placeholders(cat[key])}}


def test_the_panel_is_as_wide_as_the_app_makes_it():
    assert WIDTH == 50  # 80 − side bar 26 − padding 2 − scrollbar 2


@pytest.mark.parametrize("lang", i18n.LANGS)
@pytest.mark.parametrize("key", failure_keys())
def test_the_finding_fits_four_lines_at_80_columns(key, lang):
    text = t(key, lang, **params_for(key, lang, ""))
    lines = drawn_lines(marked(status_mark("fail"), render_markdown(text)))
    assert len(lines) <= MESSAGE_LINES, (
        f"{lang}:{key} takes {len(lines)} lines at {WIDTH} columns:\n" + "\n".join(lines)
    )


@pytest.mark.parametrize("lang", i18n.LANGS)
@pytest.mark.parametrize("key", [k for k in failure_keys() if "{likely}" in i18n.catalog("en")[k]])
def test_with_a_long_likely_mistake_the_panel_cuts_the_message_and_says_so(key, lang):
    result = StepResult(
        "single-head",
        "fail",
        [Check("values", "fail", Message(key, params_for(key, lang, longest_likely(lang))))],
    )
    lines = drawn_lines(step_results(result, lang))[1:]  # under the status line
    assert len(lines) <= MESSAGE_LINES, "\n".join(lines)
    whole = drawn_lines(step_results(result, lang, full=True))[1:]
    if len(whole) > MESSAGE_LINES:
        assert lines[-1].strip() == t("ui.message_more", lang)
        assert lines[:-1] == whole[: MESSAGE_LINES - 1]
    else:
        assert lines == whole


def test_the_status_header_has_no_empty_slot():
    result = StepResult(
        "single-head", "fail", [Check("values", "fail", Message("likely.scale_none", {}))]
    )
    for lang in i18n.LANGS:
        header = drawn_lines(step_results(result, lang))[0]
        assert header == f"✗ {t('status.fail', lang)}", header
