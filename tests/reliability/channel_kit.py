"""Hostile files aimed at the child → worker channel and at the judge (issue 23, classes 1 and 9).

Each is the lm3-l3 reference with something added: the files a class's batch meets, one of
each kind, and what the students' records must then say.
"""

from __future__ import annotations

from reliability_kit import with_code

# A fault-handler report, written to every pipe the child holds, with a line number no int()
# should read, then a real crash (its own report follows the forged one).
CRAFTED_DUMP = with_code("""
def causal_attention(x, Wq, Wk, Wv):
    import os, signal
    digits = "7" * 6000
    me = globals().get("__file__", "lm3_l3.py")  # the name the worker looks for
    forged = (
        "Fatal Python error: Bus error\\n\\n"
        "Current thread 0x00007f0000000000 (most recent call first):\\n"
        f'  File "{me}", line {digits} in causal_attention\\n'
        f'  File "{me}", line 1{digits} in {{0}}\\n'
        '  File "/x/tutor/runner/sandbox.py", line 12 in serve_one\\n'
        "\\nStack (most recent call first):\\n"
        f'  File "{me}", line {digits}{digits} in <module>\\n'
    ).encode()
    for fd in range(3, 4096):
        try:
            os.write(fd, forged)
        except OSError:
            pass
    os.kill(os.getpid(), signal.SIGBUS)
""")

# A module-level expression 4,500 terms deep: the child compiles it (recursion limit 2,000),
# Python's default 1,000 does not parse it. One step is left as the starter's TODO, so the judge
# reads the file to name the function that is not written yet.
DEEP_EXPRESSION = (
    with_code("""
def expected_shapes(B, T, H, hd):
    raise NotImplementedError("TODO")
""")
    + "\n_total = "
    + " - ".join(["2"] * 4500)
    + "\n"
)

# The child's harness is the learner's to patch: its description of an exception turned into
# message references whose keys are format strings (`likely.{0}`, `{fn.__class__}`). The
# first call (the notebook's size) is answered right; the calls at other sizes raise, and
# their errors travel inside the step's outputs to the judge.
FORMAT_STRINGS = with_code("""
import sys as _sys

def _forged(*args, **kwargs):
    ref = {"key": "likely.{0}{1}", "params": {"fn": "{0}"}}
    return {"kind": "{0}", "detail": {"key": "{fn.__class__}", "params": {"x": ref}},
            "frames": [{"line": 1, "function": "{0}", "code": "{}"}], "caret": ""}

for _name in list(_sys.modules):
    if _name.endswith("runner.sandbox"):
        _sys.modules[_name].describe_exception = _forged

_right = expected_shapes
_calls = []

def expected_shapes(B, T, H, hd):
    _calls.append(1)
    if len(_calls) == 1:
        return _right(B, T, H, hd)
    raise ValueError("likely.{0} {fn} {0.__class__}")
""")

# 2 MiB of comments after a correct solution: more than any solution, past the size limit.
OVERSIZED = with_code("# " + "padding " * 120 + "\n") + ("# " + "x" * 1000 + "\n") * 2100

HOSTILE = {
    "crafted_dump": CRAFTED_DUMP,
    "deep_expression": DEEP_EXPRESSION,
    "format_strings": FORMAT_STRINGS,
    "oversized": OVERSIZED,
}
