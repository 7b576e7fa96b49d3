"""Wrong return values, hostile ones included, give a fail with a clear message: never a
judge crash (failure.judge) nor a harness error (failure.harness, "the tutor's fault").

The child encodes what came back with torch's C methods captured before learner code ran,
raw values of int/float/str subclasses, and Opaque (type name only) for anything else, so
a value's own methods (__eq__, __len__, __getattr__, __torch_function__...) never decide.
"""

from __future__ import annotations

import pytest
from reliability_kit import first_message, problem_keys, summary, with_code

TUTORS_FAULT = {"failure.judge", "failure.harness"}


def returning(expr: str, setup: str = "") -> str:
    return with_code(f"""
_original = causal_attention
{setup}
def causal_attention(x, Wq, Wk, Wv):
    out, weights = _original(x, Wq, Wk, Wv)
    return {expr}
""")


TUPLE_LIARS = """
class Lying(tuple):
    def __new__(cls, real, shown):
        self = super().__new__(cls, real)
        self.shown = shown
        return self
    def __getitem__(self, i): return self.shown[i]
    def __iter__(self): return iter(self.shown)

class LongerThanItSays(tuple):
    def __len__(self): return 2
    def __iter__(self): return iter(tuple.__getitem__(self, slice(0, 2)))

class ListPretendingTuple(list):
    __class__ = property(lambda self: tuple)
"""

HOSTILE = """
class Hostile:
    def __eq__(self, other): raise RuntimeError("eq")
    def __bool__(self): raise RuntimeError("bool")
    def __len__(self): raise RuntimeError("len")
    def __getattr__(self, name): raise RuntimeError("getattr " + name)
    def __iter__(self): raise RuntimeError("iter")
    def __repr__(self): raise RuntimeError("repr")

class Liar:
    __class__ = property(lambda self: tuple)  # isinstance(Liar(), tuple) is True
    def __len__(self): return 2
    def __getitem__(self, i): return torch.zeros(1)
    def __eq__(self, other): return True
    def __bool__(self): return True

class Sneaky(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError("no torch functions on me")
    shape = property(lambda self: (2, 6, 4))
    dtype = property(lambda self: torch.float32)

def unmasked(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    w = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
    return w @ v, w

def nested():
    a = [0] * 64
    for _ in range(8):
        a = [a] * 64  # 64**9 items when walked, a few KiB in memory
    return a
"""

