"""A file whose threads take every thread the child may have is the learner's doing, said so,
not "the tutor's fault" (issue 23, also seen: "unable to start watchdog thread").

In a kept run (`grade`) a file's steps share one child: a thread left grabbing every free
slot keeps the harness from starting the next step's deadline watchdog."""

from __future__ import annotations

from reliability_kit import LiveWorker, problem_keys, with_code

GRABBER = with_code("""
import threading as _threading
import time as _time

def _grab():
    while True:  # every slot that frees up, taken again
        try:
            _threading.Thread(target=_time.sleep, args=(3600,), daemon=True).start()
        except RuntimeError:
            _time.sleep(0.0005)

_right = causal_attention
_grabbing = []

def causal_attention(x, Wq, Wk, Wv):
    if not _grabbing:  # once: a later call that started its own thread would be charged for that
        _grabbing.append(_threading.Thread(target=_grab, daemon=True))
        _grabbing[0].start()
        _time.sleep(0.5)
    return _right(x, Wq, Wk, Wv)
""")


def test_a_thread_bomb_is_said_to_be_the_learners():
    lw = LiveWorker(10.0, batch=True)
    lw.start()
    try:
        # single-head runs first: the steps after it meet what its threads hold.
        run = lw.run("lm3-l3", GRABBER)
    finally:
        lw.close()
    keys = {step: problem_keys(r) for step, r in run.results.items()}
    assert not any("failure.harness" in k for k in keys.values()), keys
    # Which step meets the held slots first is a race: it may fail inside the learner's own
    # frames (too_many_processes) or before its harness could start (…_held); both are theirs.
    said = {"failure.too_many_processes_held", "failure.too_many_processes"}
    held = [s for s, k in keys.items() if k & said]
    assert held, keys
    for step in held:
        assert run.results[step].status == "error"
