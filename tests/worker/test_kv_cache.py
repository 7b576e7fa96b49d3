"""Lesson kv-cache through the real worker: correct styles pass, wrong versions fail and name
their cause.

Each learner file is the reference with one method or function replaced (worker_kit's
learner_file), so the other steps stay correct; except that `generate` calls the learner's
`forward_cached`, and the cache-discipline step runs it too: a wrong forward_cached is
expected to fail all three steps, each with the message that fits it there (generate's says
to fix forward_cached first). mistakes.toml lists six of these for `attn-tutor dev check`.
"""

from __future__ import annotations

import pytest
from worker_kit import REFERENCE, Exp, learner_file, message_keys, verify

KV = "kv-cache"
FC = "CausalMultiHeadAttention.forward_cached"

HEAD = """
def forward_cached(self, x, cache=None):
    B = x.shape[0]
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, 1, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, 1, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, 1, H, hd).transpose(1, 2)
"""
CAT = """
    if cache is not None:
        past_k, past_v = cache
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
"""
TAIL = """
    scores = q @ k.transpose(2, 3) / hd**0.5
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, 1, self.d_out)
    return self.out_proj(context), (k, v)
"""


def step(body: str = CAT, tail: str = TAIL) -> dict:
    """forward_cached as the reference writes it, with its middle or its end replaced."""
    return {FC: (HEAD + body + tail).replace("\n\n", "\n")}


def gen(code: str) -> dict:
    return {"generate": code}


def fails(check, *keys, absent=()):
    return Exp("fail", check, keys, absent=absent)


STEP_FIRST = fails("matches-pytorch", "check.generate_values", "likely.step_first")
LOOP_WRONG = fails("matches-pytorch", "check.loop_values", "likely.step_wrong")


def case(case_id, replace, expect, header=""):
    return pytest.param(replace, header, expect, id=case_id)


# =================================================================== correct styles

FUNCTIONAL = {
    FC: """
def forward_cached(self, x, cache=None):
    return cached_step(self, x, cache)
""",
    "generate": '''
def attend(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    return w @ v


def heads(t, n_heads):
    B, T, d = t.shape
    return t.view(B, T, n_heads, d // n_heads).transpose(1, 2)


def cached_step(layer, x, cache):
    """The step as a function of the layer: nothing kept anywhere."""
    q, k, v = (heads(p(x), layer.n_heads) for p in (layer.W_q, layer.W_k, layer.W_v))
    if cache is not None:
        k, v = torch.cat((cache[0], k), -2), torch.cat((cache[1], v), -2)
    ctx = attend(q, k, v).transpose(1, 2).reshape(x.shape[0], 1, -1)
    return layer.out_proj(ctx), (k, v)


def generate(layer, x):
    cache, outs = None, []
    for token in x.split(1, dim=1):
        out, cache = layer.forward_cached(token, cache)
        outs.append(out)
    return torch.cat(outs, dim=1), cache
''',
}

# A new buffer each call, the past copied into it out of place: the caller's cache untouched.
PREALLOCATED = step("""
    if cache is not None:
        past_k, past_v = cache
        T = past_k.shape[2]
        k_all = past_k.new_empty(B, H, T + 1, hd)
        v_all = past_v.new_empty(B, H, T + 1, hd)
        k_all[:, :, :T] = past_k
        k_all[:, :, T:] = k
        v_all[:, :, :T] = past_v
        v_all[:, :, T:] = v
        k, v = k_all, v_all
""")

# forward itself takes the cache (as many libraries write it), for any number of new tokens
# (the mask offset by the cache's length); forward_cached is forward with the cache returned.
MODULE_FORWARD = {
    "CausalMultiHeadAttention.forward": """
def forward(self, x, cache=None, use_cache=False):
    B, T, _ = x.shape
    H, hd = self.n_heads, self.head_dim
    q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
    k = self.W_k(x).view(B, T, H, hd).transpose(1, 2)
    v = self.W_v(x).view(B, T, H, hd).transpose(1, 2)
    past = 0
    if cache is not None:
        past = cache[0].shape[2]
        k = torch.cat([cache[0], k], dim=2)
        v = torch.cat([cache[1], v], dim=2)
    scores = q @ k.transpose(2, 3) / hd**0.5
    scores = scores.masked_fill(self.mask[past:past + T, :past + T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(B, T, self.d_out)
    out = self.out_proj(context)
    return (out, (k, v)) if use_cache else out
""",
    FC: """
def forward_cached(self, x, cache=None):
    return self.forward(x, cache, use_cache=True)
""",
}

