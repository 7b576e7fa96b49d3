"""source_kit.qualified_name: a traceback frame's bare function name, dotted as the learner wrote it."""

import pytest

from tutor.kit.source_tools import qualified_name

SOURCE = """\
class Layer:
    def forward(self, x):
        return x

    def forward_cached(self, x, cache=None):
        def step(y):
            raise NotImplementedError("inner")
        return step(x)


def generate(layer, x):
    raise NotImplementedError("generation")
"""


@pytest.mark.parametrize(
    "line, function, expected",
    [
        (3, "forward", "Layer.forward"),
        (5, "forward_cached", "Layer.forward_cached"),  # the def line itself
        (7, "step", "Layer.forward_cached.step"),
        (8, "forward_cached", "Layer.forward_cached"),
        (12, "generate", "generate"),
        (12, "forward", None),  # a frame that does not match the source: no guess
        (10, "<module>", None),
        (99, "generate", None),
    ],
)
def test_the_def_holding_the_line_is_named_with_its_class(line, function, expected):
    assert qualified_name(SOURCE, line, function) == expected


def test_a_file_that_does_not_parse_names_nothing():
    assert qualified_name("def f(:\n    raise NotImplementedError\n", 2, "f") is None
