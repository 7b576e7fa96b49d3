"""A step that runs out of time says why when it can tell (issue #12): torch.compile compiling
on its first call, or memory grown near the limit; an endless loop or a long sleep otherwise.

`small` is a worker of its own with a short step timeout and a small memory limit, so that a
file holding most of that limit reaches the deadline quickly (the default 2 GiB would take
seconds of page faults to fill). The torch.compile cases use the shared `live` worker."""

from __future__ import annotations

import pytest
from reliability_kit import STEP_TIMEOUT, LiveWorker, first_message, summary, with_code

SMALL_TIMEOUT = 1.5
SMALL_MEMORY_MB = 320


@pytest.fixture(scope="module")
def small():
    lw = LiveWorker(SMALL_TIMEOUT, env={"ATTN_TUTOR_MEMORY_MB": str(SMALL_MEMORY_MB)}, warm=True)
    lw.start()
    try:
        yield lw
    finally:
        lw.close()


def timed_out_with(run, step, key):
    r = run.results[step]
    assert r.status == "timeout", summary(run.results)
    message = first_message(r)
    assert message.key == key, summary(run.results)
    return message.params


COMPILED = {
    # torch.compile in the file: told from the source.
    "decorator": """
        _plain = causal_attention
        @torch.compile
        def causal_attention(x, Wq, Wk, Wv):
            return _plain(x, Wq, Wk, Wv)
        """,
    "called-in-the-function": """
        _plain = causal_attention
        def causal_attention(x, Wq, Wk, Wv):
            return torch.compile(_plain, mode="max-autotune")(x, Wq, Wk, Wv)
        """,
    # No torch.compile in the source: told from the stack, caught in torch's compiler.
    "reached-by-a-built-name": """
        _plain = causal_attention
        def causal_attention(x, Wq, Wk, Wv):
            return getattr(torch, "com" + "pile")(_plain)(x, Wq, Wk, Wv)
        """,
}


# The default memory limit (`live`): under `small`'s, torch's compiler itself may outgrow it.
@pytest.mark.parametrize("case", list(COMPILED))
def test_a_timeout_while_torch_compile_compiles_says_so(live, case):
    run = live.run("lm3-l3", with_code(COMPILED[case]), steps=["single-head"])
    params = timed_out_with(run, "single-head", "failure.timeout_compile")
    assert params["seconds"] == f"{STEP_TIMEOUT:g}"


MEMORY_HOGS = {
    "held-at-import-then-a-sleep": """
        import time
        _held = torch.ones(55 * 2**20)  # 220 MiB, every page touched
        time.sleep(100)
        """,
    "grown-in-the-function-then-a-sleep": """
        import time
        _plain = causal_attention
        def causal_attention(x, Wq, Wk, Wv):
            held = []
            while len(held) < 230:
                held.append(torch.ones(2**18))  # 1 MiB a go
                time.sleep(0.002)
            time.sleep(100)
            return _plain(x, Wq, Wk, Wv)
        """,
}


@pytest.mark.parametrize("case", list(MEMORY_HOGS))
def test_a_timeout_holding_most_of_the_memory_limit_says_it_used_too_much_memory(small, case):
    run = small.run("lm3-l3", with_code(MEMORY_HOGS[case]), steps=["single-head"])
    params = timed_out_with(run, "single-head", "failure.timeout_memory")
    assert (
        params["limit"] == SMALL_MEMORY_MB
        and SMALL_MEMORY_MB * 0.5 <= params["mb"] <= SMALL_MEMORY_MB + 256
    )


@pytest.mark.parametrize(
    "code",
    [
        "import time\ntime.sleep(100)",
        "_held = torch.ones(10 * 2**20)  # 40 MiB: not near the limit\nwhile True:\n    pass",
    ],
    ids=["a-sleep", "a-loop-with-a-little-memory"],
)
def test_a_plain_timeout_is_still_a_loop_or_a_sleep(small, code):
    run = small.run("lm3-l3", with_code(code), steps=["shapes"])
    params = timed_out_with(run, "shapes", "failure.timeout")
    assert set(params) == {"seconds"}


def test_a_crash_inside_faulthandlers_timeout_dump_is_a_timeout(live):
    """faulthandler's dump of where the code was, 0.2 s before the deadline, can itself crash
    the child (seen while torch.compile traced). Simulated: the dump's first line on every fd
    the child holds (the result pipe among them), then a segfault."""
    run = live.run(
        "lm3-l3",
        with_code("""
        import ctypes, os
        _plain = causal_attention
        def causal_attention(x, Wq, Wk, Wv):
            for fd in range(3, 1024):
                try:
                    os.write(fd, b"Timeout (0:00:01.800000)!\\n")
                except OSError:
                    pass
            ctypes.string_at(0)
        """),
        steps=["single-head"],
    )
    timed_out_with(run, "single-head", "failure.timeout")