EINSUM = step(
    CAT,
    """
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * hd**-0.5
    weights = scores.softmax(-1)
    context = torch.einsum("bhqk,bhkd->bqhd", weights, v).reshape(B, 1, H * hd)
    return self.out_proj(context), (k, v)
""",
)

GEN_PREALLOCATED = gen("""
def generate(layer, x):
    B, T, _ = x.shape
    out = None
    cache = None
    for t in range(T):
        y, cache = layer.forward_cached(x[:, t:t + 1], cache)
        if out is None:
            out = y.new_zeros(B, T, y.shape[-1])
        out[:, t] = y[:, 0]
    return out, cache
""")

GEN_STACK_SQUEEZE = gen("""
def generate(layer, x):
    outs, cache = [], None
    t = 0
    while t < x.size(1):
        y, cache = layer.forward_cached(x[:, t].unsqueeze(1), cache=cache)
        outs.append(y[:, 0])
        t += 1
    return torch.stack(outs, dim=1), cache
""")

# Right at the lesson's weights; exp(s) overflows once a score passes 88. generate and the
# discipline step run at those weights, so they pass.
NAIVE_SOFTMAX = step(
    tail=TAIL.replace(
        "weights = self.dropout(torch.softmax(scores, dim=-1))",
        "e = torch.exp(scores)\n    weights = self.dropout(e / e.sum(dim=-1, keepdim=True))",
    )
)
STABLE_SOFTMAX = step(
    tail=TAIL.replace(
        "weights = self.dropout(torch.softmax(scores, dim=-1))",
        "e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))\n"
        "    weights = self.dropout(e / e.sum(dim=-1, keepdim=True))",
    )
)

CORRECT = [
    case("reference", {}, {}),
    case("functional-helpers", FUNCTIONAL, {}),
    case("preallocated-buffer-copied-out-of-place", PREALLOCATED, {}),
    case("forward-takes-the-cache", MODULE_FORWARD, {}),
    case("einsum", EINSUM, {}),
    case("softmax-by-hand-minus-the-row-max", STABLE_SOFTMAX, {}),
    case("generate-into-a-preallocated-output", GEN_PREALLOCATED, {}),
    case("generate-while-stack", GEN_STACK_SQUEEZE, {}),
]


@pytest.mark.parametrize("replace, header, expect", CORRECT)
def test_correct_styles_pass(run, replace, header, expect):
    verify(run(KV, learner_file(KV, replace, header)), KV, expect)


# =================================================================== wrong versions

