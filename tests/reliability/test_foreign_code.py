"""Code that is not the learner's does not pass: the reference solution that ships inside the
package cannot be imported, read or dug out of memory by the learner's code, and a step's
function or class that their file did not make fails the step with its own check (own-code).

Every route here passed every step before issue #12 (see the commit that added this file).
Correct files in unusual styles (decorators, TorchScript, partials, lambdas, callable objects,
an inherited constructor) must still pass: tests/worker/test_correct_styles.py has more.
"""

from __future__ import annotations

import importlib.util
import textwrap

import pytest
from reliability_kit import CHECKED, REFERENCE, first_message, problem_keys, summary, with_code

LM3, LAB = "lm3-l3", "lab-02"
_ = textwrap.dedent
REF = "from tutor.paths import reference_dir\nREF = reference_dir() / 'lm3_l3.py'\n"
STEAL = REF + "import subprocess\nSTOLEN = subprocess.check_output(['cat', str(REF)]).decode()\n"

# The file fails to load with the refusal: one file-level message, the same in every step.
REFUSED = {
    "import-star": "from tutor.reference.lm3_l3 import *",
    "import-by-the-folder-name": "from reference.lm3_l3 import *",  # the checkout's root is on sys.path
    "import-of-a-checks-modules-name": "import attn_checks_lm3_l3",
    "importlib-import-module": """
        import importlib
        _m = importlib.import_module("tutor.reference.lm3_l3")
        causal_attention, expected_shapes = _m.causal_attention, _m.expected_shapes
        CausalMultiHeadAttention = _m.CausalMultiHeadAttention
        """,
    "exec-open": REF + "exec(open(REF).read())",
    "exec-pathlib-read-text": REF + "exec(REF.read_text())",
    "spec-from-file-location": REF
    + _("""
        import importlib.util
        _spec = importlib.util.spec_from_file_location("stolen", REF)
        _m = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_m)
        causal_attention, expected_shapes = _m.causal_attention, _m.expected_shapes
        CausalMultiHeadAttention = _m.CausalMultiHeadAttention
        """),
    "runpy-run-path": REF
    + _("""
        import runpy
        globals().update({k: v for k, v in runpy.run_path(str(REF)).items() if not k.startswith("__")})
        """),
    "runpy-run-module": """
        import runpy
        globals().update({k: v for k, v in runpy.run_module("tutor.reference.lm3_l3").items()
                          if not k.startswith("__")})
        """,
    # The judge's cache of its mutants' outputs holds the reference's outputs too.
    "the-judges-mutant-cache": """
        from tutor.paths import mutant_cache_dir
        KEPT = open(mutant_cache_dir() / "kept.bin", "rb").read()
        """,
    "pkgutil-get-data": """
        import pkgutil
        exec(pkgutil.get_data("tutor.reference", "lm3_l3.py").decode())
        """,
    "through-a-symlink": REF
    + _("""
        import os, tempfile
        _link = os.path.join(tempfile.mkdtemp(), "mine.py")
        os.symlink(REF, _link)
        exec(open(_link).read())
        """),
    "through-a-hard-link": REF
    + _("""
        import os, tempfile
        _link = os.path.join(tempfile.mkdtemp(), "mine.py")  # refused before the link is made
        os.link(REF, _link)
        exec(open(_link).read())
        """),
    "relative-path-after-chdir": REF
    + _("""
        import os
        os.chdir(REF.parent)
        exec(open("lm3_l3.py").read())
        """),
    "dir-fd-of-a-folder-above": REF
    + _("""
        import os
        _fd = os.open(REF.parent.parent, os.O_RDONLY)
        exec(os.read(os.open("reference/lm3_l3.py", os.O_RDONLY, dir_fd=_fd), 1 << 20).decode())
        """),
    "dir-fd-and-dot-dot": REF
    + _("""
        import os
        _fd = os.open("/tmp", os.O_RDONLY)
        _rel = os.path.relpath(REF, "/tmp")  # ../work/.../reference/lm3_l3.py
        exec(os.read(os.open(_rel, os.O_RDONLY, dir_fd=_fd), 1 << 20).decode())
        """),
    "the-lessons-checks-file": """
        from tutor.paths import lessons_dir
        exec(open(lessons_dir() / "lm3-l3" / "checks.py").read())
        """,
}


