"""Lesson kv-cache through the real worker: correct styles pass, and a method outside its class
is said so. The wrong versions are the lesson's mistakes (lessons/kv-cache/mistakes.toml, run by
test_lesson_mistakes.py).

Each learner file is the reference with one method or function replaced (worker_kit's
learner_file), so the other steps stay correct.
"""

from __future__ import annotations

import pytest
from worker_kit import REFERENCE, learner_file, message_keys, verify

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
        assert {"check.made_no_method", "likely.made_method_place"} <= keys, (name, keys)