NO_CONCAT = step("")
CAT_DIM1 = step(CAT.replace("dim=2", "dim=1"))
CAT_DIM_LAST = step(CAT.replace("dim=2", "dim=-1"))
KEY_ONLY = step("""
    if cache is not None:
        past_k, past_v = cache
        k = torch.cat([past_k, k], dim=2)
""")
VALUE_NOT_RETURNED = step(
    CAT.replace("v = torch.cat([past_v, v], dim=2)", "v_all = torch.cat([past_v, v], dim=2)"),
    TAIL.replace("weights @ v", "weights @ (v_all if cache is not None else v)"),
)
OLD_CACHE = step(
    "\n    old = cache\n" + CAT,
    TAIL.replace(
        "return self.out_proj(context), (k, v)",
        "return self.out_proj(context), (old if old is not None else (k, v))",
    ),
)
FULL_MASK = step(
    CAT,
    TAIL.replace(
        "scores = q @ k.transpose(2, 3) / hd**0.5",
        """scores = q @ k.transpose(2, 3) / hd**0.5
    T = k.shape[2]
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))""",
    ),
)
MASK_ROW0 = step(
    CAT,
    TAIL.replace(
        "scores = q @ k.transpose(2, 3) / hd**0.5",
        """scores = q @ k.transpose(2, 3) / hd**0.5
    T = k.shape[2]
    scores = scores.masked_fill(self.mask[:1, :T], float("-inf"))""",
    ),
)
MASK_SELF = step(
    CAT,
    TAIL.replace(
        "scores = q @ k.transpose(2, 3) / hd**0.5",
        """scores = q @ k.transpose(2, 3) / hd**0.5
    T = k.shape[2]
    if T > 1:
        scores = scores.masked_fill(self.mask[T - 2:T - 1, :T], float("-inf"))""",
    ),
)
SCALE_D_OUT = step(CAT, TAIL.replace("/ hd**0.5", "/ self.d_out**0.5"))
SCALE_T = step(CAT, TAIL.replace("/ hd**0.5", "/ k.shape[-2]**0.5"))
PREPEND = step(CAT.replace("[past_k, k]", "[k, past_k]").replace("[past_v, v]", "[v, past_v]"))
PREPEND_VALUE = step(CAT.replace("[past_v, v]", "[v, past_v]"))
PREPEND_KEY = step(CAT.replace("[past_k, k]", "[k, past_k]"))
SWAPPED = step(
    CAT,
    TAIL.replace("return self.out_proj(context), (k, v)", "return self.out_proj(context), (v, k)"),
)
SOFTMAX_QUERIES = step(CAT, TAIL.replace("dim=-1", "dim=-2"))
NO_OUT_PROJ = step(
    CAT, TAIL.replace("return self.out_proj(context), (k, v)", "return context, (k, v)")
)
PAST_IGNORED = step(
    """
    new_k, new_v = k, v
"""
    + CAT,
    TAIL.replace("q @ k.transpose", "q @ new_k.transpose").replace(
        "weights @ v", "weights @ new_v"
    ),
)
CAT_TWICE = step(
    CAT
    + """
        k = torch.cat([past_k, k], dim=2)[:, :, -(past_k.shape[2] + 2):]
        v = torch.cat([past_v, v], dim=2)[:, :, -(past_v.shape[2] + 2):]
"""
)
LAYOUT_BTHD = step(
    """
    k, v = k.transpose(1, 2), v.transpose(1, 2)
    if cache is not None:
        k = torch.cat([cache[0], k], dim=1)
        v = torch.cat([cache[1], v], dim=1)
""",
    TAIL.replace("q @ k.transpose(2, 3)", "q @ k.permute(0, 2, 3, 1)").replace(
        "weights @ v", "weights @ v.transpose(1, 2)"
    ),
)
HEADS_WRITTEN_IN = {FC: step()[FC].replace("view(B, 1, H, hd)", "view(B, 1, 2, 4)")}
STATE_ON_SELF = step("""
    if cache is None:
        self.k_all, self.v_all = k, v
    else:
        self.k_all = torch.cat([self.k_all, k], dim=2)
        self.v_all = torch.cat([self.v_all, v], dim=2)
    k, v = self.k_all, self.v_all
""")
BUFFER_VIEW = step("""
    if cache is None:
        self.kbuf = torch.zeros(B, H, 128, hd)
        self.vbuf = torch.zeros(B, H, 128, hd)
        T = 0
    else:
        T = cache[0].shape[2]
    self.kbuf[:, :, T:T + 1] = k
    self.vbuf[:, :, T:T + 1] = v
    k, v = self.kbuf[:, :, :T + 1], self.vbuf[:, :, :T + 1]
""")
CAT_OUT_INPLACE = step("""
    if cache is not None:
        past_k, past_v = cache
        k = torch.cat([past_k.clone(), k], dim=2, out=past_k)
        v = torch.cat([past_v.clone(), v], dim=2, out=past_v)
""")
DETACH = step(
    CAT,
    TAIL.replace(
        "return self.out_proj(context), (k, v)", "return self.out_proj(context).detach(), (k, v)"
    ),
)
NO_GRAD = step(
    CAT,
    TAIL.replace(
        "    scores = q @ k", "    torch.set_grad_enabled(False)\n    scores = q @ k"
    ).replace(
        "return self.out_proj(context), (k, v)",
        "out = self.out_proj(context)\n    torch.set_grad_enabled(True)\n    return out, (k, v)",
    ),
)
KERNEL = step(
    CAT,
    """
    context = F.scaled_dot_product_attention(q, k, v)
    context = context.transpose(1, 2).contiguous().view(B, 1, self.d_out)
    return self.out_proj(context), (k, v)
""",
)