# In a checkout (tests run on its tutor/, beside reference/) there is no package tutor.reference to
# find: pkgutil.get_data then gives None and the file's own code fails on it, which is no pass either.
# Landlock refuses some of these routes before the fence sees them (a folder above the reference
# opened as a dir_fd, say): that refusal has its own message.
ALLOWED = {"failure.refused", "failure.confined_read"} | (
    {"failure.file_exception"} if importlib.util.find_spec("tutor.reference") is None else set()
)


@pytest.mark.parametrize("route", list(REFUSED))
def test_the_reference_cannot_be_imported_or_read(live, route):
    run = live.run(LM3, "import torch\n" + _(REFUSED[route]))
    for step in CHECKED[LM3]:
        r = run.results[step]
        assert r.status == "error", summary(run.results)
        message = first_message(r)
        assert [c.id for c in r.checks] == ["file-loads"] and message.key in ALLOWED, summary(
            run.results
        )
        assert message.params["line"] != "?" and "fn" not in message.params, message


def test_a_refused_import_can_be_caught_and_then_nothing_is_defined(live):
    source = "try:\n    from tutor.reference.lm3_l3 import *\nexcept ImportError:\n    pass\n"
    run = live.run(LM3, source)
    for r in run.results.values():
        assert r.status == "fail" and first_message(r).key == "check.missing", summary(run.results)


def test_linecache_gets_nothing_from_the_reference(live):
    # linecache swallows the refusal (it returns no lines): the file then defines nothing.
    run = live.run(
        LM3,
        REF + "import linecache\nexec(''.join(linecache.getlines(str(REF))))\n",
        steps=["shapes"],
    )
    r = run.results["shapes"]
    assert r.status == "fail" and first_message(r).key == "check.missing", summary(run.results)


# ------------------------------------------------------------------ what the warm-up leaves behind

# The spare child ran the reference before the job (sandbox._warm_up): its source and code
# must be gone, not merely out of sys.modules. These look where a learner would.
FRAMES_AND_GC = """
import gc, sys, types
_MARK = "Reference solution" + " for lesson lm3-l3"
_found = []

def _look(obj, depth=0):
    if _found or depth > 3:
        return
    if isinstance(obj, str):
        if obj.startswith('\"\"\"' + _MARK):
            _found.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj[:64]:
            _look(o, depth + 1)
    elif isinstance(obj, dict):
        for o in list(obj.values())[:256]:
            _look(o, depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type(sys)):
        try:
            _look(vars(obj), depth + 1)
        except TypeError:
            pass

_frame = sys._getframe()
while _frame is not None and not _found:  # the harness's frames: serve_one, the worker's fork_spare
    _look(dict(_frame.f_locals))
    _frame = _frame.f_back
for _o in gc.get_objects():
    if not _found:
        _look(_o, 2)
_taken = []
for _o in gc.get_objects():  # functions and classes named like the reference's, made elsewhere
    _name = getattr(_o, "__name__", None) if isinstance(_o, (types.FunctionType, type)) else None
    if _name in ("causal_attention", "expected_shapes", "CausalMultiHeadAttention"):
        _code = getattr(_o, "__code__", None) or getattr(getattr(_o, "forward", None), "__code__", None)
        if _code is not None and _code.co_filename != __file__:
            globals()[_name] = _o
            _taken.append(_name)
print("found" if _found or _taken else "nothing found")
if _found:
    exec(_found[0])
"""

# What the frames' locals and gc.get_objects() lead to by gc.get_referents, six levels deep
# (modules and classes not walked into: torch alone is millions of objects): code objects
# compiled from a file like the reference that are not this file's.
REFERENTS = """
import gc, sys, types
_seen, _code = set(), None
_level = []
_frame = sys._getframe()
while _frame is not None:
    _level.append(_frame.f_locals)
    _frame = _frame.f_back
_level += gc.get_objects()
for _depth in range(6):
    _next = []
    for _o in _level:
        if id(_o) in _seen or isinstance(_o, (types.ModuleType, type, str, bytes, int, float)):
            continue
        _seen.add(id(_o))
        if type(_o) is types.CodeType:
            if _o.co_filename != __file__ and any(getattr(c, "co_name", "") == "expected_shapes" for c in _o.co_consts):
                _code = _o
            continue
        _next += gc.get_referents(_o)
    _level = _next
    if _code is not None:
        break
print("seen", len(_seen), "found" if _code else "nothing found")
if _code is not None:
    exec(_code)
"""


