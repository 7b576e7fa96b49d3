"""Weights a judge draws for a multi-head attention layer with an output projection (W_q, W_k,
W_v, out_proj), as the lessons' layers hold them: the probe loads them into the learner's
layer (load_weights) and the judge computes its reference from the same tensors."""

from __future__ import annotations

import torch


def attention_weights(
    g: torch.Generator, d_in: int, d_out: int, *, sharpen: float = 1.0, bias: float = 0.1
) -> dict[str, torch.Tensor]:
    """{"W_q", "W_k", "W_v"} (d_out, d_in) scaled by 1/√d_in, the first two times sharpen
    (larger scores, sharper weights); "out_w" (d_out, d_out) by 1/√d_out; "out_b" (d_out,)
    times bias. Drawn from g in that order (bias 0: zeros, nothing drawn), so that a lesson's
    inputs stay the same from run to run and between the child and the judge."""
    w = {}
    for name in ("W_q", "W_k", "W_v"):
        w[name] = torch.randn(d_out, d_in, generator=g) / d_in**0.5
        if sharpen != 1.0 and name != "W_v":
            w[name] = w[name] * sharpen
    w["out_w"] = torch.randn(d_out, d_out, generator=g) / d_out**0.5
    w["out_b"] = torch.randn(d_out, generator=g) * bias if bias else torch.zeros(d_out)
    return w
