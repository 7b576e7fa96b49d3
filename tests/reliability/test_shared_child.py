"""A save's checked steps run in one child, in order (tutor/engine/supervisor.py). These cases
check that sharing it changes no verdict: each step starts from a fresh import of the file
and from torch's defaults, its output is its own, and a slow or broken step neither holds
up nor takes down the steps after it.
"""

from __future__ import annotations

from reliability_kit import STEP_TIMEOUT, summary, with_code

ALL = ["single-head", "leakage", "multi-head", "shapes"]
REFERENCE_MHA_INIT = "super().__init__()"


def statuses(run) -> dict[str, str]:
    return {step: run.results[step].status for step in ALL}


def test_each_step_imports_the_file_afresh(live):
    # State the first step's calls leave in the module must not reach the multi-head step,
    # which never calls causal_attention: there the list is empty, as in a fresh import.
    source = with_code("""
        _calls = []
        _reference_attention = causal_attention

        def causal_attention(x, Wq, Wk, Wv):
            _calls.append(1)
            return _reference_attention(x, Wq, Wk, Wv)

        _ReferenceMHA = CausalMultiHeadAttention

        class CausalMultiHeadAttention(_ReferenceMHA):
            def __init__(self, *args, **kwargs):
                if _calls:
                    raise RuntimeError("module state from another step")
                super().__init__(*args, **kwargs)
        """)
    run = live.run("lm3-l3", source)
    assert statuses(run) == dict.fromkeys(ALL, "pass"), summary(run.results)


def test_torch_defaults_changed_in_one_step_do_not_reach_the_next(live):
    # Inside the function, not at import: a fresh import would not undo it.
    source = with_code("""
        _reference_attention = causal_attention

        def causal_attention(x, Wq, Wk, Wv):
            torch.set_default_dtype(torch.float64)
            torch.set_grad_enabled(True)
            return _reference_attention(x, Wq, Wk, Wv)
        """)
    run = live.run("lm3-l3", source)
    assert statuses(run) == dict.fromkeys(ALL, "pass"), summary(run.results)


def test_each_step_reports_its_own_output(live):
    source = with_code("""
        _reference_attention = causal_attention
        _reference_shapes = expected_shapes

        def causal_attention(x, Wq, Wk, Wv):
            print("from causal_attention")
            return _reference_attention(x, Wq, Wk, Wv)

        def expected_shapes(B, T, H, hd):
            print("from expected_shapes")
            return _reference_shapes(B, T, H, hd)
        """)
    run = live.run("lm3-l3", source)
    assert statuses(run) == dict.fromkeys(ALL, "pass"), summary(run.results)
    out = {step: run.results[step].output for step in ALL}
    assert (
        "from causal_attention" in out["single-head"]
        and "from expected_shapes" not in out["single-head"]
    )
    assert (
        "from causal_attention" in out["leakage"] and "from expected_shapes" not in out["leakage"]
    )
    assert "from expected_shapes" in out["shapes"] and "from causal_attention" not in out["shapes"]
    assert "from" not in out["multi-head"]


def test_a_slow_first_step_does_not_hold_up_the_others(live):
    # Slow but finishing in time: the steps after it must not wait for it.
    slow = STEP_TIMEOUT * 0.6
    source = with_code(f"""
        import time
        _reference_attention = causal_attention
        _slept = []

        def causal_attention(x, Wq, Wk, Wv):
            if not _slept:  # once per import: once per step
                _slept.append(time.sleep({slow}))
            return _reference_attention(x, Wq, Wk, Wv)
        """)
    run = live.run("lm3-l3", source)
    assert statuses(run) == dict.fromkeys(ALL, "pass"), summary(run.results)
    assert run.arrived["single-head"] >= slow
    # multi-head and shapes were handed to children of their own at HEDGE_AFTER (0.3 s).
    assert max(run.arrived["multi-head"], run.arrived["shapes"]) < run.arrived["single-head"], (
        run.arrived
    )


def test_a_crash_in_the_first_step_leaves_the_others_judged(live):
    source = with_code("""
        import os

        def causal_attention(x, Wq, Wk, Wv):
            os.abort()
        """)
    run = live.run("lm3-l3", source)
    assert statuses(run) == {
        "single-head": "error",
        "leakage": "error",
        "multi-head": "pass",
        "shapes": "pass",
    }, summary(run.results)
    assert max(run.arrived.values()) < STEP_TIMEOUT, run.arrived


def test_the_learners_code_runs_with_the_cyclic_gc_on(live):
    # The worker turns the GC off while it imports torch: its children must not inherit that,
    # or every cycle the learner's code makes would stay until the child exits.
    source = with_code("""
        import gc
        _reference_attention = causal_attention

        def causal_attention(x, Wq, Wk, Wv):
            if not gc.isenabled():
                raise RuntimeError("the cyclic GC is off")
            return _reference_attention(x, Wq, Wk, Wv)
        """)
    run = live.run("lm3-l3", source)
    assert statuses(run) == dict.fromkeys(ALL, "pass"), summary(run.results)
