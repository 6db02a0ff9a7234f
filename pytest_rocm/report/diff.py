"""``rocm-compat diff BASE CANDIDATE``: the upgrade gate.

Compares two reports feature by feature: regressions (passed in BASE, not passed in CANDIDATE,
including a feature CANDIDATE lacks: a run that lost results must not pass the gate), fixes,
new skips, and parity errors that grew by more than a factor. Exit 0 when nothing regressed,
1 on a regression (or on new skips / grown errors when asked), 2 on bad input.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pytest_rocm.report.load import metric
from pytest_rocm.report.outcomes import Outcome
from pytest_rocm.report.records import ReportDocument, ResultRecord

PASSING: tuple[Outcome, ...] = ("passed", "xpassed")
SKIPPING: tuple[Outcome, ...] = ("skipped", "not-installed")
#: errors at or below this are noise for the growth check (a float32 result that was exact)
DEFAULT_FLOOR = 1e-6


@dataclass
class Change:
    feature: str
    base: Outcome | None
    candidate: Outcome | None
    reason: str | None = None


@dataclass
class Growth:
    feature: str
    dtype: str
    name: str | None
    base: float
    candidate: float
    factor: float


@dataclass
class Diff:
    regressions: list[Change] = field(default_factory=list)
    fixes: list[Change] = field(default_factory=list)
    new_skips: list[Change] = field(default_factory=list)
    grown_errors: list[Growth] = field(default_factory=list)
    added: list[str] = field(default_factory=list)


def index(report: ReportDocument) -> dict[str, ResultRecord]:
    """Records by feature; tests that share a feature name are each told apart by node id (all of
    them, not "all but the first": under xdist the order of results changes from run to run)."""
    counts = Counter(record["feature"] for record in report["results"])
    by_feature: dict[str, ResultRecord] = {}
    for record in report["results"]:
        key = record["feature"]
        by_feature[key if counts[key] == 1 else f"{key} ({record['nodeid']})"] = record
    return by_feature


def _errors(record: ResultRecord) -> dict[tuple[str, str | None], float]:
    out: dict[tuple[str, str | None], float] = {}
    for entry in record.get("parity") or []:
        value = metric(entry) if isinstance(entry, dict) else None
        if value is not None:
            key = (str(entry.get("dtype", "?")), entry.get("name"))
            out[key] = max(out.get(key, value), value)
    return out


def compare(
    base: ReportDocument, candidate: ReportDocument, factor: float = 10.0, floor: float = DEFAULT_FLOOR
) -> Diff:
    old, new = index(base), index(candidate)
    diff = Diff(added=sorted(set(new) - set(old)))
    for feature, before in old.items():
        after = new.get(feature)
        outcome = after["outcome"] if after else None
        reason = after.get("reason") if after else "missing from the candidate report"
        change = Change(feature, before["outcome"], outcome, reason)
        if before["outcome"] in PASSING and outcome not in PASSING:
            diff.regressions.append(change)
        elif before["outcome"] not in PASSING and outcome in PASSING:
            diff.fixes.append(change)
        if outcome in SKIPPING and before["outcome"] not in SKIPPING:
            diff.new_skips.append(change)
        if after is None:
            continue
        before_errors = _errors(before)
        for key, value in _errors(after).items():
            if key in before_errors:
                reference = max(before_errors[key], floor)
                if value > factor * reference:  # inf (a new overflow) counts; nan never compares
                    diff.grown_errors.append(
                        Growth(feature, key[0], key[1], before_errors[key], value, value / reference)
                    )
    for feature in diff.added:
        if new[feature]["outcome"] in SKIPPING:
            diff.new_skips.append(Change(feature, None, new[feature]["outcome"], new[feature].get("reason")))
    return diff


def render_text(diff: Diff, base_label: str, candidate_label: str, factor: float) -> str:
    lines = [f"BASE      {base_label}", f"CANDIDATE {candidate_label}", ""]

    def section(title: str, items: list[Change]) -> None:
        lines.append(f"{title}: {len(items)}")
        for c in items:
            why = f"  -- {c.reason}" if c.reason and c.candidate not in PASSING else ""
            lines.append(f"  {c.feature}: {c.base or 'absent'} -> {c.candidate or 'missing'}{why}")

    section("regressions", diff.regressions)
    section("fixes", diff.fixes)
    section("new skips", diff.new_skips)
    lines.append(f"parity errors grown more than {factor:g}x: {len(diff.grown_errors)}")
    for g in diff.grown_errors:
        name = f" {g.name}" if g.name else ""
        lines.append(f"  {g.feature} {g.dtype}{name}: {g.base:.2e} -> {g.candidate:.2e} ({g.factor:.0f}x)")
    if diff.added:
        lines.append(f"new features in the candidate: {len(diff.added)}")
    return "\n".join(lines) + "\n"


def verdict(diff: Diff, fail_on_new_skips: bool = False, fail_on_grown_errors: bool = False) -> int:
    if diff.regressions:
        return 1
    if fail_on_new_skips and diff.new_skips:
        return 1
    if fail_on_grown_errors and diff.grown_errors:
        return 1
    return 0
