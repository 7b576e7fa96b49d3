"""A failing check's record, read off the kit's messages (tutor/model/records.py): which
diagnosis is said when a failure is nested in another check, and where it was found."""

from __future__ import annotations

from tutor.model.records import record_of
from tutor.model.results import Check, Message
from tutor.text.i18n import t
from tutor.text.record_text import check_record_text


def m(key: str, **params) -> dict:
    return {"key": key, "params": params}


def nested(inner: dict, outer_likely) -> Check:
    return Check(
        "other-sizes",
        "fail",
        Message("check.other_sizes", {"sizes": "T=9", "reason": inner, "likely": outer_likely}),
    )


RAISED = m("check.raised", fn="f", kind="RuntimeError", line=7, detail="boom")
LITERAL = m("likely.literal", name="T", value=6, line=7, code="x.view(2, 6)", now="T=9")
SIZES = m("likely.sizes_differ", diff="T=9 (6)")


def diagnosis(check: Check) -> list[str]:
    record = record_of(check)
    assert record is not None
    return [d.key for d in record.diagnosis]


def test_the_failures_own_mistake_wins_over_a_guess_about_sizes():
    inner = m("check.mutated", fn="f", arg="scores", err=1.0, likely=m("likely.mutated"))
    assert diagnosis(nested(inner, SIZES)) == ["likely.mutated"]


def test_a_mistake_seen_in_the_file_wins_over_the_failures_guess():
    inner = m("check.shape", what="out", expected="(9,)", got="(6,)", likely=m("likely.shape"))
    assert diagnosis(nested(inner, LITERAL)) == ["likely.literal"]


def test_a_failure_with_no_diagnosis_takes_the_outer_one_and_says_where():
    check = nested(RAISED, SIZES)
    record = record_of(check)
    assert record is not None
    assert [d.key for d in record.diagnosis] == ["likely.sizes_differ"]
    assert record.where == {"line": 7, "sizes": "T=9"}
    assert record.raw_error == {"kind": "RuntimeError", "detail": "boom"}
    assert [c.key for c in record.context] == ["check.other_sizes"]


def test_an_unknown_mistake_gives_way_and_is_said_only_when_nothing_else_is():
    inner = m(
        "check.values", what="w", err=0.1, where="(0,)", tol="1e-5", likely=m("likely.unknown")
    )
    assert diagnosis(nested(inner, m("likely.kept_state"))) == ["likely.kept_state"]
    assert diagnosis(Check("values", "fail", Message(inner["key"], inner["params"]))) == [
        "likely.unknown"
    ]


def test_two_mistakes_are_said_as_two():
    both = [m("likely.scale_none"), m("likely.no_mask")]
    check = Check(
        "values",
        "fail",
        Message(
            "check.values", {"what": "w", "err": 1, "where": "(0,)", "tol": "1e-5", "likely": both}
        ),
    )
    assert diagnosis(check) == ["likely.scale_none", "likely.no_mask"]
    for lang in ("en", "zh"):
        said = check_record_text(check, lang).diagnosis
        assert said.startswith(t("record.two_mistakes", lang, first="", second="")[:8])
        assert said.count(t("record.likely_label", lang)) == 0
