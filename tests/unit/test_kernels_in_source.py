"""The source check for library kernels (judge_kit.kernels_in_source) skips the parse when the
text names no kernel: the same answers as the parse, full-width identifiers included."""

from __future__ import annotations

import pytest

from tutor.kit import kernels as judge_kit
from tutor.kit.kernels import kernels_in_source

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


@pytest.mark.parametrize(
    "body, found",
    [
        (
            "    return F.scaled_dot_product_attention(q, k, v, is_causal=True)",
            {"F.scaled_dot_product_attention"},
        ),
        # Python reads identifiers in NFKC: a full-width s is an s, and the call is the kernel's.
        (
            "    return F.\uff53caled_dot_product_attention(q, k, v, is_causal=True)",
            {"F.scaled_dot_product_attention"},
        ),
        ("    return nn.MultiheadAttention(8, 2)(q, k, v)[0]", {"nn.MultiheadAttention"}),
        ("    return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v", set()),
        # A string only mentions the kernel: no call, as the parse has always said.
        ("    print('scaled_dot_product_attention')\n    return v", set()),
    ],
)
def test_the_same_answer_as_the_parse(body, found):
    source = f"{HEAD}def attend(q, k, v):\n{body}\n"
    assert kernels_in_source(source, frozenset({"attend"})) == found


def test_a_file_that_names_no_kernel_is_not_parsed(monkeypatch):
    parsed = []
    monkeypatch.setattr(judge_kit, "_parsed", lambda source: parsed.append(source))
    source = f"{HEAD}def attend(q, k, v):\n    return (q @ k.mT).softmax(-1) @ v\n"
    assert kernels_in_source(source, frozenset({"attend"})) == frozenset()
    assert not parsed
