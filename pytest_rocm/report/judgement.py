"""What a change of one test between two runs means: the one set of rules ``rocm-compat diff``
(its sections and exit status) and the table (each row's status) both apply, so the table never
says "works everywhere" of a row the gate calls a regression.

A test's outcome is one of four kinds (``report.outcomes``): it **works** (passed, xpassed), is an
**expected failure** (xfailed: pytest and ``rocm-compat run`` call the run passed, the test is a
known failure: neither "works" nor "broken"), **fails** (failed, error, crashed, timeout), or was
**untested** (skipped, not installed, not run); a test one run lacks is **absent**.

Between BASE and CANDIDATE (:func:`judge`):

- a **regression**: it worked and does anything else there (absent included: a test that vanished,
  its module no longer importing, did not pass); or it was an expected failure and now fails or is
  absent (the run was green for it and is not); or a parity record that was ok in BASE is not ok
  in CANDIDATE, whatever the outcomes (:func:`broken_records`: a bf16 that breaks inside a test
  whose fp16 already failed);
- a **fix**: it did not work in BASE (failed, xfailed, untested) and works now;
- a **new skip**: untested in CANDIDATE and not in BASE;
- a **new failure**: it fails in CANDIDATE and BASE never ran it (absent or untested there).

A row's status over the table's columns (the first the base, :func:`unit_status`) is these
judgements of each later column against the first; a feature with several tests (a
device-parametrized test's CPU and GPU halves, a ``rocm_feature`` name given twice) combines its
tests' statuses (:func:`combined_status`): a GPU half skipped beside a CPU half that passed is
"partial", never "works everywhere".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pytest_rocm.report.outcomes import BAD, EXPECTED, GOOD
from pytest_rocm.report.pairing import pairs
from pytest_rocm.report.records import ReportDocument, ResultRecord

#: a row's combined status over its columns
Status = Literal["works everywhere", "regressed", "fixed", "partial", "broken", "expected failure", "untested"]
STATUSES: tuple[Status, ...] = get_args(Status)

Kind = Literal["works", "expected", "fails", "untested", "absent"]
#: the kinds that ran the test to a verdict
TESTED: tuple[Kind, ...] = ("works", "expected", "fails")

#: a parity record's identity inside one result: its dtype and its name (the output or gradient it
#: checked: ``gelu``, ``gelu.grad[0]``), and which of the records sharing those it is
RecordKey = tuple[str, str | None, int]


def kind_of(outcome: str | None) -> Kind:
    if outcome is None:
        return "absent"
    if outcome in GOOD:
        return "works"
    if outcome in BAD:
        return "fails"
    if outcome in EXPECTED:
        return "expected"
    return "untested"


def _outcome(record: Mapping[str, Any] | None) -> str | None:
    return None if record is None else record.get("outcome")


def broken_records(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[tuple[RecordKey, Mapping[str, Any], Mapping[str, Any] | None]]:
    """The parity records of one test that were ok in BASE and are not ok in CANDIDATE, as
    ``(key, base record, candidate record)``, matched by (dtype, name) and, where several share
    those, by their order. A record CANDIDATE lacks counts where CANDIDATE failed and its outcome
    says nothing more (``None`` as its record: the test stopped before it); an ok that is not
    ``true`` (a test's own record without one) proves nothing and is never compared."""
    lost_counts = kind_of(_outcome(after)) == "fails" and kind_of(_outcome(before)) != "works"
    if not lost_counts and not _any_not_ok(after):  # most pairs: nothing to match (a table asks of every one)
        return []
    found: dict[tuple[str, str | None], list[Mapping[str, Any]]] = {}
    for record in after.get("parity") or ():
        if isinstance(record, Mapping):
            found.setdefault((str(record.get("dtype", "?")), _name(record)), []).append(record)
    seen: dict[tuple[str, str | None], int] = {}
    out: list[tuple[RecordKey, Mapping[str, Any], Mapping[str, Any] | None]] = []
    for record in before.get("parity") or ():
        if not isinstance(record, Mapping):
            continue
        pair = (str(record.get("dtype", "?")), _name(record))
        index = seen[pair] = seen.get(pair, -1) + 1
        if record.get("ok") is not True:
            continue
        partners = found.get(pair, [])
        partner = partners[index] if index < len(partners) else None
        if (partner is not None and partner.get("ok") is False) or (partner is None and lost_counts):
            out.append(((pair[0], pair[1], index), record, partner))
    return out


def _any_not_ok(result: Mapping[str, Any]) -> bool:
    # a report's records are dicts: no ABC check per record
    return any(type(record) is dict and record.get("ok") is False for record in result.get("parity") or ())


def _name(record: Mapping[str, Any]) -> str | None:
    name = record.get("name")
    return None if name is None else str(name)


@dataclass
class Judgement:
    """One test between BASE and CANDIDATE (records or None where absent)."""

    regressed_outcome: bool = False
    fixed: bool = False
    new_skip: bool = False
    new_failure: bool = False
    #: :func:`broken_records`
    broken: list[tuple[RecordKey, Mapping[str, Any], Mapping[str, Any] | None]] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return self.regressed_outcome or bool(self.broken)


def judge(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> Judgement:
    """The rules of this module's docstring for one pair."""
    was, now = kind_of(_outcome(before)), kind_of(_outcome(after))
    return Judgement(
        regressed_outcome=(was == "works" and now != "works") or (was == "expected" and now in ("fails", "absent")),
        fixed=was not in ("works", "absent") and now == "works",
        new_skip=now == "untested" and was != "untested",
        new_failure=now == "fails" and was in ("absent", "untested"),
        broken=broken_records(before, after) if before is not None and after is not None else [],
    )


def unit_status(records: Sequence[Mapping[str, Any] | None]) -> Status:
    """One test's status over the columns (the first the base; None: absent from that column; a
    subset column that did not select it is left out by the caller): every later column judged
    against the first by :func:`judge`."""
    if not records:
        return "untested"
    for r in records:  # most tests of a table: they worked everywhere, and no record is not ok
        if r is None or r.get("outcome") not in GOOD:
            break
    else:
        if not any(_any_not_ok(r) for r in records[1:] if r is not None):
            return "works everywhere"
    kinds = [kind_of(_outcome(r)) for r in records]
    judged = [(kind, judge(records[0], r)) for kind, r in zip(kinds[1:], records[1:], strict=True)]
    if any(j.regressed for _, j in judged):
        return "regressed"
    tested = [k for k in kinds if k in TESTED]
    if not tested:
        return "untested"
    if all(k == "expected" for k in tested):
        return "expected failure"
    if all(k in ("fails", "expected") for k in tested):
        return "broken"
    later = [j for kind, j in judged if kind in TESTED]  # a later column that did not run it is no evidence
    if later and all(j.fixed for j in later):
        return "fixed"
    return "partial"


def combined_status(statuses: Sequence[Status]) -> Status:
    """One feature's status from its tests' (or its dtype rows'), each judged column by column:
    a regression in any is the feature's; a fix counts where nothing else is wrong; a test that
    worked beside one that was never tested is "partial" (not shown to work everywhere)."""
    found = set(statuses)
    if found <= {"works everywhere"}:
        return "works everywhere"
    if "regressed" in found:
        return "regressed"
    if found <= {"untested"}:
        return "untested"
    if found <= {"expected failure", "untested"}:
        return "expected failure"
    if found <= {"broken", "expected failure", "untested"}:
        return "broken"
    if "fixed" in found and found <= {"fixed", "works everywhere", "untested"}:
        return "fixed"
    return "partial"


def feature_statuses(reports: Sequence[ReportDocument], subsets: Collection[str] = ()) -> dict[tuple[str, str], Status]:
    """(suite, feature) -> its status over the reports (the first the base): each test paired with
    the first report's as ``rocm-compat diff`` pairs them (``report.pairing``), judged by
    :func:`unit_status`, the tests of one feature combined (:func:`combined_status`). A column in
    ``subsets`` (labels of runs that selected part of the suite) is left out of a test it lacks."""
    if not reports:
        return {}
    width = len(reports)
    units: list[list[ResultRecord | None]] = [[r] + [None] * (width - 1) for r in reports[0]["results"]]
    if width > 1:
        row_of = {id(unit[0]): unit for unit in units}
        for column, other in enumerate(reports[1:], start=1):
            paired, added = pairs(reports[0], other)
            for _, before, after in paired:
                row_of[id(before)][column] = after
            for _, record in added:
                unit: list[ResultRecord | None] = [None] * width
                unit[column] = record
                units.append(unit)
    skip = [r["label"] in subsets for r in reports]
    found: dict[tuple[str, str], list[Status]] = {}
    for unit in units:
        status = unit_status(unit if not any(skip) else [r for r, out in zip(unit, skip, strict=True) if r or not out])
        first = unit[0] or next(r for r in unit if r is not None)
        key = (first.get("suite") or "", first["feature"])
        found.setdefault(key, []).append(status)
        for r in unit:  # paired records share the feature; another suite is another row of the table
            if r is not None and r is not first and (r.get("suite") or "") != key[0]:
                found.setdefault((r.get("suite") or "", r["feature"]), []).append(status)
    return {key: s[0] if len(s) == 1 else combined_status(s) for key, s in found.items()}
