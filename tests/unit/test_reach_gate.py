"""The watch on the checks' own code (probe_tools._Borrowed) is on only for files whose code
names a way to reach what they were not given: never for the references, always for a file
that walks frames, however it spells the attribute."""

from __future__ import annotations

from pathlib import Path

import pytest

from tutor.kit import probe_tools

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["lm3_l3.py", "lab_02.py", "kv_cache.py"])
def test_the_references_run_without_the_watch(name):
    source = (ROOT / "reference" / name).read_text(encoding="utf-8")
    assert not probe_tools._reaches(source, name)


@pytest.mark.parametrize(
    "body",
    [
        "import sys\ndef f():\n    return sys._getframe(1).f_globals",
        "import inspect\ndef f():\n    return inspect.stack()",
        "def f(g):\n    return g.__globals__",
        "def f(g):\n    return getattr(g, '__glo' + 'bals__')",
        "def f():\n    try:\n        1 / 0\n    except ZeroDivisionError as e:\n        return e.__traceback__.tb_frame",
        "import gc\ndef f():\n    return gc.get_objects()",
        "def f(layer):\n    return type(layer).__mro__",
        "def f(src):\n    return eval(src)",
    ],
)
def test_a_file_that_can_reach_runs_with_the_watch(body):
    assert probe_tools._reaches(body, "learner.py")


def test_a_file_that_does_not_compile_is_watched():
    assert probe_tools._reaches("def f(:\n", "learner.py")
