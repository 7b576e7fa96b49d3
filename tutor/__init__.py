"""attn-tutor: a terminal tutor for causal (multi-head) attention."""

__version__ = "0.1.0"
