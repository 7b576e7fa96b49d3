"""The kit's source attributes (tutor.kit.source_attributes): state stored on an object in a
step function, found in a method or a nested function, with its line; and an attribute read."""

from __future__ import annotations

from tutor.kit import attribute_store, reads_attribute

STEP = frozenset({"forward_cached", "generate"})
SOURCE = """
class Layer:
    def forward(self, x):
        self.seen = x  # not a step function
        return x[self.mask]

    def forward_cached(self, x, cache=None):
        k = x
        self.k_cache = k
        return x, (k,)


def generate(layer, x):
    layer.last += 1
    return x
"""


def test_the_first_store_on_self_in_a_step_function():
    found = attribute_store(SOURCE, STEP)
    assert (found.line, found.code) == (9, "self.k_cache = k")


def test_owners_name_the_object_in_a_function_that_gets_it():
    found = attribute_store(SOURCE, frozenset({"generate"}), frozenset({"layer"}))
    assert (found.line, found.code) == (14, "layer.last += 1")
    assert attribute_store(SOURCE, frozenset({"generate"})) is None


def test_none_without_a_store_or_for_a_file_that_does_not_parse():
    right = "def forward_cached(self, x, cache=None):\n    k = self.W_k(x)\n    return k, (k,)\n"
    assert attribute_store(right, STEP) is None
    assert attribute_store("def forward_cached(:\n", STEP) is None


def test_reads_attribute():
    assert reads_attribute(SOURCE, "forward", "mask")
    assert not reads_attribute(SOURCE, "forward_cached", "mask")
    assert not reads_attribute("def (", "forward", "mask")
