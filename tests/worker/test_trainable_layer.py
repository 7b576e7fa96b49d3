"""The multi-head layer is judged as it is used: built by keyword in train mode, with dropout,
trained for one step, called again on other lengths and with new weights.

Each wrong file is the reference with the layer's forward (or constructor) changed, so only
the multi-head step may fail; each must fail with the check and the cause named. The correct
styles must pass every step. Every wrong file here passed on main before these checks.
"""

from __future__ import annotations

import pytest
from worker_kit import Exp, error, learner_file, verify

LM3 = "lm3-l3"

HEAD = """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd**0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
"""
TAIL = """
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
"""


INIT = """
def __init__(self, d_in, d_out, n_heads, context_length, dropout=0.0):
    super().__init__()
    self.d_out, self.n_heads, self.head_dim = d_out, n_heads, d_out // n_heads
    self.W_q = nn.Linear(d_in, d_out, bias=False)
    self.W_k = nn.Linear(d_in, d_out, bias=False)
    self.W_v = nn.Linear(d_in, d_out, bias=False)
    self.out_proj = nn.Linear(d_out, d_out)
    self.dropout = nn.Dropout(dropout)
    self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())
"""


def init(*changes) -> str:
    """The given constructor with lines replaced: (old line, new line), stripped."""
    lines = INIT.strip("\n").splitlines()
    for old, new in changes:
        at = next(i for i, line in enumerate(lines) if line.strip() == old)
        lines[at] = lines[at][: len(lines[at]) - len(lines[at].lstrip())] + new
    return "\n".join(lines) + "\n"


def fwd(middle: str, head: str = HEAD, tail: str = TAIL) -> dict:
    """A forward made of the reference's start, `middle` (which sets weights), and its end."""
    body = "\n".join(
        "    " + line if line.strip() else line for line in middle.strip("\n").splitlines()
    )
    return {
        "CausalMultiHeadAttention.forward": head.strip("\n") + "\n" + body + "\n" + tail.strip("\n")
    }


def fails(check, *keys):
    return Exp("fail", check, keys)


def case(case_id, replace, expect, header=""):
    return pytest.param(replace, header, expect, id=case_id)


REF_WEIGHTS = "weights = self.dropout(torch.softmax(scores, dim=-1))"

