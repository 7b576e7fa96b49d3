"""The UI process must never import torch: its first screen would wait ~2 s for it."""

import subprocess
import sys

UI_MODULES = [
    "tutor.cli", "tutor.cli_text", "tutor.app.app", "tutor.app.main", "tutor.app.widgets", "tutor.app.help",
    "tutor.lesson", "tutor.i18n", "tutor.report", "tutor.results", "tutor.watch", "tutor.store",
    "tutor.workspace", "tutor.runner.client", "tutor.render.doc", "tutor.render.heatmap",
    "tutor.render.wrap", "tutor.render.verdicts", "tutor.render.memory",
]
PURE_MODULES = ["tutor.lesson", "tutor.i18n", "tutor.report", "tutor.results", "tutor.render.doc",
                "tutor.render.heatmap", "tutor.render.wrap", "tutor.render.verdicts", "tutor.render.memory"]


def _loaded_after_import(modules):
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_ui_modules_do_not_import_torch():
    loaded = _loaded_after_import(UI_MODULES)
    assert "torch" not in loaded
    assert "numpy" not in loaded


def test_pure_modules_do_not_import_textual():
    loaded = _loaded_after_import(PURE_MODULES)
    assert "textual" not in loaded
    assert "torch" not in loaded