# In the app a spare warms up in itself; a `grade` worker warms up before it forks (batch_live).
@pytest.mark.parametrize("worker", ["live", "batch_live"])
def test_the_warm_ups_reference_is_not_reachable_from_frames_or_gc(worker, request):
    run = request.getfixturevalue(worker).run(LM3, FRAMES_AND_GC)
    for r in run.results.values():
        assert r.status == "fail" and first_message(r).key == "check.missing", summary(run.results)
        assert "nothing found" in r.output, r.output


@pytest.mark.parametrize("worker", ["live", "batch_live"])
def test_the_warm_ups_code_is_not_reachable_by_referents(worker, request):
    # Twice: the first run's spare may have been forked before the zygote queued the lesson's
    # warm-up; the second's is forked after, while that queue (and its code) is still there.
    for _ in range(2):
        run = request.getfixturevalue(worker).run(LM3, REFERENTS, steps=["shapes"])
        r = run.results["shapes"]
        assert r.status == "fail" and first_message(r).key == "check.missing", summary(run.results)
        assert "nothing found" in r.output, r.output


# ------------------------------------------------------------------ a step's function from elsewhere

# Routes the fence cannot close (another program reads the file, the harness's own modules in
# this process): what they bring in is still not the file's code, and fails own-code. Landlock
# closes the first (cat gets EACCES: test_confinement.py): so these run in a worker without it,
# the second line of defence on a platform without Landlock.
FOREIGN = {
    "exec-of-a-copy-read-by-a-subprocess": (LM3, STEAL + "exec(STOLEN)", CHECKED[LM3], "<string>"),
    "compiled-under-the-files-own-name": (
        LM3,
        STEAL + "exec(compile(STOLEN, __file__, 'exec'))",
        CHECKED[LM3],
        "exec(compile(",
    ),
    "a-sibling-module": (
        LM3,
        STEAL
        + _("""
        import os, sys, tempfile
        _folder = tempfile.mkdtemp()
        with open(os.path.join(_folder, "helpers.py"), "w") as _f:
            _f.write(STOLEN)
        sys.path.insert(0, _folder)
        from helpers import causal_attention, CausalMultiHeadAttention, expected_shapes
        """),
        CHECKED[LM3],
        "helpers",
    ),
    "a-foreign-function-claiming-to-wrap-the-learners": (
        LM3,
        STEAL
        + _("""
        _ns = {}
        exec(STOLEN, _ns)
        def _mine(x, Wq, Wk, Wv):
            raise NotImplementedError
        causal_attention = _ns["causal_attention"]
        causal_attention.__wrapped__ = _mine
        """),
        ["single-head", "leakage"],
        "<string>",
    ),
    "a-module-getattr-handing-out-the-copy": (
        LM3,
        STEAL
        + _("""
        _ns = {}
        exec(STOLEN, _ns)
        del causal_attention, CausalMultiHeadAttention, expected_shapes
        def __getattr__(name):
            return _ns[name]
        """),
        CHECKED[LM3],
        "<string>",
    ),
    "a-class-that-only-inherits-the-copy": (
        LM3,
        STEAL
        + _("""
        _ns = {}
        exec(STOLEN, _ns)
        class CausalMultiHeadAttention(_ns["CausalMultiHeadAttention"]):
            pass
        """),
        ["multi-head"],
        "<string>",
    ),
    "the-checks-own-helpers-found-in-the-callers-frame": (
        LAB,
        """
        import sys
        _f = sys._getframe()
        while _f is not None and "checks_module" not in _f.f_locals:  # sandbox._run, which loads this file
            _f = _f.f_back
        _g = vars(_f.f_locals["checks_module"])
        scaled_scores = _g["ref_scores"]
        attention_weights = _g["ref_weights"]
        """,
        ["scores", "weights"],
        "checks.py",
    ),
}


# Steps that call the borrowed functions fail too, by the check that finds the checks' own code
# run from learner code (issue 25: kit/borrowed.py).
ALSO_FAILS = {"the-checks-own-helpers-found-in-the-callers-frame": {"output": "own-formula"}}


