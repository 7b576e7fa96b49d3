"""Learner code cannot change its verdict by patching torch, changing global torch state,
writing where the harness writes, or attacking the worker.

Every file here is wrong (causal_attention without the mask, unless said otherwise) plus an
attempt to look right; single-head must still fail, and the worker must stay up. The judge
runs in its own process on inputs it made itself, so patches inside the child cannot reach
it; the child's result is a frame that must carry a per-job random token the learner's code
is never given (it could dig it out of the child's memory; see README.md).
"""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from reliability_kit import UNMASKED, problem_keys, summary, with_code

FORGED_RESULT = json.dumps({"type": "outputs", "tree": {"calls": []}, "kernels": []})
FORGED_STEP = {
    "id": "single-head",
    "status": "pass",
    "checks": [],
    "failure": None,
    "output": "",
    "visuals": {},
    "ms": 1.0,
}

ATTEMPTS = {
    "patch-allclose-and-equal": """
        torch.allclose = lambda *a, **k: True
        torch.equal = lambda *a, **k: True
        torch.isclose = lambda a, b, *r, **k: torch.ones(torch.broadcast_shapes(a.shape, b.shape), dtype=torch.bool)
        """,
    "patch-tensor-eq": """
        torch.Tensor.__eq__ = lambda self, other: True
        torch.Tensor.__ne__ = lambda self, other: False
        torch.Tensor.all = lambda self, *a, **k: torch.tensor(True)
        torch.Tensor.any = lambda self, *a, **k: torch.tensor(False)
        """,
    "patch-softmax": """
        import torch.nn.functional as F
        def _causal_softmax(t, dim=-1, **k):
            T = t.shape[-1]
            future = torch.ones(T, T, dtype=torch.bool).triu(1)
            return (t.masked_fill(future, float("-inf")) - t.amax(dim, keepdim=True)).exp() / 1.0
        F.softmax = torch.softmax = torch.Tensor.softmax = _causal_softmax
        def causal_attention(x, Wq, Wk, Wv):  # its own softmax, unmasked
            q, k, v = x @ Wq, x @ Wk, x @ Wv
            e = (q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5).exp()
            w = e / e.sum(-1, keepdim=True)
            return w @ v, w
        """,
    "default-dtype-and-grad-mode": """
        torch.set_default_dtype(torch.float64)
        torch.set_grad_enabled(True)
        torch.set_printoptions(precision=1)
        """,
    "write-forged-results-to-every-fd": f"""
        import os
        _forged = {FORGED_RESULT!r}.encode()
        for _fd in range(3, 1024):
            for _blob in (_forged, b"\\x00attn-result\\x00" + os.urandom(16) + len(_forged).to_bytes(8, "big") + _forged):
                try:
                    os.write(_fd, _blob)
                except OSError:
                    pass
        """,
    "print-forged-protocol-lines": f"""
        import json, os
        for _gen in range(1, 500):
            print(json.dumps({{"type": "step", "gen": _gen, "result": {FORGED_STEP!r}}}))
            os.write(2, (json.dumps({{"type": "done", "gen": _gen}}) + "\\n").encode())
        """,
    "patch-what-the-harness-uses": """
        import json, os, faulthandler
        os._exit = lambda code: None  # the child must not fall through into the worker's code
        os.write = lambda fd, data: len(data)
        json.dumps = lambda *a, **k: '{"type": "outputs", "tree": {}}'
        faulthandler.cancel_dump_traceback_later = lambda: None
        """,
    "close-fds-0-to-100": """
        import os
        os.closerange(0, 100)
        """,
    "signal-the-worker-judge-ui-and-everyone": """
        import os, signal
        _parent = os.getppid()
        _ui = int(open(f"/proc/{_parent}/stat").read().rsplit(")", 1)[1].split()[1])
        _family = [_parent, _ui]
        try:
            _family += [int(p) for p in open(f"/proc/{_parent}/task/{_parent}/children").read().split()]
        except OSError:
            pass
        _refused = 0
        for _pid in _family:
            if _pid == os.getpid():
                continue
            for _sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGKILL):
                try:
                    os.kill(_pid, _sig)
                except OSError:
                    _refused += 1
        for _call in (lambda: os.killpg(os.getpgid(_parent), signal.SIGKILL), lambda: os.kill(-1, 0)):
            try:
                _call()
            except OSError:
                _refused += 1
        print("refused", _refused)
        """,
    "write-to-the-ui-through-proc": f"""
        import os
        _forged = "".join(__import__("json").dumps({{"type": "step", "gen": g, "result": {FORGED_STEP!r}}}) + "\\n"
                          for g in range(1, 500)).encode()
        _opened = 0
        for _pid in {{os.getppid()}}:
            try:
                _fds = os.listdir(f"/proc/{{_pid}}/fd")
            except OSError:
                _fds = [str(n) for n in range(0, 64)]
            for _fd in _fds:
                try:
                    _w = os.open(f"/proc/{{_pid}}/fd/{{_fd}}", os.O_WRONLY | os.O_NONBLOCK)
                except OSError:
                    continue
                _opened += 1
                try:
                    os.write(_w, _forged)
                except OSError:
                    pass
                os.close(_w)
        print("opened", _opened)
        """,
}


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
def test_wrong_file_still_fails(live, attempt):
    source = with_code(UNMASKED + "\n" + textwrap.dedent(ATTEMPTS[attempt]))
    run = live.run("lm3-l3", source, steps=["single-head", "leakage", "shapes"])
    for step in ("single-head", "leakage"):
        assert run.results[step].status in ("fail", "error"), summary(run.results)
        assert not problem_keys(run.results[step]) & {"failure.judge", "failure.harness"}, summary(
            run.results
        )
    # No forged event reached the client: every step event of this run is the real one.
    with live.lock:
        delivered = [e for e in live.events if e.type == "step" and e.gen == run.gen]
    # (A step may be "error": the signal attempt kills the sibling children of its run, which
    # are not protected; only its own verdicts suffer.)
    statuses = [e.result.status for e in delivered if e.result.id == "single-head"]
    assert len(statuses) == 1 and statuses[0] in ("fail", "error"), delivered
    assert live.worker.proc.poll() is None and live.request({"type": "ping"}, "pong")


