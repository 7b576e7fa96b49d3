"""Whether what a step ran was the learner's own code: the judge's half of probe_tools'
watch on the checks' own functions (a reference taken from a caller's frame)."""

from __future__ import annotations

from collections.abc import Iterable

from tutor.kit.borrowed import FOREIGN_LABEL
from tutor.kit.judge_tools import Verdict


def borrowed(kernels: Iterable[str]) -> list[str]:
    """The checks' own functions that learner code ran, as jctx.kernels names them."""
    return sorted(k for k in kernels if k.endswith(f"({FOREIGN_LABEL})"))


def no_foreign(v: Verdict, fn: str, kernels: Iterable[str], check_id: str = "own-formula") -> None:
    """For a step that runs no no_kernel check of its own: fails (check.kernel) when the learner's
    code ran a function of the checks (found by what its code is, however it was reached)."""
    found = borrowed(kernels)
    v.expect(check_id, not found, "check.kernel", fn=fn, kernel=" / ".join(found))
