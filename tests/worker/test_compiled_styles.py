"""A correct function wrapped by torch.compile is still the learner's own (origin.py looks
through torch's wrapper) and passes. Slow on purpose of torch: importing torch._dynamo takes
~2 s in each child, so one file, the eager backend (no C++ compile), one wrapped function."""

from __future__ import annotations

from worker_kit import learner_file, verify

COMPILED_SHAPES = {
    "expected_shapes": """
@torch.compile(backend="eager")
def expected_shapes(B, T, H, hd):
    return {"projected_q": (B, T, H * hd), "q_split_into_heads": (B, T, H, hd), "q_per_head": (B, H, T, hd),
            "scores": (B, H, T, T), "weights": (B, H, T, T), "context_per_head": (B, H, T, hd),
            "context_merged": (B, T, H * hd)}
"""
}


def test_a_function_wrapped_by_torch_compile_passes(run_unhurried):
    verify(run_unhurried("lm3-l3", learner_file("lm3-l3", COMPILED_SHAPES)), "lm3-l3", {})
