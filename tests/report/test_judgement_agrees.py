"""The table and the gate judge alike (``report.judgement``): for any pair of reports, the status
the table gives each row is held to what ``rocm-compat diff`` says of the same tests; and the
gate compares parity records, not only outcomes.

Generated reports: features of one test or of two device halves (``[cpu]``/``[cuda:0]``), every
outcome and "absent", parity records ok or not, a candidate that may be a ``-k`` subset.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rocm.report.diff import compare, verdict
from pytest_rocm.report.diff_text import render_text
from pytest_rocm.report.judgement import broken_records, judge, unit_status
from pytest_rocm.report.outcomes import OUTCOMES
from pytest_rocm.report.records import assemble, row_facts
from pytest_rocm.table.model import build_table

OUTCOME_OR_ABSENT = st.sampled_from([*OUTCOMES, None])


def _record(nodeid: str, outcome: str, oks: list[bool]) -> dict[str, Any]:
    feature, suite, variant = row_facts(nodeid)
    record: dict[str, Any] = {
        "nodeid": nodeid,
        "feature": feature,
        "suite": suite,
        "outcome": outcome,
        "reason": None,
        "parity": [{"dtype": "bfloat16", "name": f"out{i}", "normwise": 1e-3, "ok": ok} for i, ok in enumerate(oks)],
    }
    if variant is not None:
        record["device_variant"] = variant
    return record


@st.composite
def report_pairs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    base: list[dict[str, Any]] = []
    candidate: list[dict[str, Any]] = []
    for f in range(draw(st.integers(1, 6))):
        halves = draw(st.booleans())
        nodeids = [f"tests/test_m.py::test_{f}[cpu]", f"tests/test_m.py::test_{f}[cuda:0]"] if halves else [
            f"tests/test_m.py::test_{f}"
        ]  # fmt: skip
        for nodeid in nodeids:
            n = draw(st.integers(0, 2))
            for into in (base, candidate):
                outcome = draw(OUTCOME_OR_ABSENT)
                if outcome is not None:
                    into.append(_record(nodeid, outcome, draw(st.lists(st.booleans(), min_size=n, max_size=n))))
    first = assemble("base", {}, base, selection={"args": ["tests"], "keyword": None})
    subset = draw(st.booleans())
    second = assemble(
        "candidate", {}, candidate, selection={"args": ["tests"], "keyword": "test_1" if subset else None}
    )
    return first, second


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(report_pairs())
def test_every_row_s_status_is_the_gate_s_judgement_of_its_tests(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    base, candidate = pair
    diff = compare(base, candidate)  # type: ignore[arg-type]
    table = build_table([base, candidate])  # type: ignore[list-item]
    feature_of = {r["nodeid"]: r["feature"] for report in pair for r in report["results"]}

    def features(changes: list[Any]) -> set[str]:
        return {feature_of[c.nodeid] for c in changes}

    regressed = features(diff.regressions) | features(diff.broken_records)
    fixed, new_failures = features(diff.fixes), features(diff.new_failures)
    anything = regressed | fixed | new_failures | features(diff.new_skips) | features(diff.new_tests)
    for row in table.rows:
        why = f"{row.feature}: {row.status}\n{render_text(diff, 'base', 'candidate', 10.0)}"
        assert (row.status == "regressed") == (row.feature in regressed), why
        if row.status == "fixed":
            assert row.feature in fixed and row.feature not in new_failures, why
        if row.status == "works everywhere":
            assert row.feature not in anything, why
        if row.feature in new_failures:
            assert row.status in ("broken", "partial", "regressed"), why
        if row.status in ("regressed",) or row.feature in new_failures:
            assert verdict(diff) == 1, why
    if verdict(diff) == 0:
        assert all(row.status != "regressed" for row in table.rows)


def test_a_gpu_half_skipped_beside_a_cpu_half_that_passed_is_not_works_everywhere() -> None:
    results = [
        _record("tests/test_m.py::test_f[cpu]", "passed", []),
        _record("tests/test_m.py::test_f[cuda:0]", "skipped", []),
    ]
    (row,) = build_table([assemble("gpu", {}, results)]).rows  # type: ignore[list-item]
    assert row.feature == "tests/test_m::test_f[device]"
    assert row.status == "partial"  # was "works everywhere": the GPU half never ran


def test_xfailed_is_an_expected_failure_not_broken() -> None:
    assert unit_status([{"outcome": "xfailed"}]) == "expected failure"
    assert unit_status([{"outcome": "xfailed"}, {"outcome": "failed"}]) == "regressed"
    assert judge({"outcome": "xfailed"}, {"outcome": "failed"}).regressed
    assert judge({"outcome": "xfailed"}, None).regressed  # its module stopped importing


def _parity(*oks: bool, dtype: str = "bfloat16") -> list[dict[str, Any]]:
    return [{"dtype": dtype, "name": f"out{i}", "normwise": 1e-3, "ok": ok} for i, ok in enumerate(oks)]


def test_records_are_matched_by_dtype_name_and_order() -> None:
    before = {"outcome": "failed", "parity": [*_parity(True, True), *_parity(False, dtype="float16")]}
    after = {"outcome": "failed", "parity": [*_parity(True, False), *_parity(False, dtype="float16")]}
    found = broken_records(before, after)
    assert [key for key, _, _ in found] == [("bfloat16", "out1", 0)]
    # a record without ok: true in BASE proves nothing; a candidate record without ok: false neither
    assert (
        broken_records(
            {"parity": [{"dtype": "x", "name": "a"}]}, {"parity": [{"dtype": "x", "name": "a", "ok": False}]}
        )
        == []
    )
    assert (
        broken_records(
            {"parity": _parity(True)}, {"outcome": "passed", "parity": [{"dtype": "bfloat16", "name": "out0"}]}
        )
        == []
    )
    # two records of one (dtype, name): the second with the second
    twice = [{"dtype": "x", "name": "a", "ok": True}, {"dtype": "x", "name": "a", "ok": True}]
    later = [{"dtype": "x", "name": "a", "ok": True}, {"dtype": "x", "name": "a", "ok": False}]
    assert [k for k, _, _ in broken_records({"parity": twice}, {"outcome": "failed", "parity": later})] == [
        ("x", "a", 1)
    ]


def test_a_record_a_failing_candidate_never_reached_counts_where_the_outcome_says_nothing() -> None:
    before = {"outcome": "failed", "parity": [*_parity(False, dtype="float16"), *_parity(True)]}
    crashed = {"outcome": "crashed", "parity": []}
    assert [(k, now) for k, _, now in broken_records(before, crashed)] == [(("bfloat16", "out0", 0), None)]
    # passed -> crashed is a regression by its outcome: no list of every record it never reached
    assert broken_records({"outcome": "passed", "parity": _parity(True)}, crashed) == []
    # and a skipped candidate is untested, not broken
    assert broken_records(before, {"outcome": "skipped", "parity": []}) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(report_pairs(), report_pairs())
def test_a_row_of_three_columns_is_regressed_where_the_gate_finds_one_against_the_first(
    one: tuple[dict[str, Any], dict[str, Any]], two: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    base, second = one
    third = {**two[1], "label": "third"}
    table = build_table([base, second, third])  # type: ignore[list-item]
    regressed: set[str] = set()
    for later in (second, third):
        diff = compare(base, later)  # type: ignore[arg-type]
        feature_of = {r["nodeid"]: r["feature"] for report in (base, later) for r in report["results"]}
        regressed |= {feature_of[c.nodeid] for c in [*diff.regressions, *diff.broken_records]}
    for row in table.rows:
        assert (row.status == "regressed") == (row.feature in regressed), row
