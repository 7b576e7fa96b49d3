"""The import contracts hold, over every module, and they bite.

The contracts are in pyproject.toml ([tool.importlinter]) and `lint-imports` checks them over
every module under tutor/, imports inside functions and indirect imports included. Here it runs
on this checkout, then on copies of the package with one deliberate violation each, where exactly
the contracts meant to catch it must break.

Two things import-linter cannot do are done here too: lessons' checks modules live in folders
that are no package names (lessons/lm3-l3/), so their imports are read with ast; and only a run
shows what the libraries themselves import (Textual, Rich, watchfiles are not analysed), so every
module the contracts keep torch-free is imported in a fresh interpreter.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tutor import toml

ROOT = Path(__file__).resolve().parents[2]
CONFIG = toml.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
CONTRACTS = {c["id"]: c for c in CONFIG["contracts"]}
TORCH_SIDE = set(CONTRACTS["torch-side"]["allowed_importers"])


def torch_side(module: str) -> bool:
    """A module the torch-side contract names, or one inside a package it names (the kit)."""
    return any(module == name or module.startswith(name + ".") for name in TORCH_SIDE)


def lint_imports_command() -> str:
    # The venv's own script first: PATH may hold another one, or none (python -m pytest).
    script = Path(sys.executable).with_name("lint-imports")
    found = str(script) if script.exists() else shutil.which("lint-imports")
    assert found, "lint-imports is missing: pip install '.[test]' installs import-linter"
    return found


def run_lint(root: Path) -> tuple[int, str, dict[str, str]]:
    """lint-imports on the package under root, with root's pyproject.toml: its exit code, its
    output and each contract's verdict by id."""
    env = dict(os.environ, PYTHONPATH=str(root))  # this copy of tutor, not an installed one
    found = subprocess.run(
        [sys.executable, "-c", "import tutor; print(tutor.__file__)"],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(found.stdout.strip()) == root / "tutor" / "__init__.py"
    done = subprocess.run(
        [lint_imports_command(), "--no-cache", "--no-logo", str(root / "pyproject.toml")],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    by_name = {c["name"]: i for i, c in CONTRACTS.items()}
    verdicts = {}
    for line in output.splitlines():
        match = re.fullmatch(r"(.+) (KEPT|BROKEN)", line.strip())
        if match and match[1] in by_name:
            verdicts[by_name[match[1]]] = match[2]
    return done.returncode, output, verdicts


def test_the_contracts_hold_on_this_checkout():
    code, output, verdicts = run_lint(ROOT)
    assert code == 0, output
    assert verdicts == dict.fromkeys(CONTRACTS, "KEPT"), output
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in output


def test_every_module_under_tutor_is_in_the_graph():
    # A folder without __init__.py still imports (a namespace package) but import-linter would
    # not see it: no module may hide from the contracts.
    files = set()
    for path in (ROOT / "tutor").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        files.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    code = "import grimp, json; print(json.dumps(sorted(grimp.build_graph('tutor', cache_dir=None).modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert set(json.loads(out.stdout)) == files
    assert len(files) > 30


def test_the_torch_side_is_named_alike_everywhere():
    protected = set(CONTRACTS["torch-side"]["protected_modules"])
    forbidden = set(CONTRACTS["ui-no-torch"]["forbidden_modules"])
    assert protected == TORCH_SIDE | {"torch"}
    assert forbidden == TORCH_SIDE | {"torch", "numpy"}


def _late_import(statement: str) -> str:
    """Appended to a module: an import inside a function, which only a call would run."""
    return f"\n\ndef _deliberate_violation():\n    {statement}\n"


# (what the violation is, files written (+ appends to a module), contracts that must break,
#  text the report must hold)
VIOLATIONS = {
    "a new module imports torch": (
        {"tutor/fresh.py": "import torch\n"},
        {"torch-side"},
        ["tutor.fresh -> torch"],
    ),
    "the UI client imports the worker, in a function": (
        {"tutor/engine/client.py": "+" + _late_import("from . import supervisor")},
        {"torch-side", "ui-no-torch"},
        ["tutor.engine.client -> tutor.engine.supervisor"],
    ),
    "a renderer reaches the torch side through a new module": (
        {
            "tutor/fresh.py": "from .engine.codec import Opaque\n",
            "tutor/render/heatmap.py": "+" + _late_import("from .. import fresh"),
        },
        {"torch-side", "ui-no-torch"},
        ["tutor.render.heatmap -> tutor.fresh", "tutor.fresh -> tutor.engine.codec"],
    ),
    # No module imports numpy, so only the forbidden contract can see this one.
    "the CLI's text output reaches numpy through a new module": (
        {
            "tutor/fresh.py": "import numpy as np\n",
            "tutor/cli/check_text.py": "+" + _late_import("from .. import fresh"),
        },
        {"ui-no-torch"},
        ["tutor.cli.check_text -> tutor.fresh", "tutor.fresh -> numpy"],
    ),
    "a new renderer imports Textual": (
        {"tutor/render/fresh.py": "from textual.widgets import Static\n"},
        {"render-no-textual", "textual-in-app"},
        ["tutor.render.fresh -> textual"],
    ),
    "a renderer imports the app (a module of it without Textual)": (
        {"tutor/render/wrap.py": "+" + _late_import("from ..app import trace")},
        {"render-no-textual", "app-from-cli"},
        ["tutor.render.wrap -> tutor.app.trace"],
    ),
    "a pure module imports Textual": (
        {"tutor/workspace/store.py": "+" + _late_import("from textual.message import Message")},
        {"textual-in-app"},
        ["tutor.workspace.store -> textual"],
    ),
}


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("checkout")
    shutil.copytree(ROOT / "tutor", root / "tutor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def test_every_contract_is_broken_by_some_violation():
    assert set().union(*(broken for _, broken, _ in VIOLATIONS.values())) == set(CONTRACTS)


@pytest.mark.slow
@pytest.mark.parametrize("violation", VIOLATIONS)
def test_a_violation_breaks_its_contracts(package_copy, tmp_path, violation):
    root = tmp_path / "checkout"
    shutil.copytree(package_copy, root)
    files, broken, report = VIOLATIONS[violation]
    for name, text in files.items():
        path = root / name
        if text.startswith("+"):
            assert path.exists(), name
            path.write_text(path.read_text(encoding="utf-8") + text[1:], encoding="utf-8")
        else:
            assert not path.exists(), name
            path.write_text(text, encoding="utf-8")
    code, output, verdicts = run_lint(root)
    assert code != 0, output
    assert verdicts == {i: "BROKEN" if i in broken else "KEPT" for i in CONTRACTS}, output
    for text in report:
        assert text in output, output


# Lessons ------------------------------------------------------------------------------------

# The engine modules a lesson's checks may import: the lesson kit.
LESSON_KIT = {"tutor.kit"}
# Besides the standard library, what the checks may use: the worker's own packages.
LESSON_PACKAGES = {"torch", "numpy"}


def _is_tutor_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def lesson_import_faults(source: str) -> list[str]:
    """What a checks module imports that it may not, one line each (line number: import)."""
    faults = []

    def check(line: int, name: str) -> None:
        top = name.split(".")[0]
        if top == "tutor":
            if name not in LESSON_KIT:
                faults.append(f"{line}: {name}")
        elif top not in sys.stdlib_module_names and top not in LESSON_PACKAGES:
            faults.append(f"{line}: {name}")

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                check(node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # where a lesson sits is the installer's business, not the lesson's
                faults.append(
                    f"{node.lineno}: relative import from {'.' * node.level}{node.module or ''}"
                )
                continue
            for alias in node.names:
                if node.module in LESSON_KIT:  # whatever the kit's __init__ hands out
                    continue
                # `from tutor.engine import codec` imports the module tutor.engine.codec
                name = f"{node.module}.{alias.name}"
                check(
                    node.lineno,
                    name
                    if node.module.startswith("tutor") and _is_tutor_module(name)
                    else node.module,
                )
        elif isinstance(node, ast.Call):
            func = node.func
            called = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if called in ("__import__", "import_module"):  # an import this test cannot follow
                faults.append(f"{node.lineno}: {called}(...)")
    return sorted(faults, key=lambda fault: int(fault.split(":")[0]))


LESSON_FOLDERS = sorted(p for p in (ROOT / "lessons").iterdir() if (p / "lesson.toml").is_file())


def test_lesson_folders_and_the_kit_are_found():
    assert {p.name for p in LESSON_FOLDERS} >= {"lm3-l3", "lab-02"}
    assert all(_is_tutor_module(name) for name in LESSON_KIT)


@pytest.mark.parametrize("folder", LESSON_FOLDERS, ids=lambda p: p.name)
def test_lesson_checks_import_only_the_lesson_kit(folder):
    source = (folder / "checks.py").read_text(encoding="utf-8")
    assert lesson_import_faults(source) == []
    # It does import the kit (its names, or the module): the test read real imports.
    assert "from tutor.kit import" in source or "from tutor import kit" in source


def test_lesson_import_faults_are_found():
    lm3 = (ROOT / "lessons" / "lm3-l3" / "checks.py").read_text(encoding="utf-8")
    lines = len(lm3.splitlines())
    extra = textwrap.dedent("""
        import tutor.kit.judge_tools as kit
        from tutor.engine import supervisor as worker
        from tutor.engine.codec import Opaque
        import tutor.render.heatmap
        from tutor.model import results
        from .helpers import shared
        import textual
        import importlib; importlib.import_module("tutor.app")
    """)
    assert lesson_import_faults(lm3 + extra) == [
        f"{lines + 2}: tutor.kit.judge_tools",
        f"{lines + 3}: tutor.engine.supervisor",
        f"{lines + 4}: tutor.engine.codec",
        f"{lines + 5}: tutor.render.heatmap",
        f"{lines + 6}: tutor.model.results",
        f"{lines + 7}: relative import from .helpers",
        f"{lines + 8}: textual",
        f"{lines + 9}: import_module(...)",
    ]


# A run ---------------------------------------------------------------------------------------

PROBE = textwrap.dedent("""
    import importlib, json, os, pkgutil, sys
    import tutor
    skip = set(sys.argv[1].split(","))

    def walk(path, prefix):  # pkgutil.walk_packages would import each package (the kit: torch)
        for info in pkgutil.iter_modules(path):
            yield prefix + info.name
            if info.ispkg:
                yield from walk([os.path.join(p, info.name) for p in path], prefix + info.name + ".")

    names = list(walk(tutor.__path__, "tutor."))
    imported = []
    for name in names:
        # __main__ runs the CLI; the torch side is the worker's
        inside = any(name == s or name.startswith(s + ".") for s in skip)  # a package's modules
        if name.rsplit(".", 1)[-1] != "__main__" and not inside:
            importlib.import_module(name)
            imported.append(name)
    print(json.dumps({"found": names, "imported": imported, "loaded": sorted(sys.modules)}))
""")


def probe(skip: set[str]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(sorted(skip))],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)


def top_level(modules) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.mark.slow
def test_a_run_of_every_torch_free_module_loads_no_torch_or_numpy():
    seen = probe(TORCH_SIDE)
    assert set(seen["found"]) >= TORCH_SIDE | {
        "tutor.app.app",
        "tutor.cli.main",
        "tutor.engine.client",
    }
    assert set(seen["imported"]) == {
        name for name in seen["found"] if not torch_side(name) and name != "tutor.__main__"
    }
    loaded = top_level(seen["loaded"])
    assert "textual" in loaded and "rich" in loaded  # the UI's libraries were really imported
    assert "torch" not in loaded
    assert "numpy" not in loaded


@pytest.mark.slow
def test_the_run_sees_torch_when_a_torch_side_module_is_imported():
    # The same run, the torch side's codec included: torch is loaded and the probe says so.
    seen = probe(TORCH_SIDE - {"tutor.engine.codec"})
    assert "tutor.engine.codec" in seen["imported"]
    assert "torch" in top_level(seen["loaded"])
