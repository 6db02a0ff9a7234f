"""``rocm-compat diff BASE CANDIDATE``: the upgrade gate.

Compares two reports test by test (``report.pairing``), each pair judged by ``report.judgement``,
the rules the table's row status applies too: regressions (worked in BASE and not in CANDIDATE,
including a test CANDIDATE lacks: a run that lost results must not pass the gate; an xfailed test
that now fails), parity records that broke (ok in BASE, not ok in CANDIDATE, whatever the tests'
outcomes), fixes, new skips, parity errors that grew by more than a factor, and measured rows that
ran more than ``max_slowdown`` times slower (``report.perf.slowdown_of``: a change within the
recorded spread is "noisy", never a slowdown). Exit 0 when nothing regressed, 1 on a regression (or
on new skips / grown errors / slowdowns when asked), 2 on bad input, 3 when the speed gate was
asked for and no row was measured in both reports (``EXIT_SPEED_NOT_COMPARED``: "nothing compared"
is not "nothing slower").

A test the candidate ran that the base did not run (absent or skipped there), and that failed,
errored, crashed or hung, is a **new failure**: it fails the gate as a regression does
(``allow_new_failures`` relaxes it). A candidate that adds a failing test is not a candidate that
works.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_rocm.report.fleet import machine_note, tool_version_note
from pytest_rocm.report.growth import (
    DEFAULT_FACTOR,
    DEFAULT_FLOOR,
    Growth,
    grew,
    grown_errors,
    parity_errors,
)
from pytest_rocm.report.judgement import judge
from pytest_rocm.report.outcomes import GOOD, Outcome
from pytest_rocm.report.pairing import device_variant, pairs
from pytest_rocm.report.perf import DEFAULT_MAX_SLOWDOWN, Slowdown, measured_in_both, slowdown_of
from pytest_rocm.report.records import ReportDocument
from pytest_rocm.report.selection import not_comparable

# re-exported: named in report.growth and report.pairing (the words are report.diff_text's, which
# imports this module: no arrow back)
__all__ = [
    "DEFAULT_FACTOR",
    "DEFAULT_FLOOR",
    "Growth",
    "device_variant",
    "grew",
    "pairs",
]

PASSING: tuple[Outcome, ...] = GOOD
#: the exit status of ``--fail-on-slowdown`` when no row was measured in both reports
EXIT_SPEED_NOT_COMPARED = 3


@dataclass
class Change:
    feature: str
    base: Outcome | None
    candidate: Outcome | None
    reason: str | None = None
    #: the test to run again (the candidate's, else the base's): ``pytest 'NODEID'``
    nodeid: str | None = None


@dataclass
class BrokenRecord:
    """A parity record of one test that was ok in BASE and is not ok in CANDIDATE
    (``judgement.broken_records``): its dtype, its name (the output or gradient it checked), which
    of the records sharing those it is, and both records (CANDIDATE's None: it failed before it)."""

    feature: str
    nodeid: str
    dtype: str
    name: str | None
    index: int
    base: dict[str, Any]
    candidate: dict[str, Any] | None


@dataclass
class Diff:
    regressions: list[Change] = field(default_factory=list)
    #: parity records ok in BASE and not ok in CANDIDATE, whatever the tests' outcomes: regressions too
    broken_records: list[BrokenRecord] = field(default_factory=list)
    fixes: list[Change] = field(default_factory=list)
    new_skips: list[Change] = field(default_factory=list)
    grown_errors: list[Growth] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    #: tests the base did not run (absent or untested there) that fail in the candidate: the gate
    #: fails on them by default
    new_failures: list[Change] = field(default_factory=list)
    #: every test new in the candidate, whatever its outcome (``added`` with outcomes and node ids)
    new_tests: list[Change] = field(default_factory=list)
    #: the key of each compared pair -> the node id to run it again (the candidate's)
    nodeids: dict[str, str] = field(default_factory=dict)
    #: why the two reports' selections differ (a subset beside a full run), else None
    selection: str | None = None
    #: whether they were compared as if complete all the same (``--strict-selection``)
    strict_selection: bool = False
    #: the tests one report ran and the other did not select: not compared
    not_selected: list[str] = field(default_factory=list)
    #: measured rows slower than max_slowdown beyond the noise, and those within it
    slowdowns: list[Slowdown] = field(default_factory=list)
    noisy: list[Slowdown] = field(default_factory=list)
    #: rows measured (``results[*].perf``) in both reports: the rows the speed gate compared
    speed_compared: int = 0
    #: rows both reports ran (could have been compared, had both measured them), and how many
    #: of them BASE and CANDIDATE measured
    speed_comparable: int = 0
    measured_base: int = 0
    measured_candidate: int = 0
    #: notes on comparing these two at all (``report.fleet``: written by different tool versions)
    notes: list[str] = field(default_factory=list)


def compare(
    base: ReportDocument,
    candidate: ReportDocument,
    factor: float = DEFAULT_FACTOR,
    floor: float = DEFAULT_FLOOR,
    max_slowdown: float = DEFAULT_MAX_SLOWDOWN,
    strict_selection: bool = False,
) -> Diff:
    """The differences; where a report ran a subset (``report.selection``), only the tests both
    ran are compared (the rest are ``not_selected``) unless ``strict_selection``."""
    paired, added = pairs(base, candidate)
    base_unselected, candidate_unselected, note = not_comparable(base, candidate)
    diff = Diff(selection=note, strict_selection=strict_selection and note is not None)
    versions = tool_version_note([base, candidate], ["BASE", "CANDIDATE"])
    diff.notes = [versions] if versions else []
    machines = machine_note(base, candidate)
    diff.notes += [machines] if machines else []
    if note is not None and not strict_selection:
        diff.not_selected = [key for key, _, after in paired if after is None and base_unselected]
        diff.not_selected += [key for key, _ in added if candidate_unselected]
        paired = [p for p in paired if p[2] is not None or not base_unselected]
        added = [a for a in added if not candidate_unselected]
    diff.added = sorted(key for key, _ in added)
    for feature, before, after in paired:
        judged = judge(before, after)
        outcome = after["outcome"] if after else None
        reason = after.get("reason") if after else "missing from the candidate report"
        change = Change(feature, before["outcome"], outcome, reason, (after or before)["nodeid"])
        if judged.regressed_outcome:
            diff.regressions.append(change)
        elif judged.fixed:
            diff.fixes.append(change)
        if judged.new_skip:
            diff.new_skips.append(change)
        if judged.new_failure:
            diff.new_failures.append(change)
        if after is None:
            continue
        diff.broken_records += [
            BrokenRecord(
                feature, after["nodeid"], key[0], key[1], key[2], dict(was), None if now is None else dict(now)
            )
            for key, was, now in judged.broken
        ]
        diff.nodeids[feature] = after["nodeid"]
        _speed(diff, feature, before.get("perf"), after.get("perf"), max_slowdown)
        before_errors, after_errors = (
            parity_errors(before.get("parity") or []),
            parity_errors(after.get("parity") or []),
        )
        diff.grown_errors += grown_errors(feature, before_errors, after_errors, factor, floor)
    for feature, record in added:
        change = Change(feature, None, record["outcome"], record.get("reason"), record["nodeid"])
        diff.new_tests.append(change)
        judged = judge(None, record)
        if judged.new_skip:
            diff.new_skips.append(change)
        elif judged.new_failure:
            diff.new_failures.append(change)
    return diff


def _speed(diff: Diff, feature: str, before: Any, after: Any, max_slowdown: float) -> None:
    """Count a row both reports ran for the speed gate, and judge it where both measured it."""
    diff.speed_comparable += 1
    diff.measured_base += isinstance(before, Mapping)
    diff.measured_candidate += isinstance(after, Mapping)
    if measured_in_both(before, after):
        diff.speed_compared += 1
    slow = slowdown_of(feature, before, after, max_slowdown)
    if slow is not None:
        (diff.noisy if slow.noisy else diff.slowdowns).append(slow)


def verdict(
    diff: Diff,
    fail_on_new_skips: bool = False,
    fail_on_grown_errors: bool = False,
    fail_on_slowdown: bool = False,
    allow_new_failures: bool = False,
) -> int:
    if diff.regressions or diff.broken_records:
        return 1
    if diff.new_failures and not allow_new_failures:
        return 1
    if fail_on_new_skips and diff.new_skips:
        return 1
    if fail_on_grown_errors and diff.grown_errors:
        return 1
    if fail_on_slowdown and diff.slowdowns:
        return 1
    if fail_on_slowdown and not diff.speed_compared:
        return EXIT_SPEED_NOT_COMPARED  # fail closed: nothing timed in both is no evidence of speed
    return 0
