"""PyTorch's most common errors in the lessons, said in the reader's language.

The raw text stays (it is what a search engine knows), but after a sentence that says what it
means for this code: which sizes met and where. Unknown errors are left to speak for themselves.
"""

from __future__ import annotations

import re

from tutor.text.i18n import t

# (pattern, catalog key): the groups are the key's parameters, by name.
PATTERNS = [
    (
        r"The size of tensor a \((?P<a>\d+)\) must match the size of tensor b \((?P<b>\d+)\)"
        r" at non-singleton dimension (?P<dim>-?\d+)",
        "raw.broadcast",
    ),
    (
        r"mat1 and mat2 shapes cannot be multiplied \((?P<left>\d+x\d+) and (?P<right>\d+x\d+)\)",
        "raw.matmul",
    ),
    (r"shape '(?P<shape>\[[^\]]*\])' is invalid for input of size (?P<n>\d+)", "raw.view"),
    (
        r"Sizes of tensors must match except in dimension (?P<dim>-?\d+)\. Expected size"
        r" (?P<expected>\d+) but got size (?P<got>\d+)",
        "raw.cat",
    ),
    (
        r"Dimension out of range \(expected to be in range of \[(?P<low>-?\d+), (?P<high>-?\d+)\], but got (?P<dim>-?\d+)\)",
        "raw.dim_range",
    ),
    (r"view size is not compatible with input tensor's size and stride", "raw.view_stride"),
    (r"modified by an inplace operation", "raw.inplace"),
    (r"masked_fill_? only supports boolean masks", "raw.mask_bool"),
    (r"expected (?:scalar type|m1 and m2 to have the same dtype)", "raw.dtype"),
]


def explain(kind: str, detail: str, lang: str) -> str:
    """What detail means, or "" when it is not one of the errors known here."""
    for pattern, key in PATTERNS:
        found = re.search(pattern, detail)
        if found:
            return t(key, lang, **found.groupdict())
    return ""
