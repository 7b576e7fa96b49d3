"""The results panel's content: where the first failure and the newest hint are drawn."""

from __future__ import annotations

import io

from rich.console import Console

from tutor.model.results import Check, StepResult
from tutor.render.verdicts import ANCHOR, hints_block, step_results

HINTS = ("First hint.", "Second hint.", "Third hint.")


def lines(renderable, width=50) -> list[tuple[str, set]]:
    """(text, anchors) per line drawn."""
    console = Console(width=width, file=io.StringIO(), color_system=None)
    out = []
    for line in console.render_lines(renderable, pad=False):
        anchors = {seg.style.meta.get(ANCHOR) for seg in line if seg.style is not None} - {None}
        out.append(("".join(seg.text for seg in line).rstrip(), anchors))
    return out


def failing() -> StepResult:
    return StepResult(
        "weights",
        "fail",
        checks=[
            Check("shape", "pass"),
            Check("future-is-zero", "fail"),
            Check("finite", "pass"),
            Check("rows-sum-to-1", "fail"),
        ],
    )


def test_the_first_failing_check_is_anchored_and_the_hints_follow_the_failures():
    drawn = lines(step_results(failing(), "en", hints=hints_block(HINTS, 2, "en")))
    texts = [text for text, _ in drawn]
    failure = [i for i, (_, anchors) in enumerate(drawn) if "failure" in anchors]
    hint = [i for i, (_, anchors) in enumerate(drawn) if "hint" in anchors]
    assert (
        failure and texts[failure[0]].startswith("✗ ") and failure[0] == 1
    )  # under the status line
    assert all(texts[i].startswith(("✗", "  ")) for i in failure)  # the first failing check only
    # The hints oldest first (the newest anchored), under both failures, then a rule, then the
    # checks that pass.
    assert hint and texts[hint[0]].startswith("Hint 2/3: Second hint.")
    first_hint = next(i for i, text in enumerate(texts) if text.startswith("Hint 1/3"))
    passes = [i for i, text in enumerate(texts) if text.startswith("✓")]
    fails = [i for i, text in enumerate(texts) if text.startswith("✗ ")]
    assert max(fails) < first_hint < hint[0] < min(passes)
    assert set(texts[min(passes) - 1]) == {"─"}


def test_no_hints_no_rule_and_a_pass_has_no_failure_anchor():
    drawn = lines(step_results(failing(), "en"))
    assert not any(set(text) == {"─"} for text, _ in drawn)
    passed = StepResult("weights", "pass", checks=[Check("shape", "pass")])
    drawn = lines(step_results(passed, "en", hints=hints_block(HINTS, 1, "en")))
    assert not any("failure" in anchors for _, anchors in drawn)
    assert any("hint" in anchors for _, anchors in drawn)
    assert [text for text, _ in drawn][-1].startswith("✓")