def test_attacks_were_refused_not_ignored(live):
    """The signal and /proc attempts above really ran and were refused (EPERM/EACCES)."""
    source = with_code(
        textwrap.dedent(ATTEMPTS["signal-the-worker-judge-ui-and-everyone"])
        + textwrap.dedent(ATTEMPTS["write-to-the-ui-through-proc"])
    )
    run = live.run("lm3-l3", source, steps=["shapes"])
    out = run.results["shapes"].output
    assert run.results["shapes"].status == "pass", summary(run.results)
    assert "opened 0" in out, out
    refused = int(out.split("refused ")[1].split()[0])
    # 3 signals to each of the worker, the UI (this test process) and the judge; the worker's
    # group; kill(-1). Spares are not protected: killing them only costs the next run a fork.
    assert refused >= 3 * 3 + 2, out
    assert os.path.exists(f"/proc/{live.pid}")


def test_inputs_mutated_in_place_are_caught(live):
    source = with_code("""
        _original = causal_attention
        def causal_attention(x, Wq, Wk, Wv):
            out = _original(x, Wq, Wk, Wv)
            x.mul_(0)  # the caller's tensor
            return out
        """)
    run = live.run("lm3-l3", source, steps=["single-head"])
    r = run.results["single-head"]
    assert r.status == "fail" and "check.mutated" in problem_keys(r), summary(run.results)


def test_closing_every_fd_is_an_error_not_a_pass(live):
    run = live.run(
        "lm3-l3", with_code("import os\nos.closerange(3, 1 << 16)"), steps=["single-head", "shapes"]
    )
    for r in run.results.values():
        assert r.status == "error" and "failure.channel" in problem_keys(r), summary(run.results)


def test_spares_stopped_by_a_run_do_not_hang_the_next(live):
    """SIGSTOP to every other child of the worker (the spares of the next run among them):
    the next run must still be judged in time, with fresh children."""
    source = with_code("""
        import os, signal
        _parent = os.getppid()
        for _pid in open(f"/proc/{_parent}/task/{_parent}/children").read().split():
            if int(_pid) != os.getpid():
                try:
                    os.kill(int(_pid), signal.SIGSTOP)
                except OSError:
                    pass
        """)
    live.run("lm3-l3", source, steps=["shapes"])
    run = live.run("lm3-l3", with_code(""))
    assert all(r.status == "pass" for r in run.results.values()), summary(run.results)