CASES = {
    "none": ("None", "", "check.returns_pair"),
    "one-tuple": ("(out,)", "", "check.returns_pair"),
    "three-tuple": ("(out, weights, weights)", "", "check.returns_pair"),
    "numpy-arrays": ("(out.numpy(), weights.numpy())", "", "check.not_tensor"),
    "lists": ("(out.tolist(), weights.tolist())", "", "check.not_tensor"),
    "hostile-object": ("Hostile()", HOSTILE, "check.returns_pair"),
    "hostile-items": ("(Hostile(), Hostile())", HOSTILE, "check.not_tensor"),
    "object-claiming-to-be-a-tuple": ("Liar()", HOSTILE, "check.returns_pair"),
    "lying-tensor-subclass": (
        "tuple(t.as_subclass(Sneaky) for t in unmasked(x, Wq, Wk, Wv))",
        HOSTILE,
        "check.future",
    ),
    "generator": ("(t for t in (out, weights))", "", "check.returns_pair"),
    "huge-nested-list": ("nested()", HOSTILE, "check.returns_pair"),
    # Subclasses are read through the base type's own methods: what they hold is judged, not what
    # their methods claim.
    "tuple-subclass-whose-getitem-lies": (
        "Lying(unmasked(x, Wq, Wk, Wv), (out, weights))",
        HOSTILE + TUPLE_LIARS,
        "check.future",
    ),
    "tuple-subclass-of-three-claiming-two": (
        "LongerThanItSays((out, weights, weights))",
        HOSTILE + TUPLE_LIARS,
        "check.returns_pair",
    ),
    "list-subclass-claiming-to-be-a-tuple": (
        "ListPretendingTuple([out, weights])",
        TUPLE_LIARS,
        "check.returns_pair",
    ),
    "meta-tensors": ("(torch.empty(out.shape, device='meta'), weights)", "", "check.not_tensor"),
    "complex-tensors": ("(out.to(torch.complex64), weights)", "", "check.not_tensor"),
    "too-large-tensor": ("(torch.zeros(5_000_000), weights)", "", "check.not_tensor"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_wrong_return_value_fails_clearly(live, case):
    expr, setup, key = CASES[case]
    run = live.run("lm3-l3", returning(expr, setup), steps=["single-head", "shapes"])
    r = run.results["single-head"]
    assert r.status == "fail", summary(run.results)
    assert key in problem_keys(r), summary(run.results)
    assert not problem_keys(r) & TUTORS_FAULT, summary(run.results)
    assert run.results["shapes"].status == "pass", summary(run.results)


# Values of other Python types that are still what was asked: a namedtuple is a tuple, an
# OrderedDict a dict, whatever their methods do.
RIGHT_TYPES = {
    "namedtuple-pair": (
        "single-head",
        """
        import collections
        Pair = collections.namedtuple("Pair", "out weights")
        _original = causal_attention
        def causal_attention(x, Wq, Wk, Wv):
            return Pair(*_original(x, Wq, Wk, Wv))
        """,
    ),
    "typing-namedtuple-pair": (
        "single-head",
        """
        from typing import NamedTuple
        class Attended(NamedTuple):
            out: torch.Tensor
            weights: torch.Tensor
        _original = causal_attention
        def causal_attention(x, Wq, Wk, Wv):
            return Attended(*_original(x, Wq, Wk, Wv))
        """,
    ),
    "tuple-subclass-whose-methods-raise": (
        "single-head",
        """
        class Sealed(tuple):
            def __iter__(self): raise RuntimeError("no iterating")
            def __getitem__(self, i): raise RuntimeError("no indexing")
            def __len__(self): raise RuntimeError("no len")
            def __eq__(self, other): raise RuntimeError("no eq")
        _original = causal_attention
        def causal_attention(x, Wq, Wk, Wv):
            return Sealed(_original(x, Wq, Wk, Wv))
        """,
    ),
    "ordered-dict-of-namedtuple-shapes": (
        "shapes",
        """
        import collections
        Shape3 = collections.namedtuple("Shape3", "a b c")
        Shape4 = collections.namedtuple("Shape4", "a b c d")
        _original = expected_shapes
        def expected_shapes(B, T, H, hd):
            return collections.OrderedDict((k, (Shape3 if len(v) == 3 else Shape4)(*v))
                                           for k, v in _original(B, T, H, hd).items())
        """,
    ),
    "dict-subclass-whose-methods-raise": (
        "shapes",
        """
        class Sealed(dict):
            def __getitem__(self, key): raise RuntimeError("no getitem")
            def items(self): raise RuntimeError("no items")
            def keys(self): raise RuntimeError("no keys")
            def __iter__(self): raise RuntimeError("no iter")
            def __len__(self): raise RuntimeError("no len")
        _original = expected_shapes
        def expected_shapes(B, T, H, hd):
            return Sealed(_original(B, T, H, hd))
        """,
    ),
    "defaultdict-shapes": (
        "shapes",
        """
        import collections
        _original = expected_shapes
        def expected_shapes(B, T, H, hd):
            out = collections.defaultdict(tuple)
            out.update(_original(B, T, H, hd))
            return out
        """,
    ),
}


@pytest.mark.parametrize("case", list(RIGHT_TYPES))
def test_values_of_subclasses_of_what_was_asked_pass(live, case):
    step, code = RIGHT_TYPES[case]
    run = live.run("lm3-l3", with_code(code), steps=[step])
    assert run.results[step].status == "pass", summary(run.results)


def test_correct_values_in_a_tensor_subclass_pass(live):
    source = returning("(out.as_subclass(Sneaky), weights.as_subclass(Sneaky))", HOSTILE)
    run = live.run("lm3-l3", source, steps=["single-head"])
    assert run.results["single-head"].status == "pass", summary(run.results)


SHAPES_CASES = {
    "dict-subclass-whose-items-lie": """
        class Claims(dict):
            def items(self): return _original(2, 6, 2, 4).items()
            def __getitem__(self, key): return _original(2, 6, 2, 4)[key]
            def keys(self): return _original(2, 6, 2, 4).keys()
            def __contains__(self, key): return True
            def __len__(self): return 7
        _original = expected_shapes
        def expected_shapes(B, T, H, hd):
            return Claims(projected_q=(B, T, H * hd))
        """,
    "dict-subclass-that-raises": """
        class Shapes(dict):
            def __getitem__(self, key): raise RuntimeError("no")
            def __contains__(self, key): return True
        def expected_shapes(B, T, H, hd):
            return Shapes(projected_q=(B, T, H * hd))
        """,
    "values-that-lie": """
        class Anything:
            def __eq__(self, other): return True
            def __iter__(self): return iter((1, 2, 3))
            def __len__(self): return 3
        def expected_shapes(B, T, H, hd):
            keys = ("projected_q", "q_split_into_heads", "q_per_head", "scores", "weights",
                    "context_per_head", "context_merged")
            return {k: Anything() for k in keys}
        """,
    "a-huge-int": """
        _original = expected_shapes
        def expected_shapes(B, T, H, hd):
            return {k: (10**5000,) + v[1:] for k, v in _original(B, T, H, hd).items()}
        """,
    "int-subclass-that-lies": """
        class Two(int):
            def __eq__(self, other): return True
            def __index__(self): return 2
        _original = expected_shapes
        def expected_shapes(B, T, H, hd):
            return {k: tuple(Two(1) for _ in v) for k, v in _original(B, T, H, hd).items()}
        """,
}


@pytest.mark.parametrize("case", list(SHAPES_CASES))
def test_wrong_shapes_dict_fails_clearly(live, case):
    run = live.run("lm3-l3", with_code(SHAPES_CASES[case]), steps=["shapes"])
    r = run.results["shapes"]
    assert r.status == "fail", summary(run.results)
    assert not problem_keys(r) & TUTORS_FAULT, summary(run.results)


def test_exception_with_a_hostile_str_is_still_described(live):
    source = with_code("""
        class Weird(Exception):
            def __str__(self):
                raise RuntimeError("no text for you")
        def expected_shapes(B, T, H, hd):
            raise Weird()
        """)
    run = live.run("lm3-l3", source, steps=["shapes"])
    r = run.results["shapes"]
    assert r.status == "error" and first_message(r).key == "failure.exception", summary(run.results)
    assert first_message(r).params["kind"].endswith("Weird")


def test_learner_code_reached_by_the_probe_outside_a_call_is_the_learners_fault(live):
    # The probe reads the module's layers (getattr): a raising __getattr__ is the learner's error.
    source = with_code("""
        class CausalMultiHeadAttention(CausalMultiHeadAttention):
            def __getattr__(self, name):
                if name == "W_q":
                    raise KeyError("I hid W_q")
                return super().__getattr__(name)
        """)
    run = live.run("lm3-l3", source, steps=["multi-head"])
    r = run.results["multi-head"]
    assert r.status in ("error", "fail"), summary(run.results)
    assert not problem_keys(r) & TUTORS_FAULT, summary(run.results)