@pytest.mark.parametrize("case", list(FOREIGN))
def test_a_function_or_class_from_elsewhere_fails_own_code(no_landlock, case):
    lesson, code, steps, origin = FOREIGN[case]
    run = no_landlock.run(lesson, with_code(textwrap.dedent(code), lesson))
    for step in CHECKED[lesson]:
        r = run.results[step]
        also = ALSO_FAILS.get(case, {}).get(step)
        if also:
            failing = [c.id for c in r.checks if c.status != "pass"]
            assert r.status == "fail" and also in failing, summary(run.results)
            continue
        if step not in steps:
            assert r.status == "pass", summary(run.results)
            continue
        assert r.status == "fail" and [c.id for c in r.checks] == ["own-code"], summary(run.results)
        message = first_message(r)
        assert message.key == "check.not_in_file" and origin in message.params["origin"], summary(
            run.results
        )


# ------------------------------------------------------------------ correct files in unusual styles

CORRECT = {
    "torchscript-scores": (
        LAB,
        """
        import math
        @torch.jit.script
        def scaled_scores(q, k):
            return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        """,
    ),
    "a-decorator-with-functools-wraps": (
        LM3,
        """
        import functools
        _plain = causal_attention
        def logged(fn):
            @functools.wraps(fn)
            def wrapper(*args):
                return fn(*args)
            return wrapper
        @logged
        def causal_attention(x, Wq, Wk, Wv):
            return _plain(x, Wq, Wk, Wv)
        """,
    ),
    "lru-cached-shapes": (
        LM3,
        """
        import functools
        _plain = expected_shapes
        expected_shapes = functools.lru_cache(maxsize=None)(_plain)
        """,
    ),
    "a-decorated-forward-in-a-class-inheriting-the-constructor": (
        LM3,
        """
        class _Given(CausalMultiHeadAttention):  # the notebook's constructor, forward below
            pass
        class CausalMultiHeadAttention(_Given):
            @torch.enable_grad()  # torch's decorator: functools.wraps around the learner's forward
            def forward(self, x):
                return super().forward(x)
        """,
    ),
    "a-lambda-and-a-partial": (
        LAB,
        """
        import functools
        def _triu(seq_len, offset):
            return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=offset)
        causal_mask = functools.partial(_triu, offset=1)
        scaled_scores = lambda q, k: q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        """,
    ),
    "a-callable-object-and-a-staticmethod": (
        LAB,
        """
        class _Attention:
            def __call__(self, q, k, v):
                weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
                return weights @ v, weights
        attention = _Attention()
        class _Ops:
            @staticmethod
            def weights(scores, mask):
                return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        attention_weights = _Ops.weights
        """,
    ),
    "made-by-a-factory-and-a-bound-method": (
        LM3,
        """
        def _make():
            def causal_attention(x, Wq, Wk, Wv):
                q, k, v = x @ Wq, x @ Wk, x @ Wv
                scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
                T = x.shape[-2]
                future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
                weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
                return weights @ v, weights
            return causal_attention
        causal_attention = _make()
        class _Shapes:
            def of(self, B, T, H, hd):
                return {"projected_q": (B, T, H * hd), "q_split_into_heads": (B, T, H, hd),
                        "q_per_head": (B, H, T, hd), "scores": (B, H, T, T), "weights": (B, H, T, T),
                        "context_per_head": (B, H, T, hd), "context_merged": (B, T, H * hd)}
        expected_shapes = _Shapes().of
        """,
    ),
}


@pytest.mark.parametrize("case", list(CORRECT))
def test_correct_files_in_unusual_styles_pass(live, tmp_path, case):
    lesson, code = CORRECT[case]
    source = with_code(textwrap.dedent(code), lesson)
    path = tmp_path / ("lab_02.py" if lesson == LAB else "lm3_l3.py")
    path.write_text(
        source, encoding="utf-8"
    )  # TorchScript reads the function's source from the file
    run = live.run(lesson, source, filename=str(path))
    assert all(r.status == "pass" for r in run.results.values()), summary(run.results)


def test_the_reference_still_passes_with_the_fence(live):
    for lesson in (LM3, LAB):
        run = live.run(lesson, REFERENCE[lesson])
        assert all(r.status == "pass" for r in run.results.values()), summary(run.results)
        assert not any(problem_keys(r) for r in run.results.values())