GEN_RECOMPUTE = gen("""
def generate(layer, x):
    outs = []
    for t in range(x.shape[1]):
        out, cache = layer.forward_cached(x[:, t:t + 1], None)
        outs.append(layer(x[:, :t + 1])[:, -1:])
    return torch.cat(outs, dim=1), cache
""")
GEN_PREFIX = gen("""
def generate(layer, x):
    outs = []
    for t in range(x.shape[1]):
        out, cache = layer.forward_cached(x[:, :t + 1], None)
        outs.append(out)
    return torch.cat(outs, dim=1), cache
""")
GEN_NO_PASS = gen("""
def generate(layer, x):
    outs = []
    for t in range(x.shape[1]):
        out, cache = layer.forward_cached(x[:, t:t + 1])
        outs.append(out)
    return torch.cat(outs, dim=1), cache
""")
GEN_STACK = gen("""
def generate(layer, x):
    outs, cache = [], None
    for t in range(x.shape[1]):
        out, cache = layer.forward_cached(x[:, t:t + 1], cache)
        outs.append(out)
    return torch.stack(outs, dim=1), cache
""")
GEN_X_T = gen("""
def generate(layer, x):
    outs, cache = [], None
    for t in range(x.shape[1]):
        out, cache = layer.forward_cached(x[:, t], cache)
        outs.append(out)
    return torch.cat(outs, dim=1), cache
""")
GEN_HARDCODED = gen("""
def generate(layer, x):
    outs, cache = [], None
    for t in range(6):
        out, cache = layer.forward_cached(x[:, t:t + 1], cache)
        outs.append(out)
    return torch.cat(outs, dim=1), cache
""")
GEN_REVERSED = gen("""
def generate(layer, x):
    outs, cache = [], None
    for t in range(x.shape[1]):
        out, cache = layer.forward_cached(x[:, t:t + 1], cache)
        outs.insert(0, out)
    return torch.cat(outs, dim=1), cache
""")
GEN_ONLY_OUTPUT = gen("""
def generate(layer, x):
    outs, cache = [], None
    for t in range(x.shape[1]):
        out, cache = layer.forward_cached(x[:, t:t + 1], cache)
        outs.append(out)
    return torch.cat(outs, dim=1)
""")
GEN_KEEPS_STATE = gen("""
_caches = {}


def generate(layer, x):
    cache = _caches.get(id(layer))
    outs = []
    for t in range(x.shape[1]):
        out, cache = layer.forward_cached(x[:, t:t + 1], cache)
        outs.append(out)
    _caches[id(layer)] = cache
    return torch.cat(outs, dim=1), cache
""")

RAISED_AXIS = fails("runs", "check.step_raised", "likely.cat_axis")
GEN_RAISED_FIRST = fails("runs", "check.generate_raised", "likely.step_first")

