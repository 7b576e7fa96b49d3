"""Failures found inside another check (at other sizes, on a second call, at large scores):
the failure as the step's own checks said it, nested as `reason` in the message that says
where it was found. Its likely mistake stays its own: tutor.model.records chooses one
diagnosis among the levels (the failure's own when it names a mistake), so a message never
carries two likely mistakes that contradict each other.
"""

from __future__ import annotations

from tutor.model.records import is_generic


def msg(key: str, **params) -> dict:
    """A nested message reference, rendered in the reader's language."""
    return {"key": key, "params": params}


def nest_likely(reason: dict, likely) -> tuple[dict, object]:
    """(reason, likely) for a message that nests the failure `reason`, `likely` being what the
    outer check would blame. The failure keeps a likely mistake that names one; a generic one
    (unknown, or none) gives way to `likely`. The outer `likely` goes beside it unless it
    would only repeat the failure's or is generic where the failure's is not: the record then
    says one diagnosis, or two only when two mistakes were found."""
    params = reason["params"]
    own = params.get("likely")
    if "likely" in params and is_generic(own) and not is_generic(likely):
        return {"key": reason["key"], "params": {**params, "likely": likely}}, ""
    if not is_generic(own) and (is_generic(likely) or likely == own):
        return reason, ""
    return reason, likely


def _other_sizes_likely(explain, i: int, sub, reason: dict) -> dict:
    """What the other-sizes check would blame at case i: the lesson's explain(i, sub, source)
    (a number of the lab's written in, a squeeze, kept state, else what differs here)."""
    likely = None
    if explain is not None:
        try:
            likely = explain(i, sub, sub.source)
        except Exception:  # a diagnosis that trips must not hide the failure it explains
            likely = None
    return likely if likely is not None else msg("likely.other_sizes")
