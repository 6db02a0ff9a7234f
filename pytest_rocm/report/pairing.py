"""Which record of one report is which of another: the pairs ``rocm-compat diff`` judges and the
table's row status judges alike (``report.judgement``), so both compare the same tests.

Pure: reads two reports' results, decides nothing about outcomes.
"""

from __future__ import annotations

from collections import Counter

from pytest_rocm.report.features import device_variant_of
from pytest_rocm.report.records import ReportDocument, ResultRecord


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
    new_by_nodeid = {r["nodeid"]: r for r in candidate["results"]}
    same = _same_tests(base["results"], new_by_nodeid, len(candidate["results"]))
    if same is not None:  # the same tests under the same names: each is its own partner
        return [(f if old_count[f] == 1 else f"{f} ({b['nodeid']})", b, a) for f, b, a in same], []
    new_count = Counter(r["feature"] for r in candidate["results"])
    new_by_feature = {r["feature"]: r for r in candidate["results"]}
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


def _same_tests(
    base: list[ResultRecord], candidate: dict[str, ResultRecord], count: int
) -> list[tuple[str, ResultRecord, ResultRecord]] | None:
    """[(feature, base record, candidate record)] where both reports ran the same node ids with the
    same features (a re-run, a column of the same suite: what every rule above then pairs, found
    without them: a table pairs each column with the first), else None."""
    if count != len(base):
        return None
    out = []
    for before in base:
        after = candidate.get(before["nodeid"])
        if after is None or after["feature"] != before["feature"]:
            return None
        out.append((before["feature"], before, after))
    return out
