"""Diagnosis from behaviour (issue 26): a failing step whose hand-written diagnosis is the
generic one is named by the lesson's mutant (or two mutants) that computes what the learner's
file does, through the real worker and judge; in both languages, with no placeholder left."""

from __future__ import annotations

import pytest
from worker_kit import REFERENCE

from tutor.model.mistakes import Patch, apply_patches
from tutor.model.records import local, record_of
from tutor.text import i18n
from tutor.text.record_text import check_record_text

VIEW = [
    (
        f"{n} = self.W_{n}(x).view(B, T, H, hd).transpose(1, 2)",
        f"{n} = self.W_{n}(x).view(B, H, T, hd)",
    )
    for n in "qkv"
]
MASK = 'scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))'
SCORES = "scores = q @ k.transpose(2, 3) / hd**0.5"
KV_STEP = """        scores = q @ k.transpose(2, 3) / hd**0.5
        weights = self.dropout(torch.softmax(scores, dim=-1))"""

# (lesson, [(text of the reference, what stands there)], step, diagnosis keys, keys not said)
CASES = {
    "masked_fill thrown away, single-head": (
        "lm3-l3",
        [
            (
                'weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)',
                'scores.masked_fill(future, float("-inf"))\n'
                "    weights = torch.softmax(scores, dim=-1)",
            )
        ],
        "single-head",
        {"likely.masked_fill_discarded_line"},
        {"likely.no_mask"},
    ),
    "masked_fill thrown away, multi-head": (
        "lm3-l3",
        [(MASK, 'scores.masked_fill(self.mask[:T, :T], float("-inf"))')],
        "multi-head",
        {"likely.masked_fill_discarded_line"},
        {"likely.no_mask"},
    ),
    "mask the wrong way round": (
        "lm3-l3",
        [(MASK, MASK.replace("self.mask", "~self.mask"))],
        "multi-head",
        {"likely.mask_inverted_fill"},
        {"likely.unknown"},
    ),
    "mask flipped, single-head": (
        "lm3-l3",
        [("future = torch.triu(", "future = torch.tril(")],
        "single-head",
        {"likely.mask_transposed"},
        {"likely.unknown"},
    ),
    "mask buffer unsliced": (
        "lm3-l3",
        [(MASK, MASK.replace("self.mask[:T, :T]", "self.mask"))],
        "multi-head",
        {"likely.behaves_as_one", "likely.mask_unsliced"},  # one wrong output: said singly
        set(),
    ),
    "softmax over the batch axis": (
        "lm3-l3",
        [("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=0)")],
        "multi-head",
        {"likely.behaves_as", "likely.softmax_batch_dim"},
        {"likely.unknown"},
    ),
    "view(B, H, T, hd) and no scale": (
        "lm3-l3",
        [*VIEW, (SCORES, "scores = q @ k.transpose(2, 3)")],
        "multi-head",
        {"likely.behaves_as_two", "likely.heads_no_transpose", "likely.scale_none"},
        {"likely.unknown"},
    ),
    "kv-cache: inverted mask in the cached step": (
        "kv-cache",
        [
            (
                KV_STEP,
                KV_STEP.replace(
                    "\n        weights",
                    "\n        T = k.shape[2]\n        scores = scores.masked_fill("
                    '~self.mask[T - 1 : T, :T], float("-inf"))\n        weights',
                ),
            )
        ],
        "cached-attention",
        {"likely.behaves_as", "likely.mask_inverted_fill"},
        {"likely.unknown"},
    ),
    "lab-02: -1.0 as the fill": (
        "lab-02",
        [('scores.masked_fill(mask, float("-inf"))', "scores.masked_fill(mask, -1.0)")],
        "weights",
        {"likely.behaves_as", "likely.fill_small_negative"},
        {"likely.unknown"},
    ),
    "no known mistake: what differs is said": (
        "lm3-l3",
        [(SCORES, SCORES + " + 0.3 * torch.arange(T)")],
        "multi-head",
        {"likely.behaviour_differs"},
        {"likely.unknown"},
    ),
}


def _keys(message) -> set[str]:
    found = {local(message.key)}
    stack = [message.params]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("key"), str):
                found.add(local(node["key"]))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


@pytest.mark.parametrize("case", list(CASES))
def test_named_from_behaviour(run_unwatched, case):
    """As `check` says it: it waits for the mutants (the app's verdicts do not, see below)."""
    lesson, patches, step, wanted, unwanted = CASES[case]
    source = apply_patches(REFERENCE[lesson], [Patch(old=a, new=b) for a, b in patches])
    result = run_unwatched(lesson, source)[step]
    assert result.status in ("fail", "error"), result
    check = next(c for c in result.checks if c.status != "pass")
    record = record_of(check)
    assert record is not None and record.diagnosis, check
    said = set().union(*(_keys(d) for d in record.diagnosis))
    assert wanted <= said, (case, said)
    assert not unwanted & said, (case, said)
    for lang in ("en", "zh"):
        text = check_record_text(check, lang).diagnosis
        assert text and "{" not in text, (lang, text)
        for d in record.diagnosis:  # the mistake named is said in the reader's language
            for key in _keys(d) - {"likely.behaves_as", "likely.behaves_as_two"}:
                full = next(k for k in i18n.catalog(lang) if local(k) == key)
                first = i18n.catalog(lang)[full].split("{")[0][:12]
                assert first in text, (lang, key, text)


def test_a_mistake_with_no_name_is_never_said_by_its_id(run_unwatched):
    """lab-02's scores_k_dot_T (`k.T` on batched tensors) has no diagnosis of its own and
    raises: the learner who makes it gets the raise explained, never "the known mistake
    `scores_k_dot_T`" (an id is the lesson's word, not the learner's)."""
    source = REFERENCE["lab-02"].replace("k.transpose(-2, -1)", "k.T")
    assert source != REFERENCE["lab-02"]
    result = run_unwatched("lab-02", source)["scores"]
    assert result.status == "error", result
    for lang in ("en", "zh"):
        for check in result.checks:
            if check.status != "pass":
                text = check_record_text(check, lang).diagnosis or ""
                assert "scores_k_dot_T" not in text, (lang, text)
    assert "behaves_as" not in repr(result), result
