"""The app on a notebook (issue #30), with the real worker: the seed notebook as handed out is
`todo`; a save with a syntax error in a TODO cell is said in that cell, in both languages; a
save caught half written gives no verdict; `R` leaves the notebook alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_app_behaviour import SIZE, screen_text, settle, wait_for

from tutor.model.lesson import get_lesson
from tutor.text.i18n import t
from tutor.workspace.store import Store

SEED = Path("/work/shared/seeds/000_cb42ea30ea1af979.txt")
pytestmark = pytest.mark.skipif(not SEED.exists(), reason="the notebooks are not on this machine")


def _with_cell_6(code: str) -> str:
    data = json.loads(SEED.read_text(encoding="utf-8"))
    data["cells"][5]["source"] = code.splitlines(keepends=True)  # causal_attention's TODO cell
    return json.dumps(data, indent=1)


async def test_the_app_checks_a_notebook_and_says_its_cells(workspace):
    from tutor.app.app import TutorApp

    path = workspace / "lab.ipynb"
    path.write_bytes(SEED.read_bytes())
    lesson = get_lesson("lm3-l3")
    app = TutorApp(
        lesson=lesson, path=path, created=False, step_id="single-head", lang="en",
        store=Store(workspace),
    )  # fmt: skip
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(app.results) >= 4 and not app.running, 60)
        assert {app.results[s.id].status for s in lesson.checked_steps} == {"todo"}
        broken = _with_cell_6("def causal_attention(x, Wq, Wk, Wv):\n    T = x.shape[-2\n")
        with open(path, "w", encoding="utf-8") as f:  # VS Code: truncate, then write, in parts
            f.write(broken[:50])
            f.flush()
            await pilot.pause(0.01)
            f.write(broken[50:])
        await wait_for(pilot, lambda: app.results["single-head"].status == "error", 60)
        await settle(pilot)
        for step in app.results.values():  # never the half-written JSON's error
            assert all(c.message is None or "notebook" not in c.message.key for c in step.checks)
        assert "line 2 of cell 6" in screen_text(app)
        await pilot.press("l")
        await settle(pilot)
        assert "第 6 个单元格的第 2 行" in screen_text(app)
        before = path.read_bytes()
        await pilot.press("R")
        await settle(pilot)
        assert path.read_bytes() == before
        assert any(t("ui.reset_notebook", "zh") in str(n.message) for n in app._notifications)
