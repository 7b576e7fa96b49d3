"""origin.foreign_origin: is a step's function or class made by code compiled from the
learner's file? Wrappers from torch and the standard library are looked through to the
learner's function; anything else from elsewhere names where it comes from."""

from __future__ import annotations

import functools
import textwrap

import pytest
import torch

from tutor.engine.origin import code_ids, foreign_origin

FILE = "/tmp/attn-lab/lm3_l3.py"
SOURCE = textwrap.dedent("""
    import functools
    import torch
    import torch.nn as nn

    def plain(x, k):
        return x @ k.transpose(-2, -1)

    lam = lambda x, k: x @ k.transpose(-2, -1)

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return fn(*args)
        return wrapper

    @deco
    def decorated(x, k):
        return x @ k.transpose(-2, -1)

    cached = functools.lru_cache(maxsize=None)(plain)
    partial = functools.partial(plain)
    no_grad = torch.no_grad()(plain)
    scripted = torch.jit.script(plain)

    class Given(nn.Module):
        def __init__(self):
            super().__init__()

    class Layer(Given):
        @torch.enable_grad()
        def forward(self, x):
            return x

        @staticmethod
        def helper(x):
            return x

        @property
        def width(self):
            return 1

    class Callable:
        def __call__(self, x, k):
            return plain(x, k)

    instance = Callable()
    bound = Layer().forward
    static = Layer.helper

    def factory():
        def made(x, k):
            return plain(x, k)
        return made

    made = factory()

    class Empty(nn.Module):
        pass
""")


# The same text for code compiled elsewhere (TorchScript would want a file to read it from).
ELSEWHERE = SOURCE.replace("scripted = torch.jit.script(plain)\n", "")


@pytest.fixture(scope="module")
def learner(tmp_path_factory):
    path = tmp_path_factory.mktemp("lab") / "lm3_l3.py"
    path.write_text(SOURCE)  # TorchScript reads the function's source from the file
    code = compile(SOURCE, str(path), "exec")
    namespace = {"__name__": "learner", "__file__": str(path)}
    exec(code, namespace)
    return namespace, code_ids(code), code


MINE = [
    "plain",
    "lam",
    "decorated",
    "cached",
    "partial",
    "no_grad",
    "scripted",
    "Given",
    "Layer",
    "instance",
    "bound",
    "static",
    "made",
    "Empty",
]


@pytest.mark.parametrize("name", MINE)
def test_the_learners_own_code_in_any_wrapper_is_theirs(learner, name):
    namespace, ids, _ = learner
    assert foreign_origin(namespace[name], ids) is None


@pytest.mark.slow
def test_torch_compile_is_looked_through(learner):
    namespace, ids, _ = learner
    assert foreign_origin(torch.compile(namespace["plain"], backend="eager"), ids) is None


def test_the_same_source_compiled_again_is_not_the_files(learner):
    namespace, ids, code = learner
    again = {"__name__": "again"}
    exec(compile(SOURCE, code.co_filename, "exec"), again)  # the same text, the same file name
    for name in ("plain", "decorated", "Layer", "made", "instance"):
        assert foreign_origin(again[name], ids) is not None, name


def test_a_foreign_function_stays_foreign_whatever_its_wrapped_says(learner):
    namespace, ids, _ = learner
    other = {"__name__": "other"}
    exec(compile(ELSEWHERE, "<string>", "exec"), other)
    liar = other["plain"]
    liar.__wrapped__ = namespace["plain"]
    for value in (liar, functools.partial(other["plain"]), torch.no_grad()(other["plain"])):
        assert foreign_origin(value, ids) == "other (<string>)"


def test_a_class_inheriting_foreign_methods_is_foreign(learner):
    namespace, ids, _ = learner
    other = {"__name__": "other"}
    exec(compile(ELSEWHERE, "/elsewhere/reference.py", "exec"), other)

    class Renamed(other["Layer"]):
        pass

    assert foreign_origin(Renamed, ids) == "other (/elsewhere/reference.py)"
    assert (
        foreign_origin(type("Layer", (torch.nn.Module,), {"forward": other["Layer"].forward}), ids)
        == "other (/elsewhere/reference.py)"
    )


def test_library_functions_and_classes_name_where_they_come_from(learner):
    from tutor.kit import probe_tools

    _, ids, _ = learner
    # As a child judges them: with the kernel traps in place (they wrap nn.MultiheadAttention
    # and flex_attention), which must not be named as where the learner's name comes from.
    probe_tools.install_traps()
    assert foreign_origin(torch.triu, ids) == "torch.triu"
    assert (
        foreign_origin(torch.nn.MultiheadAttention, ids)
        == "torch.nn.modules.activation.MultiheadAttention"
    )
    assert foreign_origin(torch.nn.functional.softmax, ids).startswith("torch.nn.functional")
    from torch.nn.attention import flex_attention

    assert "probe_tools" not in foreign_origin(flex_attention.flex_attention, ids)
    assert foreign_origin(flex_attention.flex_attention, ids).startswith("torch.")
