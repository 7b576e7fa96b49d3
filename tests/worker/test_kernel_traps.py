"""The library kernel is caught at run time too, when no name in the source gives it away."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = (ROOT / "reference" / "lab_02.py").read_text()

OBFUSCATED = REFERENCE.replace(
    """def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    return weights @ v, weights""",
    """def attention(q, k, v):
    weights = attention_weights(scaled_scores(q, k), causal_mask(q.shape[-2]))
    name = "".join(["scaled_dot", "_prod", "uct_attention"])
    return getattr(torch.ops.aten, name)(q, k, v, is_causal=True), weights""",
)


def test_an_aten_kernel_reached_by_a_built_name_fails_own_formula(run):
    assert OBFUSCATED != REFERENCE
    results = run("lab-02", OBFUSCATED)
    output = results["output"]
    assert output.status == "fail"
    failing = {c.id: c for c in output.checks if c.status == "fail"}
    assert list(failing) == ["own-formula"]
    assert failing["own-formula"].message.params["kernel"] == "F.scaled_dot_product_attention"
    assert all(results[s].status == "pass" for s in ("scores", "mask", "weights"))
