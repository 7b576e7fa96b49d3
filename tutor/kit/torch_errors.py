"""What kind of shape error PyTorch raised, read from its message: a lesson names the mistake
behind each kind in its own words (a cache joined on the wrong axis, a view of the wrong size,
keys and values of different lengths). Only the kinds whose wording PyTorch keeps stable."""

from __future__ import annotations

# (kind, fragments of PyTorch's messages that say it), the first that matches wins.
TORCH_ERRORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("joined", ("must match except in dimension",)),  # torch.cat: other axes differ
    ("reshaped", ("is invalid for input of size",)),  # view/reshape the elements do not fill
    # matmul or broadcast of sizes that do not fit
    ("sizes", ("must match the size of tensor", "size mismatch", "batch2", "cannot be multiplied")),
)


def torch_error_kind(detail: str) -> str | None:
    """ "joined" (tensors concatenated whose other axes differ), "reshaped" (a view or reshape
    to a shape the elements do not fill), "sizes" (a product or broadcast of sizes that do not
    fit), or None, from an error's message (a call's error["detail"])."""
    for kind, fragments in TORCH_ERRORS:
        if any(f in detail for f in fragments):
            return kind
    return None
