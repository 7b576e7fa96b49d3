"""The library kernel is caught at run time too, when no name in the source gives it away."""

from pathlib import Path

import pytest

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


LM3 = (ROOT / "reference" / "lm3_l3.py").read_text()
FORWARD = """        scores = q @ k.transpose(2, 3) / hd**0.5
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
        return self.out_proj(context)
"""
FLEX = """        from torch.nn.attention.flex_attention import flex_attention

        causal = lambda s, b, h, i, j: torch.where(i >= j, s, -float("inf"))  # noqa: E731
        context = flex_attention(q, k, v, score_mod=causal)
        return self.out_proj(context.transpose(1, 2).reshape(B, T, self.d_out))
"""
HIDDEN = (
    """        try:  # a kernel whose trap is caught: the formula below gives the same values
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
        except BaseException:
            pass
"""
    + FORWARD
)


def _failing(result) -> list[str]:
    return [c.id for c in result.checks if c.status == "fail"]


def test_a_kernel_ends_the_step_at_its_first_call(run):
    """flex_attention spends seconds before its operator runs, and fails later in backward: the
    step stops at the first call and says the one thing that matters."""
    assert FORWARD in LM3
    results = run("lm3-l3", LM3.replace(FORWARD, FLEX))
    multi = results["multi-head"]
    assert multi.status == "fail" and _failing(multi) == ["own-formula"], multi.checks
    assert [c.id for c in multi.checks] == ["own-formula"]  # nothing judged after the stop
    assert multi.checks[0].message.params == {"fn": "forward", "kernel": "flex_attention"}
    assert results["single-head"].status == "pass"


def test_a_kernel_whose_stop_is_caught_still_fails(run):
    source = LM3.replace(FORWARD, HIDDEN).replace(
        "import torch\n", "import torch\nimport torch.nn.functional as F\n", 1
    )
    multi = run("lm3-l3", source)["multi-head"]
    assert multi.status == "fail" and _failing(multi) == ["own-formula"], multi.checks


def test_a_step_that_allows_kernels_runs_them():
    """Without StepSpec.own_formula the kernel is only recorded, for the judge to weigh."""
    import torch
    import torch.nn.functional as F

    from tutor.kit import probe_tools

    probe_tools.install_traps()
    q = torch.randn(1, 2, 4, 8)
    ctx = probe_tools.ProbeContext(None, "learner.py", "")
    out = ctx.call(lambda x: F.scaled_dot_product_attention(x, x, x, is_causal=True), q)
    assert out["value"].shape == q.shape and ctx.kernels == {"F.scaled_dot_product_attention"}
    ctx.stop_at_kernel = True
    with pytest.raises(probe_tools.ForbiddenKernel) as stopped:
        ctx.call(lambda x: F.scaled_dot_product_attention(x, x, x, is_causal=True), q)
    assert stopped.value.kernels == ["F.scaled_dot_product_attention"]