WRONG = [
    # ---- dropout: after the softmax, once, with the layer's p, in train mode only
    case(
        "dropout_ignored",
        fwd("weights = torch.softmax(scores, dim=-1)"),
        fails("dropout", "check.dropout_train", "likely.dropout_missing"),
    ),
    case(
        "dropout_on_scores",
        fwd("weights = torch.softmax(self.dropout(scores), dim=-1)"),
        fails("dropout", "check.dropout_train", "likely.dropout_place"),
    ),
    case(
        "dropout_on_output",
        fwd(
            "weights = torch.softmax(scores, dim=-1)",
            tail="""
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.dropout(self.out_proj(context))
""",
        ),
        fails("dropout", "check.dropout_train", "likely.dropout_place"),
    ),
    case(
        "dropout_twice",
        fwd("weights = self.dropout(self.dropout(torch.softmax(scores, dim=-1)))"),
        fails("dropout", "check.dropout_train", "likely.dropout_twice"),
    ),
    case(
        "dropout_p_written_in",
        fwd("weights = F.dropout(torch.softmax(scores, dim=-1), 0.1, self.training)"),
        # Built with dropout 0, the layer already drops with p = 0.1 in its default (train) mode.
        fails("matches-pytorch", "check.values", "likely.dropout_p"),
        header="import torch.nn.functional as F",
    ),
    case(
        "dropout_also_in_eval",
        fwd("weights = F.dropout(torch.softmax(scores, dim=-1), self.dropout.p)"),
        fails("dropout", "check.dropout_eval", "likely.dropout_in_eval"),
        header="import torch.nn.functional as F",
    ),
    case(
        "dropout_cannot_run",
        fwd("""
assert self.dropout.p == 0, "no dropout here"
weights = torch.softmax(scores, dim=-1)
"""),
        fails("dropout", "check.dropout_raised"),
    ),
    case(
        "dropout_default_changed",
        {
            "CausalMultiHeadAttention.__init__": init(
                (
                    "def __init__(self, d_in, d_out, n_heads, context_length, dropout=0.0):",
                    "def __init__(self, d_in, d_out, n_heads, context_length, dropout=0.1):",
                )
            )
        },
        fails("constructor", "check.constructor_signature"),
    ),
    # ---- gradients: the layer must be trainable
    case(
        "no_grad_inside",
        fwd(
            f"""
with torch.no_grad():
    {REF_WEIGHTS}
""",
            tail="""
    with torch.no_grad():
        context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
        return self.out_proj(context)
""",
        ),
        fails("trainable", "check.not_trainable", "likely.grad_blocked"),
    ),
    case(
        "detached_output",
        fwd(
            REF_WEIGHTS,
            tail="""
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context).detach()
""",
        ),
        fails("trainable", "check.not_trainable"),
    ),
    case(
        "weights_through_data",
        {
            "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = (x @ self.W_q.weight.data.T).view(B, T, H, hd).transpose(1, 2)
    k = (x @ self.W_k.weight.data.T).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd**0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
"""
        },
        fails("trainable", "check.no_grad", "likely.grad_blocked"),
    ),
    # The weights learn, but no gradient goes back to x: in a model, nothing before this layer would.
    case(
        "input_detached",
        fwd(
            REF_WEIGHTS,
            head=HEAD.replace(
                "    B, T, _ = x.shape\n", "    x = x.detach()\n    B, T, _ = x.shape\n"
            ),
        ),
        fails("trainable", "check.no_input_grad", "likely.input_grad_blocked"),
    ),
    case(
        "queries_from_detached_input",
        fwd(REF_WEIGHTS, head=HEAD.replace("self.W_q(x)", "self.W_q(x.detach())")),
        fails("trainable", "check.grad_values", "likely.grad_wrong"),
    ),
    case(
        "input_through_data",
        fwd(
            REF_WEIGHTS,
            head=HEAD.replace("    B, T, _ = x.shape\n", "    x = x.data\n    B, T, _ = x.shape\n"),
        ),
        fails("trainable", "check.no_input_grad", "likely.input_grad_blocked"),
    ),
    case(
        "numpy_round_trip",
        fwd("""
weights = torch.from_numpy(torch.softmax(scores, dim=-1).numpy())
"""),
        Exp("fail", "trainable"),
    ),
    case(
        "in_place_after_softmax",
        fwd("""
weights = torch.softmax(scores, dim=-1)
weights *= 1.0
"""),
        fails("trainable", "check.backward_raised", "likely.inplace_backward"),
    ),
    # ---- the given constructor, intact
    case(
        "head_dim_float",
        {
            "CausalMultiHeadAttention.__init__": init(
                (
                    "self.d_out, self.n_heads, self.head_dim = d_out, n_heads, d_out // n_heads",
                    "self.d_out, self.n_heads, self.head_dim = d_out, n_heads, d_out / n_heads",
                )
            ),
            "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, int(self.head_dim)
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3) / hd**0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
""",
        },
        fails("constructor", "check.constructor_attr"),
    ),
    case(
        "mask_not_a_buffer",
        {
            "CausalMultiHeadAttention.__init__": init(
                (
                    'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())',
                    "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()",
                )
            )
        },
        fails("constructor", "check.mask_buffer"),
    ),
    case(
        "mask_float_buffer",
        {
            "CausalMultiHeadAttention.__init__": init(
                (
                    'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())',
                    'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))',
                )
            ),
            "CausalMultiHeadAttention.forward": fwd(
                "weights = self.dropout(torch.softmax(scores, dim=-1))",
                head=HEAD.replace("self.mask[:T, :T]", "self.mask[:T, :T].bool()"),
            )["CausalMultiHeadAttention.forward"],
        },
        fails("constructor", "check.mask_buffer"),
    ),
    case(
        "arguments_renamed",
        {
            "CausalMultiHeadAttention.__init__": init(
                (
                    "def __init__(self, d_in, d_out, n_heads, context_length, dropout=0.0):",
                    "def __init__(self, din, dout, n_heads, context_length, dropout=0.0):",
                ),
                (
                    "self.d_out, self.n_heads, self.head_dim = d_out, n_heads, d_out // n_heads",
                    "self.d_out, self.n_heads, self.head_dim = dout, n_heads, dout // n_heads",
                ),
                (
                    "self.W_q = nn.Linear(d_in, d_out, bias=False)",
                    "self.W_q = nn.Linear(din, dout, bias=False)",
                ),
                (
                    "self.W_k = nn.Linear(d_in, d_out, bias=False)",
                    "self.W_k = nn.Linear(din, dout, bias=False)",
                ),
                (
                    "self.W_v = nn.Linear(d_in, d_out, bias=False)",
                    "self.W_v = nn.Linear(din, dout, bias=False)",
                ),
                (
                    "self.out_proj = nn.Linear(d_out, d_out)",
                    "self.out_proj = nn.Linear(dout, dout)",
                ),
            )
        },
        error("TypeError"),
    ),
    # ---- state kept between calls
    case(
        "mask_sliced_in_place",
        fwd(
            f"""
{REF_WEIGHTS}
""",
            head=HEAD.replace(
                '    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))',
                '    self.mask = self.mask[:T, :T]\n    scores = scores.masked_fill(self.mask, float("-inf"))',
            ),
        ),
        Exp("fail", None, {"check.state_changed"}),
    ),
    case(
        "fused_weight_cached",
        {
            "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    if not hasattr(self, "_qkv"):
        self._qkv = torch.cat([self.W_q.weight, self.W_k.weight, self.W_v.weight]).detach()
    q, k, v = (x @ self._qkv.T).split(self.d_out, dim=-1)
    q, k, v = (t.reshape(B, T, H, hd).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(2, 3) / hd**0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
"""
        },
        Exp("fail", None, {"likely.cached_weights"}),
    ),
    case(
        "mask_cached_for_first_length",
        fwd(
            REF_WEIGHTS,
            head=HEAD.replace(
                '    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))',
                '    if not hasattr(self, "_future"):\n        self._future = self.mask[:T, :T]\n'
                '    scores = scores.masked_fill(self._future, float("-inf"))',
            ),
        ),
        Exp("fail", "call-again"),
    ),
    case(
        "keys_cached_across_calls",
        {
            "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    if getattr(self, "_kv", None) is None or self._kv[0].shape[2] != T:
        self._kv = (self.W_k(x).view(B, T, H, hd).transpose(1, 2), self.W_v(x).view(B, T, H, hd).transpose(1, 2))
    k, v = self._kv
    scores = q @ k.transpose(2, 3) / hd**0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
"""
        },
        Exp("fail"),
    ),
    # ---- only right while frozen: the notebook's self-check 3 as written
    case(
        "different_with_grad_on",
        fwd(f"""
if torch.is_grad_enabled():
    scores = scores * 1.5
{REF_WEIGHTS}
"""),
        fails("notebook", "check.notebook_values"),
    ),
    # ---- names for mistakes
    case(
        "heads_split_without_transpose",
        {
            "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, H, T, hd)
    k = self.W_k(x).view(B, H, T, hd)
    v = self.W_v(x).view(B, H, T, hd)
    scores = q @ k.transpose(2, 3) / hd**0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    return self.out_proj(context)
"""
        },
        Exp("fail", None, {"likely.heads_no_transpose"}),
    ),
    case(
        "masked_fill_result_thrown_away",
        fwd(
            REF_WEIGHTS,
            head=HEAD.replace(
                '    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))',
                '    scores.masked_fill(self.mask[:T, :T], float("-inf"))',
            ),
        ),
        Exp("fail", None, {"likely.masked_fill_discarded"}),
    ),
    # At the notebook's size d_in = d_out: the message names both widths.
    case(
        "scaled_by_sqrt_d_in",
        fwd(REF_WEIGHTS, head=HEAD.replace("/ hd**0.5", "/ x.shape[-1] ** 0.5")),
        Exp("fail", None, {"likely.scale_width"}),
    ),
    case(
        "mask_inverted",
        fwd(
            REF_WEIGHTS, head=HEAD.replace("self.mask[:T, :T], float", "~self.mask[:T, :T], float")
        ),
        Exp("fail", None, {"likely.mask_inverted_fill"}),
    ),
    case(
        "input_zeroed_in_place",
        fwd(
            REF_WEIGHTS,
            head=HEAD.replace(
                "    B, T, _ = x.shape\n", "    B, T, _ = x.shape\n    x.mul_(0.5)\n"
            ),
        ),
        fails("inputs-unchanged", "check.mutated"),
    ),
    # ---- the library kernel, however it is reached
    case(
        "kernel_through_VF",
        {
            "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q, k, v = (p(x).view(B, T, H, hd).transpose(1, 2) for p in (self.W_q, self.W_k, self.W_v))
    context = _attend(q, k, v)
    return self.out_proj(context.transpose(1, 2).reshape(B, T, self.d_out))
"""
        },
        fails("own-formula", "check.kernel"),
        header="""
import torch


def _attend(q, k, v):
    return torch._VF._scaled_dot_product_attention_math(q, k, v, None, 0.0, True)[0]
""",
    ),
    case(
        "kernel_in_a_scripted_helper",
        {
            "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q, k, v = (p(x).view(B, T, H, hd).transpose(1, 2) for p in (self.W_q, self.W_k, self.W_v))
    context = _attend(q, k, v)
    return self.out_proj(context.transpose(1, 2).reshape(B, T, self.d_out))
"""
        },
        fails("own-formula", "check.kernel"),
        header="""
import torch


@torch.jit.script
def _attend(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
""",
    ),
]


@pytest.mark.parametrize("replace, header, expect", WRONG)
def test_wrong_layer_fails_with_its_cause(run, replace, header, expect):
    results = run(LM3, learner_file(LM3, replace, header))
    verify(results, LM3, {"multi-head": expect})


CORRECT = {
    "dropout_per_head": fwd("""
probs = torch.softmax(scores, dim=-1)
weights = torch.stack([self.dropout(probs[:, h]) for h in range(H)], dim=1)
"""),
    "dropout_functional": fwd(
        "weights = F.dropout(torch.softmax(scores, dim=-1), self.dropout.p, self.training)"
    ),
    "dropout_functional_keywords": fwd(
        "weights = F.dropout(torch.softmax(scores, dim=-1), p=self.dropout.p, training=self.training)"
    ),
    "dropout_in_place": fwd("""
weights = torch.softmax(scores, dim=-1)
weights = F.dropout(weights, self.dropout.p, self.training, inplace=False)
"""),
    "per_head_loop": {
        "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    hd = self.head_dim
    q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
    heads = []
    for h in range(self.n_heads):
        cols = slice(h * hd, (h + 1) * hd)
        s = q[..., cols] @ k[..., cols].transpose(-2, -1) / hd ** 0.5
        s = s.masked_fill(self.mask[:T, :T], float("-inf"))
        heads.append(self.dropout(torch.softmax(s, dim=-1)) @ v[..., cols])
    return self.out_proj(torch.cat(heads, dim=-1))
"""
    },
    "scripted_softmax_helper": {
        "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q, k, v = (p(x).view(B, T, H, hd).transpose(1, 2) for p in (self.W_q, self.W_k, self.W_v))
    weights = self.dropout(_masked_softmax(q @ k.transpose(2, 3) / hd ** 0.5, self.mask[:T, :T]))
    return self.out_proj((weights @ v).transpose(1, 2).reshape(B, T, self.d_out))
"""
    },
    "einsum_no_transpose": {
        "CausalMultiHeadAttention.forward": """
def forward(self, x):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q, k, v = (p(x).view(B, T, H, hd) for p in (self.W_q, self.W_k, self.W_v))
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / hd ** 0.5
    weights = self.dropout(torch.softmax(scores.masked_fill(self.mask[:T, :T], float("-inf")), dim=-1))
    return self.out_proj(torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(B, T, self.d_out))
"""
    },
    "mask_large_negative_float64": fwd("""
weights = self.dropout(torch.softmax(scores.double(), dim=-1).float())
"""),
}


SCRIPTED_HELPER = """
import torch
import torch.nn.functional as F


@torch.jit.script
def _masked_softmax(scores: torch.Tensor, future: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
"""


@pytest.mark.parametrize("replace", list(CORRECT.values()), ids=list(CORRECT))
def test_correct_layer_passes(run, replace):
    results = run(LM3, learner_file(LM3, replace, SCRIPTED_HELPER))
    verify(results, LM3, {})


# ------------------------------------------------------------------ single head and shapes

CA_HEAD = """
def causal_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
"""


def ca(body: str, prelude: str = "") -> dict:
    lines = "\n".join(
        "    " + line if line.strip() else line for line in body.strip("\n").splitlines()
    )
    return {"causal_attention": prelude + CA_HEAD.strip("\n") + "\n" + lines}


SINGLE_WRONG = [
    # State kept between calls: the leakage test alone cannot see a function that answers again.
    case(
        "memo_by_shape",
        ca(
            """
key = tuple(x.shape) + tuple(Wq.shape)
if key not in _memo:
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    _memo[key] = (weights @ v, weights)
return _memo[key]
""",
            "_memo = {}\n\n\n",
        ),
        {
            "single-head": fails("call-again", "check.called_again", "likely.kept_state"),
            "leakage": fails("call-again", "check.values", "likely.kept_state"),
        },
    ),
    case(
        "first_answer_cached",
        ca(
            """
global _first
if _first is None:
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    _first = (weights @ v, weights)
if _first[0].shape[1] != T:
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights
return _first
""",
            "_first = None\n\n\n",
        ),
        {
            "single-head": fails("call-again", "check.called_again"),
            "leakage": fails("call-again", "check.values"),
        },
    ),
    case(
        "projections_cached_by_batch",
        ca(
            """
if x.shape[0] in _kv:
    k, v = _kv[x.shape[0]]
else:
    _kv[x.shape[0]] = (k, v)
scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
return weights @ v, weights
""",
            "_kv = {}\n\n\n",
        ),
        {"single-head": Exp("fail"), "leakage": Exp("fail")},
    ),
    # NaN in the weights, each with its own cause, not all blamed on diagonal=0.
    case(
        "inf_written_after_softmax",
        ca("""
weights = torch.softmax(scores, dim=-1).masked_fill(future, float("-inf"))
return weights @ v, weights
"""),
        {"single-head": Exp("fail", None, {"likely.inf_after_softmax"}), "leakage": Exp("fail")},
    ),
    case(
        "additive_mask_zero_times_inf",
        ca("""
weights = torch.softmax(scores + future.float() * float("-inf"), dim=-1)
return weights @ v, weights
"""),
        {"single-head": Exp("fail", None, {"likely.additive_mask_nan"}), "leakage": Exp("fail")},
    ),
    case(
        "diagonal_hidden_too",
        ca("""
weights = torch.softmax(scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool)), float("-inf")), dim=-1)
return weights @ v, weights
"""),
        {"single-head": Exp("fail", None, {"likely.mask_diagonal"}), "leakage": Exp("fail")},
    ),
]

SHAPES_WRONG = [
    case(
        "shapes_true_division",
        {
            "expected_shapes": """
def expected_shapes(B, T, H, hd):
    d = H * hd
    return {"projected_q": (B, T, d), "q_split_into_heads": (B, T, H, d / H), "q_per_head": (B, H, T, d / H),
            "scores": (B, H, T, T), "weights": (B, H, T, T), "context_per_head": (B, H, T, d / H),
            "context_merged": (B, T, d)}
"""
        },
        {"shapes": fails("tuples", "check.shapes_float", "likely.shapes_float")},
    ),
    case(
        "shapes_all_floats",
        {
            "expected_shapes": """
def expected_shapes(B, T, H, hd):
    s = {"projected_q": (B, T, H * hd), "q_split_into_heads": (B, T, H, hd), "q_per_head": (B, H, T, hd),
         "scores": (B, H, T, T), "weights": (B, H, T, T), "context_per_head": (B, H, T, hd),
         "context_merged": (B, T, H * hd)}
    return {k: tuple(float(n) for n in v) for k, v in s.items()}
"""
        },
        {"shapes": fails("tuples", "check.shapes_float")},
    ),
    case(
        "shapes_numpy_floats",
        {
            "expected_shapes": """
def expected_shapes(B, T, H, hd):
    import math
    d = math.prod((H, hd)) * 1.0
    return {"projected_q": (B, T, d), "q_split_into_heads": (B, T, H, hd), "q_per_head": (B, H, T, hd),
            "scores": (B, H, T, T), "weights": (B, H, T, T), "context_per_head": (B, H, T, hd),
            "context_merged": (B, T, d)}
"""
        },
        {"shapes": fails("tuples", "check.shapes_float")},
    ),
]


@pytest.mark.parametrize("replace, header, expect", SINGLE_WRONG + SHAPES_WRONG)
def test_wrong_function_fails_with_its_cause(run, replace, header, expect):
    verify(run(LM3, learner_file(LM3, replace, header)), LM3, expect)


def test_a_memo_keyed_on_the_values_is_correct(run):
    # Keyed on every value: a key on x.sum() alone is a wrong memo (two inputs with one sum
    # share an entry), which the leakage map's one-token changes now catch.
    replace = ca(
        """
key = (x.detach().numpy().tobytes(), Wq.detach().numpy().tobytes(), tuple(x.shape))
if key not in _memo:
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    _memo[key] = (weights @ v, weights)
return _memo[key]
""",
        "_memo = {}\n\n\n",
    )
    verify(run(LM3, learner_file(LM3, replace)), LM3, {})


# The leakage step passes these: no output depends on a later token.
INPUT_AND_FILL_WRONG = [
    case(
        "x_zeroed_first",
        ca(
            """
x.zero_()
weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
return weights @ v, weights
""",
            "",
        ),
        {"single-head": fails("inputs-unchanged", "check.mutated")},
    ),
    case(
        "Wq_scaled_in_place_first",
        {
            "causal_attention": """
def causal_attention(x, Wq, Wk, Wv):
    Wq /= Wq.shape[0] ** 0.5
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.transpose(-2, -1)
    T = x.shape[1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return weights @ v, weights
"""
        },
        {"single-head": Exp("fail", None, {"check.mutated", "likely.mutated_input"})},
    ),
    case(
        "fill_minus_100",
        ca("""
weights = torch.softmax(scores.masked_fill(future, -100.0), dim=-1)
return weights @ v, weights
"""),
        {"single-head": fails("future-is-zero", "check.future", "likely.fill_large_negative")},
    ),
    case(
        "fill_minus_50",
        ca("""
weights = torch.softmax(scores.masked_fill(future, -50.0), dim=-1)
return weights @ v, weights
"""),
        {"single-head": fails("future-is-zero", "check.future", "likely.fill_large_negative")},
    ),
]


@pytest.mark.parametrize("replace, header, expect", INPUT_AND_FILL_WRONG)
def test_inputs_changed_or_a_large_negative_fill_are_named(run, replace, header, expect):
    verify(run(LM3, learner_file(LM3, replace, header)), LM3, expect)
