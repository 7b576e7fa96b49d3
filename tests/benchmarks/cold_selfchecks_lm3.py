"""The cold approach the benchmark compares with: the seed notebook's own self-checks
(/work/shared/seeds/000_cb42ea30ea1af979.txt, "LM3-L3", self-checks 1 to 4), as a pytest
file against the learner's file, run with a fresh `python -m pytest -q` on every save
(what a learner with pytest-watcher waits for).

bench_latency.py copies this file as test_selfchecks_lm3.py next to a copy of the
learner's file (lm3_l3.py, or the path in LEARNER_FILE). It is not collected by the
project's own test run (tests/benchmarks is ignored, and its name has no test_ prefix).
The asserts and their numbers are the notebook's; only the cell order became fixtures.
"""

import importlib.util
import os
import pathlib

import pytest
import torch
import torch.nn.functional as F

LEARNER = pathlib.Path(
    os.environ.get("LEARNER_FILE") or pathlib.Path(__file__).with_name("lm3_l3.py")
)


@pytest.fixture(scope="module")
def lab():
    spec = importlib.util.spec_from_file_location("learner", LEARNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def nb(lab):
    """The notebook's cells 1 and 'Self-check 1' set-up: the same seeds and sizes."""
    torch.manual_seed(0)
    B, T, d = 2, 6, 8
    x = torch.randn(B, T, d)
    d_k = 4
    Wq, Wk, Wv = (torch.randn(d, d_k) / d**0.5 for _ in range(3))
    return {"B": B, "T": T, "d": d, "x": x, "d_k": d_k, "W": (Wq, Wk, Wv)}


def leak(fn, x):
    """Largest change in outputs at positions 0..T-2 when the LAST token is replaced."""
    x2 = x.clone()
    x2[:, -1, :] = torch.randn_like(x2[:, -1, :]) * 3
    a, b = fn(x), fn(x2)
    return (a[:, :-1] - b[:, :-1]).abs().max().item()


def broken_attention(x, Wq, Wk, Wv):
    """BROKEN on purpose: no mask at all."""
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    w = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
    return w @ v, w


def test_self_check_1(lab, nb):
    B, T, d_k, x = nb["B"], nb["T"], nb["d_k"], nb["x"]
    Wq, Wk, Wv = nb["W"]
    out, w = lab.causal_attention(x, Wq, Wk, Wv)
    assert out.shape == (B, T, d_k), f"out should have shape {(B, T, d_k)}, got {tuple(out.shape)}"
    assert w.shape == (B, T, T), f"weights should have shape {(B, T, T)}, got {tuple(w.shape)}"
    assert torch.allclose(w.sum(-1), torch.ones(B, T), atol=1e-5), (
        "each row of weights must sum to 1: mask BEFORE the softmax"
    )
    assert torch.all(torch.triu(w, diagonal=1) == 0), (
        "weights above the diagonal (future tokens) must be exactly 0"
    )
    assert torch.allclose(w[:, 0, 0], torch.ones(B)), "the first token can only attend to itself"
    ref = F.scaled_dot_product_attention(x @ Wq, x @ Wk, x @ Wv, is_causal=True)
    assert torch.allclose(out, ref, atol=1e-5), (
        "output differs from F.scaled_dot_product_attention(..., is_causal=True)"
    )


def test_self_check_2(lab, nb):
    x = nb["x"]
    Wq, Wk, Wv = nb["W"]
    bad = leak(lambda z: broken_attention(z, Wq, Wk, Wv)[0], x)
    good = leak(lambda z: lab.causal_attention(z, Wq, Wk, Wv)[0], x)
    assert bad > 1e-3, "the leakage test should detect the unmasked layer"
    assert good < 1e-6, "your causal attention leaks: a later token changed an earlier output"


@pytest.fixture(scope="module")
def mha_y(lab, nb):
    torch.manual_seed(1)
    mha = lab.CausalMultiHeadAttention(d_in=nb["d"], d_out=8, n_heads=2, context_length=16)
    return mha, mha(nb["x"])


def test_self_check_3(lab, nb, mha_y):
    B, T, d, x = nb["B"], nb["T"], nb["d"], nb["x"]
    mha, y = mha_y
    CausalMultiHeadAttention = lab.CausalMultiHeadAttention
    assert y.shape == (B, T, 8), f"output should be {(B, T, 8)}, got {tuple(y.shape)}"
    assert leak(lambda z: mha(z), x) < 1e-6, (
        "your multi-head attention leaks information from future tokens"
    )
    H, hd = mha.n_heads, mha.head_dim
    q, k, v = (proj(x).view(B, T, H, hd).transpose(1, 2) for proj in (mha.W_q, mha.W_k, mha.W_v))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, 8)
    ref = mha.out_proj(ref)
    assert torch.allclose(y, ref, atol=1e-5), (
        "output differs from the reference built with F.scaled_dot_product_attention"
    )
    n_params = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert n_params(CausalMultiHeadAttention(d, 8, 1, 16)) == n_params(
        CausalMultiHeadAttention(d, 8, 4, 16)
    ), "heads must not change the parameter count"
    assert n_params(mha) == 3 * d * 8 + 8 * 8 + 8, (
        "expected 3 * d_in * d_out (Q, K, V) + d_out * d_out + d_out parameters"
    )


def test_self_check_4(lab, nb, mha_y):
    x = nb["x"]
    mha, y = mha_y
    shapes = lab.expected_shapes(2, 6, 2, 4)
    Bn, Tn, Hn, hdn = 2, 6, 2, 4
    real_q = mha.W_q(x)
    assert shapes["projected_q"] == tuple(real_q.shape), (
        f"projected_q: expected {tuple(real_q.shape)}"
    )
    assert shapes["q_split_into_heads"] == tuple(real_q.view(Bn, Tn, Hn, hdn).shape)
    assert shapes["q_per_head"] == tuple(real_q.view(Bn, Tn, Hn, hdn).transpose(1, 2).shape)
    qh = real_q.view(Bn, Tn, Hn, hdn).transpose(1, 2)
    assert shapes["scores"] == tuple((qh @ qh.transpose(2, 3)).shape), (
        "scores should be (B, H, T, T)"
    )
    assert shapes["weights"] == shapes["scores"], "the softmax does not change the shape"
    assert shapes["context_per_head"] == tuple(((qh @ qh.transpose(2, 3)) @ qh).shape)
    assert shapes["context_merged"] == tuple(y.shape)
