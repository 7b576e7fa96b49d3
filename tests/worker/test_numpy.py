"""NumPy is a runtime dependency (issue #12): a correct file that imports it and calls
`tensor.numpy()` somewhere harmless — a print, a helper that builds the mask — passes every
checked step through the real worker, as the notebooks' own code would."""

from __future__ import annotations

from worker_kit import learner_file, verify

LM3_WITH_NUMPY = {
    "causal_attention": """
def _row_sums(weights):
    return np.round(weights.sum(-1).numpy(), 3)

def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / np.sqrt(k.shape[-1])
    T = x.shape[-2]
    future = torch.from_numpy(np.triu(np.ones((T, T), dtype=bool), k=1))
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    print("rows sum to", _row_sums(weights)[0])
    return weights @ v, weights
""",
    "expected_shapes": """
def expected_shapes(B, T, H, hd):
    dims = np.array([B, T, H, hd])
    B, T, H, hd = (int(d) for d in dims)
    return {"projected_q": (B, T, H * hd), "q_split_into_heads": (B, T, H, hd), "q_per_head": (B, H, T, hd),
            "scores": (B, H, T, T), "weights": (B, H, T, T), "context_per_head": (B, H, T, hd),
            "context_merged": (B, T, H * hd)}
""",
}

LAB_WITH_NUMPY = {
    "causal_mask": """
def causal_mask(seq_len):
    return torch.from_numpy(np.triu(np.ones((seq_len, seq_len), dtype=np.bool_), k=1))
""",
    "attention": """
def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    print("first row:", weights[0, 0, 0].numpy())
    return weights @ v, weights
""",
}


def test_a_correct_file_using_numpy_passes_lm3(run):
    results = run("lm3-l3", learner_file("lm3-l3", LM3_WITH_NUMPY, "import numpy as np"))
    verify(results, "lm3-l3", {})
    assert "rows sum to" in results["single-head"].output


def test_a_correct_file_using_numpy_passes_lab02(run):
    results = run("lab-02", learner_file("lab-02", LAB_WITH_NUMPY, "import numpy as np"))
    verify(results, "lab-02", {})
    assert "first row:" in results["output"].output
