"""What kind of shape error PyTorch raised, read from its message, and the mistake behind each
kind where a step with a state (a cache) raised and the first, without one, ran: a state joined
on the wrong axis, a view of the wrong size, tensors of different lengths. Only the kinds
whose wording PyTorch keeps stable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tutor.kit.judge_tools import msg

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


# The engine's likely mistake for each kind (with {line} {axis}), and for an error of no kind.
STATE_ERROR_WORDS: dict[str, str] = {
    "joined": "likely.state_error_joined",
    "reshaped": "likely.state_error_reshaped",
    "sizes": "likely.state_error_sizes",
    "other": "likely.state_error",
}


def state_error_likely(
    error: Mapping[str, Any], *, axis: int, keys: Mapping[str, str] | None = None
) -> dict:
    """The likely mistake behind an error a step raised once given a state (a call's
    error): its kind's (torch_error_kind) in the engine's words, or keys' (a lesson's own key
    for any kind, "other" for none), at the error's last line; axis: the tokens' axis."""
    words = {**STATE_ERROR_WORDS, **(keys or {})}
    kind = torch_error_kind(str(error.get("detail", ""))) or "other"
    frames = error.get("frames")
    line = frames[-1].get("line", "?") if isinstance(frames, list) and frames else "?"
    return msg(words[kind], line=line, axis=axis)
