"""Values judged against the reference as one call: the pattern every step repeats, and the
same at large magnitudes, where code that changes its input only for large values shows."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tutor.kit.judge_tools import ATOL, RTOL, Verdict, close, max_error, msg, shape_str

LARGE_INPUT = 1e3  # inputs this many times the lab's: far past any small-integer range


def require_close(
    v: Verdict,
    check_id: str,
    what: str,
    got: torch.Tensor,
    want: torch.Tensor,
    *,
    key: str = "check.values",
    likely: object = None,
    atol: float = ATOL,
    rtol: float = RTOL,
    **params: object,
) -> None:
    """Stop the step with `key` ({what} {err} {where} {tol} {likely} and params) unless got is
    close to want (kit.close: the notebooks' tolerance by default); else record check_id as
    passing. likely may be a callable: it is called only on failure."""
    if not close(got, want, atol=atol, rtol=rtol):
        err, where = max_error(got, want) if got.shape == want.shape else (float("nan"), ())
        v.require(
            check_id,
            False,
            key,
            what=what,
            err=err,
            where=shape_str(where),
            tol=_tol(atol),
            likely=likely if likely is not None else msg("likely.unknown"),
            **params,
        )
    v.expect(check_id, True)


def require_near(
    v: Verdict,
    check_id: str,
    key: str,
    got: torch.Tensor,
    want: torch.Tensor,
    *,
    likely: object,
    atol: float = ATOL,
    rtol: float = RTOL,
    where: bool = True,
    **params: object,
) -> None:
    """Stop the step with `key` unless got is close to want (kit.close), its parameters in this
    order: params, err (the largest |got - want|, NaN for another shape), where (its index, left
    out with where=False), likely. Unlike require_close, a pass records nothing: for a message
    of the lesson's own, with parameters of its own."""
    if not close(got, want, atol=atol, rtol=rtol):
        err, at = max_error(got, want) if got.shape == want.shape else (float("nan"), ())
        found: dict[str, object] = {"err": err, "where": shape_str(at)} if where else {"err": err}
        v.require(check_id, False, key, **params, **found, likely=likely)


def large_input_weights(
    weights: dict[str, torch.Tensor], names: Sequence[str], factor: float = LARGE_INPUT
) -> dict[str, torch.Tensor]:
    """weights with those named divided by factor: the ones before the scores (query and key),
    for an input factor times larger, keep the scores as they were (large scores are their own
    check); the values and the output come factor times larger."""
    return {**weights, **{name: weights[name] / factor for name in names}}


def _tol(x: float) -> str:
    """1e-05 as the messages write it: 1e-5."""
    return f"{x:g}".replace("e-0", "e-")


def judge_large_inputs(
    v: Verdict,
    call: dict | None,
    want: torch.Tensor,
    *,
    what: str,
    factor: float = LARGE_INPUT,
    check_id: str = "large-inputs",
) -> None:
    """The call made on inputs scaled by factor (probed by the lesson) against the reference on
    the same inputs, at the notebooks' tolerance scaled with the inputs: float32 rounds sums of
    values a thousand times larger a thousand times more coarsely, so an output near 0 made of
    large terms is off by ~1e-4 in correct code (seeds 1 and 7 of lm3-l3). Judged only where the
    reference is finite (where it is not, no right answer exists to hold the code to)."""
    if call is None or not bool(torch.isfinite(want).all()):
        return
    if "error" in call:
        e = call["error"]
        frames = e.get("frames") or []
        v.require(
            check_id,
            False,
            "check.large_inputs_raised",
            what=what,
            factor=f"{factor:g}",
            kind=e["kind"],
            detail=e["detail"],
            line=frames[-1]["line"] if frames else "?",
        )
    got = call.get("value")
    if isinstance(got, tuple) and len(got) == 2:
        got = got[0]
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        v.require(
            check_id,
            False,
            "check.large_inputs",
            what=what,
            factor=f"{factor:g}",
            err=float("nan"),
            where="()",
            likely=msg("likely.large_inputs"),
        )
    assert isinstance(got, torch.Tensor)  # v.require stopped the judge otherwise
    require_close(
        v,
        check_id,
        what,
        got,
        want,
        key="check.large_inputs",
        likely=msg("likely.large_inputs"),
        atol=ATOL * factor,
        factor=f"{factor:g}",
    )
