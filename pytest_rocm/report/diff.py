"""``rocm-compat diff BASE CANDIDATE``: the upgrade gate.

Compares two reports feature by feature: regressions (passed in BASE, not passed in CANDIDATE,
including a feature CANDIDATE lacks: a run that lost results must not pass the gate), fixes,
new skips, parity errors that grew by more than a factor, and measured rows that ran more than
``max_slowdown`` times slower (``report.perf.slowdown_of``: a change within the recorded spread is
"noisy", never a slowdown). Exit 0 when nothing regressed, 1 on a regression (or on new skips /
grown errors / slowdowns when asked), 2 on bad input.

A test the candidate ran that the base did not, and that failed, errored, crashed or hung there, is
a **new failure**: it fails the gate as a regression does (``allow_new_failures`` relaxes it). A
candidate that adds a failing test is not a candidate that works.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pytest_rocm.report.features import device_variant_of
from pytest_rocm.report.fleet import machine_note, tool_version_note
from pytest_rocm.report.growth import (
    DEFAULT_FACTOR,
    DEFAULT_FLOOR,
    Growth,
    grew,
    grown_errors,
    growth_figure,
    parity_errors,
)
from pytest_rocm.report.outcomes import Outcome
from pytest_rocm.report.perf import DEFAULT_MAX_SLOWDOWN, Slowdown, slowdown_of
from pytest_rocm.report.records import ReportDocument, ResultRecord
from pytest_rocm.report.selection import not_comparable

__all__ = ["DEFAULT_FACTOR", "DEFAULT_FLOOR", "Growth", "grew"]  # re-exported: named in report.growth

PASSING: tuple[Outcome, ...] = ("passed", "xpassed")
SKIPPING: tuple[Outcome, ...] = ("skipped", "not-installed")
#: a new test with one of these outcomes is a failure of the candidate (the gate fails on it)
FAILING: tuple[Outcome, ...] = ("failed", "error", "crashed", "timeout")


@dataclass
class Change:
    feature: str
    base: Outcome | None
    candidate: Outcome | None
    reason: str | None = None
    #: the test to run again (the candidate's, else the base's): ``pytest 'NODEID'``
    nodeid: str | None = None


@dataclass
class Diff:
    regressions: list[Change] = field(default_factory=list)
    fixes: list[Change] = field(default_factory=list)
    new_skips: list[Change] = field(default_factory=list)
    grown_errors: list[Growth] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    #: tests new in the candidate that failed there (FAILING): the gate fails on them by default
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
    #: notes on comparing these two at all (``report.fleet``: written by different tool versions)
    notes: list[str] = field(default_factory=list)


def pairs(
    base: ReportDocument, candidate: ReportDocument
) -> tuple[list[tuple[str, ResultRecord, ResultRecord | None]], list[tuple[str, ResultRecord]]]:
    """([(key, base record, candidate record or None)], [(key, candidate record only)]).

    A feature that names one test in each report is matched by feature (node ids may differ: a
    device token normalised, a module renamed). A feature that several tests share, in either
    report, is matched by node id: a new same-named test in another module must not make the old
    one "missing". What is still unmatched is matched by its device half (``device_variant``:
    ``test[cuda:0]`` in one run and ``test[cuda:3]`` in the next are the GPU half of one test)
    where that half is one test in each report. The key is the feature, with the node id where
    the feature is shared.
    """
    old_count = Counter(r["feature"] for r in base["results"])
    new_count = Counter(r["feature"] for r in candidate["results"])
    new_by_feature = {r["feature"]: r for r in candidate["results"]}
    new_by_nodeid = {r["nodeid"]: r for r in candidate["results"]}
    matched: set[int] = set()
    found: dict[int, ResultRecord] = {}  # base record's id -> its candidate record
    for before in base["results"]:
        feature = before["feature"]
        if old_count[feature] == 1 and new_count[feature] <= 1:
            after = new_by_feature.get(feature)
        else:
            after = new_by_nodeid.get(before["nodeid"])
            after = after if after is not None and after["feature"] == feature and id(after) not in matched else None
        if after is not None:
            matched.add(id(after))
            found[id(before)] = after
    for before, after in _same_halves(
        [r for r in base["results"] if id(r) not in found], [r for r in candidate["results"] if id(r) not in matched]
    ):
        matched.add(id(after))
        found[id(before)] = after
    out: list[tuple[str, ResultRecord, ResultRecord | None]] = []
    for before in base["results"]:
        feature = before["feature"]
        unique = old_count[feature] == 1 and new_count[feature] <= 1
        out.append((feature if unique else f"{feature} ({before['nodeid']})", before, found.get(id(before))))
    added = [
        (
            r["feature"]
            if new_count[r["feature"]] == 1 and old_count[r["feature"]] == 0
            else f"{r['feature']} ({r['nodeid']})",
            r,
        )
        for r in candidate["results"]
        if id(r) not in matched
    ]
    return out, added


def device_variant(record: ResultRecord) -> str | None:
    """The record's device half: its ``device_variant``, or (reports older than the field) the
    device its node id names."""
    value = record.get("device_variant")
    return value if isinstance(value, str) and value else device_variant_of(record["nodeid"])


def _same_halves(base: list[ResultRecord], candidate: list[ResultRecord]) -> list[tuple[ResultRecord, ResultRecord]]:
    """Unmatched records of one feature and one device half, where each report has exactly one."""

    def by_half(records: list[ResultRecord]) -> dict[tuple[str, str], list[ResultRecord]]:
        groups: dict[tuple[str, str], list[ResultRecord]] = {}
        for record in records:
            half = device_variant(record)
            if half is not None:
                groups.setdefault((record["feature"], half), []).append(record)
        return groups

    old, new = by_half(base), by_half(candidate)
    return [(old[key][0], new[key][0]) for key in old if len(old[key]) == 1 and len(new.get(key, ())) == 1]


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
        outcome = after["outcome"] if after else None
        reason = after.get("reason") if after else "missing from the candidate report"
        change = Change(feature, before["outcome"], outcome, reason, (after or before)["nodeid"])
        if before["outcome"] in PASSING and outcome not in PASSING:
            diff.regressions.append(change)
        elif before["outcome"] not in PASSING and outcome in PASSING:
            diff.fixes.append(change)
        if outcome in SKIPPING and before["outcome"] not in SKIPPING:
            diff.new_skips.append(change)
        if after is None:
            continue
        diff.nodeids[feature] = after["nodeid"]
        slow = slowdown_of(feature, before.get("perf"), after.get("perf"), max_slowdown)
        if slow is not None:
            (diff.noisy if slow.noisy else diff.slowdowns).append(slow)
        before_errors, after_errors = (
            parity_errors(before.get("parity") or []),
            parity_errors(after.get("parity") or []),
        )
        diff.grown_errors += grown_errors(feature, before_errors, after_errors, factor, floor)
    for feature, record in added:
        change = Change(feature, None, record["outcome"], record.get("reason"), record["nodeid"])
        diff.new_tests.append(change)
        if record["outcome"] in SKIPPING:
            diff.new_skips.append(change)
        elif record["outcome"] in FAILING:
            diff.new_failures.append(change)
    return diff


#: how many entries of a section the text lists before "... and N more" (``--show-all``: all)
SHOW_LIMIT = 20


def render_text(
    diff: Diff,
    base_label: str,
    candidate_label: str,
    factor: float,
    max_slowdown: float | None = None,
    limit: int | None = SHOW_LIMIT,
) -> str:
    """The diff in words: each section's count, then every entry with the node id to run again
    (``limit`` entries a section, then how many more; None: all)."""
    lines = [f"BASE      {base_label}", f"CANDIDATE {candidate_label}", ""]
    if diff.selection:  # first: every count below depends on it
        lines.insert(0, selection_line(diff))
    lines[0:0] = [f"NOTE: {note}" for note in diff.notes]

    def listed(entries: list[tuple[str, str | None]]) -> None:
        shown = entries if limit is None else entries[:limit]
        for text, nodeid in shown:
            lines.append(f"  {text}")
            if nodeid and nodeid not in text:  # to run exactly that test again
                lines.append(f"    {nodeid}")
        if len(shown) < len(entries):
            lines.append(f"  ... and {len(entries) - len(shown)} more (--show-all lists them)")

    def section(title: str, items: list[Change]) -> None:
        lines.append(f"{title}: {len(items)}")
        entries = []
        for c in items:
            first = c.reason.strip().splitlines()[0] if c.reason and c.reason.strip() else ""
            why = f"  -- {first}" if first and c.candidate not in PASSING else ""  # one line: the node id follows
            entries.append((f"{c.feature}: {c.base or 'absent'} -> {c.candidate or 'missing'}{why}", c.nodeid))
        listed(entries)

    section("regressions", diff.regressions)
    section("new failing tests", diff.new_failures)
    section("fixes", diff.fixes)
    section("new skips", diff.new_skips)
    lines.append(f"parity errors grown more than {factor:g}x: {len(diff.grown_errors)}")
    listed(
        [
            (
                f"{g.feature} {g.dtype}{f' {g.name}' if g.name else ''}: {g.base:.2e} -> {g.candidate:.2e}"
                f" ({growth_figure(g.factor)})",
                diff.nodeids.get(g.feature),
            )
            for g in diff.grown_errors
        ]
    )
    if diff.slowdowns or diff.noisy or max_slowdown is not None:
        over = f" more than {max_slowdown:g}x" if max_slowdown is not None else ""
        lines.append(f"slowdowns{over}: {len(diff.slowdowns)}")
        listed(
            [
                (
                    f"{s.feature}: {_ms(s.base_s)} -> {_ms(s.candidate_s)} ({s.factor:.2f}x slower, noise ±{s.noise:.0%})"
                    if s.comparable
                    # BASE's time is 0 or not finite: no ratio, and no pass either
                    else f"{s.feature}: {s.base_s!r} s -> {_ms(s.candidate_s)} (not comparable: base time is 0 or not finite)",
                    diff.nodeids.get(s.feature),
                )
                for s in diff.slowdowns
            ]
        )
        if diff.noisy:
            lines.append(
                f"noisy (slower, but within the recorded spread or timed on a busy machine): {len(diff.noisy)}"
            )
            listed(
                [
                    (
                        f"{s.feature}: {_ms(s.base_s)} -> {_ms(s.candidate_s)} ({s.factor:.2f}x, spread ±{s.noise:.0%}"
                        + (
                            f", busy machine: waited for a core {s.busy:.0%} of the time)"
                            if s.busy is not None
                            else ")"
                        ),
                        diff.nodeids.get(s.feature),
                    )
                    for s in diff.noisy
                ]
            )
    lines.append(f"new tests in the candidate: {len(diff.new_tests)}")
    listed([(f"{c.feature}: {c.candidate}", c.nodeid) for c in diff.new_tests])
    return "\n".join(lines) + "\n"


def selection_line(diff: Diff) -> str:
    """``NOT COMPARABLE AS A WHOLE: CANDIDATE ran a subset (-k 'add'): compared the tests both ran,
    397 not selected in one of them (--strict-selection compares all)``."""
    if diff.strict_selection:
        return f"NOT COMPARABLE AS A WHOLE: {diff.selection}: compared as if complete (--strict-selection)"
    return (
        f"NOT COMPARABLE AS A WHOLE: {diff.selection}: compared the tests both ran,"
        f" {len(diff.not_selected)} not selected in one of them (--strict-selection compares all)"
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def verdict(
    diff: Diff,
    fail_on_new_skips: bool = False,
    fail_on_grown_errors: bool = False,
    fail_on_slowdown: bool = False,
    allow_new_failures: bool = False,
) -> int:
    if diff.regressions:
        return 1
    if diff.new_failures and not allow_new_failures:
        return 1
    if fail_on_new_skips and diff.new_skips:
        return 1
    if fail_on_grown_errors and diff.grown_errors:
        return 1
    if fail_on_slowdown and diff.slowdowns:
        return 1
    return 0