WRONG = [
    case(
        "softmax-by-hand-overflows",
        NAIVE_SOFTMAX,
        {"cached-attention": fails("large-scores", "check.large_scores", "likely.softmax_large")},
    ),
    case(
        "no-concat",
        NO_CONCAT,
        {
            "cached-attention": fails("shape", "check.cache_shape", "likely.no_concat"),
            "generate": STEP_FIRST,
            "cache-discipline": fails("shape", "check.cache_growth", "likely.no_concat"),
        },
    ),
    case(
        "cat-on-the-heads-axis",
        CAT_DIM1,
        {
            "cached-attention": RAISED_AXIS,
            "generate": GEN_RAISED_FIRST,
            "cache-discipline": fails("runs", "check.step_raised", "likely.kv_lengths"),
        },
    ),
    case(
        "cat-on-the-width-axis",
        CAT_DIM_LAST,
        {
            "cached-attention": RAISED_AXIS,
            "generate": GEN_RAISED_FIRST,
            "cache-discipline": fails("runs", "check.step_raised", "likely.kv_lengths"),
        },
    ),
    case(
        "key-appended-value-not",
        KEY_ONLY,
        {
            "cached-attention": fails("runs", "check.step_raised", "likely.kv_lengths"),
            "generate": GEN_RAISED_FIRST,
            "cache-discipline": fails("runs", "check.step_raised", "likely.kv_lengths"),
        },
    ),
    case(
        "value-used-but-not-returned",
        VALUE_NOT_RETURNED,
        {
            "cached-attention": fails("shape", "check.cache_shape", "likely.value_not_appended"),
            "generate": GEN_RAISED_FIRST,
            "cache-discipline": fails("shape", "check.cache_growth", "likely.value_not_appended"),
        },
    ),
    case(
        "cache-returned-before-appending",
        OLD_CACHE,
        {
            "cached-attention": fails("shape", "check.cache_shape", "likely.returned_old_cache"),
            "generate": STEP_FIRST,
            "cache-discipline": fails("shape", "check.cache_growth", "likely.returned_old_cache"),
        },
    ),
    case(
        "t-by-t-mask-on-one-query",
        FULL_MASK,
        {
            "cached-attention": fails("runs", "check.step_raised", "likely.mask_full"),
            "generate": GEN_RAISED_FIRST,
            "cache-discipline": fails("runs", "check.step_raised", "likely.mask_full"),
        },
    ),
    case(
        "mask-row-0",
        MASK_ROW0,
        {
            "cached-attention": fails(
                "matches-pytorch", "check.step_values", "likely.mask_first_row"
            ),
            "generate": STEP_FIRST,
            "cache-discipline": LOOP_WRONG,
        },
    ),
    case(
        "mask-hides-the-new-key",
        MASK_SELF,
        {
            "cached-attention": fails("matches-pytorch", "check.step_values", "likely.mask_self"),
            "generate": STEP_FIRST,
            "cache-discipline": LOOP_WRONG,
        },
    ),
    case(
        "scale-by-d-out",
        SCALE_D_OUT,
        {
            "cached-attention": fails("matches-pytorch", "check.step_values", "likely.scale_width"),
            "generate": STEP_FIRST,
            "cache-discipline": LOOP_WRONG,
        },
    ),
    case(
        "scale-by-cache-length",
        SCALE_T,
        {
            "cached-attention": fails(
                "matches-pytorch", "check.step_values", "likely.scale_length"
            ),
            "generate": STEP_FIRST,
            "cache-discipline": LOOP_WRONG,
        },
    ),
    case(
        "softmax-over-the-one-query",
        SOFTMAX_QUERIES,
        {
            "cached-attention": fails(
                "matches-pytorch", "check.step_values", "likely.softmax_queries"
            ),
            "generate": STEP_FIRST,
            "cache-discipline": LOOP_WRONG,
        },
    ),
    case(
        "no-out-proj",
        NO_OUT_PROJ,
        {
            "cached-attention": fails("matches-pytorch", "check.step_values", "likely.no_out_proj"),
            "generate": STEP_FIRST,
            "cache-discipline": LOOP_WRONG,
        },
    ),
    case(
        "past-ignored-in-the-scores",
        PAST_IGNORED,
        {
            "cached-attention": fails(
                "matches-pytorch", "check.step_values", "likely.past_ignored"
            ),
            "generate": STEP_FIRST,
            "cache-discipline": LOOP_WRONG,
        },
    ),
    case(
        "new-token-in-front",
        PREPEND,
        {
            "cached-attention": fails("values", "check.cache_values", "likely.prepended"),
            "generate": fails("values", "check.cache_values", "likely.step_first"),
        },
    ),
    # Only one of the two in front: keys and values no longer pair up, and the output shows it.
    case(
        "new-value-in-front",
        PREPEND_VALUE,
        {
            "cached-attention": fails(
                "matches-pytorch", "check.step_values", "likely.prepended_one"
            ),
            "generate": STEP_FIRST,
            "cache-discipline": LOOP_WRONG,
        },
    ),
    case(
        "new-key-in-front",
        PREPEND_KEY,
        {
            "cached-attention": fails(
                "matches-pytorch", "check.step_values", "likely.prepended_one"
            ),
            "generate": STEP_FIRST,
            "cache-discipline": LOOP_WRONG,
        },
    ),
    case(
        "keys-and-values-swapped",
        SWAPPED,
        {
            "cached-attention": fails("values", "check.cache_values", "likely.cache_swapped"),
            "generate": STEP_FIRST,
            "cache-discipline": LOOP_WRONG,
        },
    ),
    case(
        "joined-twice",
        CAT_TWICE,
        {
            "cached-attention": fails("shape", "check.cache_shape", "likely.cat_twice"),
            "generate": STEP_FIRST,
            "cache-discipline": fails("shape", "check.cache_growth", "likely.cat_twice"),
        },
    ),
    case(
        "cache-kept-as-b-t-h-hd",
        LAYOUT_BTHD,
        {
            "cached-attention": fails("shape", "check.cache_shape", "likely.cache_layout"),
            "generate": fails("values", "check.generate_cache", "likely.cache_layout"),
            "cache-discipline": fails("shape", "check.cache_growth", "likely.cache_layout"),
        },
    ),
    case(
        "heads-written-in",
        HEADS_WRITTEN_IN,
        {
            "cached-attention": fails("other-sizes", "check.other_sizes", "likely.literal"),
            "generate": fails("other-sizes", "check.other_sizes"),
        },
    ),
    case(
        "sequence-kept-on-self",
        STATE_ON_SELF,
        {
            "cached-attention": fails("shape", "check.cache_shape", "likely.state_on_layer"),
            "cache-discipline": fails("call-again", "check.branch", "likely.state_on_layer"),
        },
    ),
    case(
        "cache-a-view-of-one-buffer",
        BUFFER_VIEW,
        {
            "cached-attention": fails(
                "matches-pytorch", "check.step_values", "likely.state_on_layer"
            ),
            "cache-discipline": fails(
                "inputs-unchanged", "check.branch_reused", "likely.state_on_layer"
            ),
        },
    ),
    case(
        "cat-into-the-callers-cache",
        CAT_OUT_INPLACE,
        {
            "cache-discipline": fails(
                "inputs-unchanged", "check.cache_mutated", "likely.mutated_cache"
            )
        },
    ),
    case(
        "output-detached",
        DETACH,
        {"cache-discipline": fails("trainable", "check.not_trainable", "likely.grad_blocked")},
    ),
    case(
        "gradients-turned-off",
        NO_GRAD,
        {"cache-discipline": fails("trainable", "check.not_trainable", "likely.grad_blocked")},
    ),
    case(
        "library-kernel",
        KERNEL,
        {
            "cached-attention": fails("own-formula", "check.kernel"),
            "generate": fails("own-formula", "check.kernel"),
            "cache-discipline": fails("own-formula", "check.kernel"),
        },
        header="import torch.nn.functional as F",
    ),
    case(
        "generate-recomputes-the-prefix",
        GEN_RECOMPUTE,
        {"generate": fails("implemented", "check.protocol", "likely.recompute_forward")},
    ),
    case(
        "generate-passes-the-prefix",
        GEN_PREFIX,
        {"generate": fails("runs", "check.generate_raised", "likely.recompute")},
    ),
    case(
        "generate-never-passes-the-cache",
        GEN_NO_PASS,
        {"generate": fails("implemented", "check.protocol", "likely.cache_not_passed")},
    ),
    case(
        "generate-stacks",
        GEN_STACK,
        {"generate": fails("shape", "check.shape", "likely.outputs_shape")},
    ),
    case(
        "generate-drops-the-time-axis",
        GEN_X_T,
        {"generate": fails("implemented", "check.protocol", "likely.token_shape")},
    ),
    case(
        "generate-six-written-in",
        GEN_HARDCODED,
        {"generate": fails("other-sizes", "check.other_sizes", "likely.literal")},
    ),
    case(
        "generate-reversed",
        GEN_REVERSED,
        {"generate": fails("matches-pytorch", "check.generate_values", "likely.outputs_reversed")},
    ),
    case(
        "generate-returns-only-the-output",
        GEN_ONLY_OUTPUT,
        {"generate": fails("returns", "check.returns_cache", "likely.generate_pair")},
    ),
    case(
        "generate-keeps-the-cache-between-calls",
        GEN_KEEPS_STATE,
        {"generate": fails("call-again", "check.new_sequence", "likely.kept_state_at")},
    ),
]


@pytest.mark.parametrize("replace, header, expect", WRONG)
def test_wrong_versions_fail_with_their_cause(run, replace, header, expect):
    source = learner_file(KV, replace, header)
    assert source != REFERENCE[KV]
    verify(run(KV, source), KV, expect)


def test_every_step_is_exercised_by_a_wrong_version():
    steps = {s for p in WRONG for s in p.values[2]}
    assert steps == {"cached-attention", "generate", "cache-discipline"}


def test_the_method_outside_the_class_is_said_so(run):
    """`def forward_cached` not indented: the class has no such method, and the message says why."""
    ref = REFERENCE[KV]
    start, end = ref.index("    def forward_cached("), ref.index("\ndef generate(")
    method = ref[start:end]
    top = "\n".join(line[4:] for line in method.splitlines()) + "\n\n"
    source = ref[:start].rstrip() + "\n\n\n" + top + ref[end:]
    compile(source, "kv_cache.py", "exec")
    results = run(KV, source)
    for name in ("cached-attention", "generate", "cache-discipline"):
        r = results[name]
        assert r.status == "fail", (name, r)
        keys = set().union(*(message_keys(c.message) for c in r.checks if c.message))
        assert {"check.no_method", "likely.method_place"} <= keys, (name, keys)
