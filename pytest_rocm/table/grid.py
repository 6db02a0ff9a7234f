"""The table as a team lead reads it: one row per feature with the dtypes as sub-columns, the
per-suite summary, the rows that differ between columns and the errors that grew.

Pure and stdlib only, built from a :class:`~pytest_rocm.table.model.Table`: ``markdown`` and
``html`` render what this module decides, so both say the same thing.

- :func:`split_dtype`: ``operators/matmul[mm-bfloat16]`` -> (``operators/matmul[mm]``, ``bfloat16``);
- :func:`feature_rows`: the table's rows grouped into :class:`FeatureRow` (one per feature);
- :func:`summary`: per suite and column, how many results passed / failed / crashed / were not
  installed / skipped;
- :func:`grown`: the cells whose parity error grew past ``GROWTH_FACTOR`` times the first
  column's (``rocm-compat diff``'s rule), marked in the cell;
- :func:`slowed`: the cells whose measured speed fell more than ``SLOWDOWN_FACTOR`` times below
  the first column's, beyond the recorded noise (``report.perf.slowdown_of``: diff's rule), marked
  in the cell.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field

from pytest_rocm.parity.tolerances import known_dtype
from pytest_rocm.report.growth import DEFAULT_FACTOR, DEFAULT_FLOOR, grown_errors, growth_figure
from pytest_rocm.report.judgement import combined_status
from pytest_rocm.report.outcomes import BAD, GOOD, SUMMARY
from pytest_rocm.report.perf import DEFAULT_MAX_SLOWDOWN, slowdown_of
from pytest_rocm.table.oneline import ONE_LINE_CHARS, one_line

__all__ = ["combined_status"]  # re-exported: a feature's status is report.judgement's
from pytest_rocm.report.selection import selected_cells
from pytest_rocm.table.model import STATUSES, Cell, Row, Status, Table

#: the growth that marks a cell: the default of ``rocm-compat diff --factor``
GROWTH_FACTOR = DEFAULT_FACTOR
#: the slowdown that marks a cell: the default of ``rocm-compat diff --max-slowdown``
SLOWDOWN_FACTOR = DEFAULT_MAX_SLOWDOWN
#: where a feature has no dtype in its name, its one result sits in this sub-column
NO_DTYPE = ""
#: the order of the dtype sub-columns
DTYPE_ORDER = ("float32", "float16", "bfloat16", "float64")


def split_dtype(feature: str) -> tuple[str, str]:
    """(the feature without its dtype, the canonical dtype or ``NO_DTYPE``) from a row name whose
    parameters hold one dtype token (``[mm-bfloat16]``, ``[fp16]``)."""
    if not feature.endswith("]") or "[" not in feature:
        return feature, NO_DTYPE
    name, params = feature[:-1].split("[", 1)
    tokens = params.split("-")
    dtypes = []
    for i, token in enumerate(tokens):
        dtype = known_dtype(token)
        if dtype is not None:
            dtypes.append((i, dtype))
    if len(dtypes) != 1:
        return feature, NO_DTYPE
    index, dtype = dtypes[0]
    rest = [t for i, t in enumerate(tokens) if i != index]
    return (f"{name}[{'-'.join(rest)}]" if rest else name), dtype


@dataclass
class FeatureRow:
    suite: str
    feature: str
    #: dtype (or ``NO_DTYPE``) -> the table row of that dtype
    by_dtype: dict[str, Row]
    status: Status
    #: the first of its rows with a known issue or a detail (a workload signature)
    issue: Row | None = None
    #: (label, dtype) -> how many times the first column's error the cell's grew, where past GROWTH_FACTOR
    growth: dict[tuple[str, str], float] = field(default_factory=dict)
    #: (label, dtype) -> how many times slower than the first column the cell ran, where past
    #: SLOWDOWN_FACTOR and beyond the recorded spread
    slowdown: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def status_text(self) -> str:
        """The status, and a grown error or a slowdown beside it: ``works everywhere, error grew
        50x, 3.0x slower``."""
        text: str = self.status
        if self.growth:
            worst = max(self.growth.values())
            text += f", error grew {growth_figure(worst)}"
        if self.slowdown:
            worst = max(self.slowdown.values())
            text += f", {worst:.1f}x slower" if math.isfinite(worst) else ", speed not comparable"
        return text

    def cells(self, label: str) -> list[Cell]:
        return [c for row in self.by_dtype.values() if (c := row.cells.get(label)) is not None]

    @property
    def failing(self) -> bool:
        for row in self.by_dtype.values():  # loops, not a generator: asked of every row of a table
            for c in row.cells.values():
                if c is not None and c.outcome in BAD:
                    return True
        return False

    def differs(self, labels: list[str], subsets: Collection[str] = ()) -> bool:
        """Whether the columns disagree: another outcome in some dtype, or a grown error (a subset
        column's row it did not select disagrees with nothing)."""
        if len(labels) < 2:
            return False
        if self.growth or self.slowdown:
            return True
        for row in self.by_dtype.values():
            cells = selected_cells(row.cells, subsets) if subsets else row.cells.values()
            if len({c.outcome if c is not None else None for c in cells}) > 1:
                return True
        return False


def _dtype_rank(dtype: str) -> tuple[int, str]:
    return (DTYPE_ORDER.index(dtype) if dtype in DTYPE_ORDER else len(DTYPE_ORDER), dtype)


def grown(row: Row, labels: list[str]) -> dict[str, float]:
    """label -> growth factor of its worst grown error over the first column's, where past
    GROWTH_FACTOR: ``report.growth.grown_errors`` on each (dtype, record name), the gate's rule and
    figure, so the table never shows another number than ``rocm-compat diff``."""
    base = row.cells.get(labels[0]) if len(labels) >= 2 else None
    if base is None:
        return {}
    out: dict[str, float] = {}
    for label in labels[1:]:
        cell = row.cells.get(label)
        if cell is None:
            continue
        growths = grown_errors(row.feature, base.named_errors, cell.named_errors, GROWTH_FACTOR, DEFAULT_FLOOR)
        if growths:
            out[label] = max(g.factor for g in growths)
    return out


def slowed(row: Row, labels: list[str]) -> dict[str, float]:
    """label -> how many times slower than the first column the cell's perf record ran, where
    ``report.perf.slowdown_of`` calls it a slowdown past SLOWDOWN_FACTOR and not noisy (the change
    wider than both columns' recorded spread): diff's rule, so the table and the gate agree."""
    base = row.cells.get(labels[0]) if len(labels) >= 2 else None
    if base is None or not base.perf:
        return {}
    out: dict[str, float] = {}
    for label in labels[1:]:
        cell = row.cells.get(label)
        slow = slowdown_of(row.feature, base.perf, cell.perf if cell else None, SLOWDOWN_FACTOR)
        if slow is not None and not slow.noisy:
            out[label] = slow.factor
    return out


def feature_rows(table: Table) -> list[FeatureRow]:
    """The rows grouped by feature (dtypes as sub-columns), in the table's order."""
    groups: dict[tuple[str, str], dict[str, Row]] = {}
    for row in table.rows:
        base, dtype = split_dtype(row.feature)
        group = groups.setdefault((row.suite, base), {})
        if dtype in group:  # two rows would share a sub-column: keep them apart
            base, dtype = row.feature, NO_DTYPE
            group = groups.setdefault((row.suite, base), {})
        group[dtype] = row
    labels = table.labels
    compared = len(labels) >= 2  # growth and slowdown are against the first column
    out = []
    for (suite, base), rows in groups.items():
        if len(rows) == 1:  # most features: one row, whose status is the feature's (combined_status([s]) is s)
            by_dtype = rows
            (only,) = rows.values()
            feature = FeatureRow(suite, base, by_dtype, only.status, only if only.issue or only.detail else None)
        else:
            by_dtype = dict(sorted(rows.items(), key=lambda kv: _dtype_rank(kv[0])))
            statuses = [r.status for r in by_dtype.values()]  # build_table's row_status over the selected cells
            feature = FeatureRow(suite, base, by_dtype, combined_status(statuses))
            feature.issue = next((r for r in by_dtype.values() if r.issue or r.detail), None)
        if compared:
            for dtype, r in by_dtype.items():
                first = r.cells.get(labels[0])
                if first is None:  # grown() and slowed() compare with the first column: nothing here
                    continue
                for label, factor in grown(r, labels).items() if first.named_errors else ():
                    feature.growth[(label, dtype)] = factor
                for label, factor in slowed(r, labels).items() if first.perf else ():
                    feature.slowdown[(label, dtype)] = factor
        out.append(feature)
    return out


@dataclass
class Sections:
    """What each rendering shows, chosen once: every row, those that differ between columns, those
    that fail without differing (a row is shown once), and every row by suite in the table's order."""

    rows: list[FeatureRow]
    differ: list[FeatureRow]
    failing: list[FeatureRow]
    by_suite: dict[str, list[FeatureRow]]


def sections(table: Table) -> Sections:
    rows = feature_rows(table)
    chosen = Sections(rows, [], [], {})
    for row in rows:
        if row.differs(table.labels, table.selections):
            chosen.differ.append(row)
        elif row.failing:
            chosen.failing.append(row)
        chosen.by_suite.setdefault(row.suite, []).append(row)
    return chosen


def suite_dtypes(rows: list[FeatureRow]) -> list[str]:
    """The dtype sub-columns of a group of rows, in order (``NO_DTYPE`` last when present)."""
    found = {d for r in rows for d in r.by_dtype}
    return sorted(found - {NO_DTYPE}, key=_dtype_rank) + ([NO_DTYPE] if NO_DTYPE in found else [])


def summary(table: Table) -> dict[str, dict[str, dict[str, int]]]:
    """suite -> label -> {passed, failed, crashed, not-installed, skipped}: result counts."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    counted: dict[str, list[str]] = {}  # outcome -> the summary columns that count it, found once
    for row in table.rows:
        per_label = out.get(row.suite)
        if per_label is None:  # not setdefault: that would build the empty counts for every row
            per_label = out[row.suite] = {label: {name: 0 for name, _ in SUMMARY} for label in table.labels}
        for label, cell in row.cells.items():
            if cell is None:
                continue
            names = counted.get(cell.outcome)
            if names is None:
                names = counted[cell.outcome] = [name for name, outcomes in SUMMARY if cell.outcome in outcomes]
            numbers = per_label[label]
            for name in names:
                numbers[name] += 1
    return out


def status_counts(rows: list[FeatureRow]) -> dict[str, int]:
    return {s: sum(1 for r in rows if r.status == s) for s in STATUSES}


def cpu_baselines(table: Table) -> list[str]:
    """The columns measured on the CPU (a reference baseline, not a GPU result)."""
    return [label for label in table.labels if table.devices.get(label) == "cpu"]


#: how much of a reason a Markdown cell shows (the HTML cell shows it whole)
REASON_CHARS = 120


def short_reason(reason: str | None, limit: int = REASON_CHARS) -> str:
    text = " ".join((reason or "").removeprefix("Skipped: ").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def needs_note(cell: Cell) -> bool:
    """Whether a cell's one line leaves something out (a note then holds the whole reason and every
    figure): never for a passed cell, whose figures are its text."""
    if cell.outcome in GOOD:
        return False
    line = one_line(cell)
    reason = " ".join((cell.reason or "").removeprefix("Skipped: ").split()).removeprefix("not installed: ")
    figure = cell.figure()
    return bool(reason and reason not in line) or bool(figure and figure not in line)


def growth_text(factor: float, base_label: str) -> str:
    """``error grew 50x vs cpu torch2.13.0``: the mark of a grown error."""
    return f"error grew {growth_figure(factor)} vs {base_label}"


def slowdown_text(factor: float, base_label: str) -> str:
    """``3.0x slower vs cpu torch2.13.0``: the mark of a slowdown (an infinite factor: the first
    column's figure is 0 or not finite, ``report.perf.Slowdown.comparable``)."""
    if not math.isfinite(factor):
        return f"speed not comparable with {base_label} (its time is 0 or not finite)"
    return f"{factor:.1f}x slower vs {base_label}"


def cell_text(
    cell: Cell,
    growth: float | None = None,
    base_label: str = "",
    limit: int = REASON_CHARS,
    slowdown: float | None = None,
) -> str:
    """One cell in words, one line: ``passed · bf16 4.0e-01 (tol 1.6e-02) · error grew 50x vs ...``
    (and ``· 3.0x slower vs ...`` where it ran slower than the first column); a cell that did not
    pass says what happened in one line (``table.oneline``): ``failed: fp16 1.0e-02 > tol ...``."""
    if cell.outcome in GOOD:
        parts: list[str] = [cell.outcome]
        figure = cell.figure()
        if figure:
            parts.append(figure)
    else:  # one line: the rest (whole reason, every figure) is the cell's note
        parts = [one_line(cell, min(limit, ONE_LINE_CHARS))]
    if growth:
        parts.append(growth_text(growth, base_label))
    if slowdown:
        parts.append(slowdown_text(slowdown, base_label))
    return " · ".join(parts)


LEGEND = (
    "Each figure is the worst parity error of that dtype against a float64 CPU reference: the "
    "normwise relative error ‖y − ref‖ / ‖ref‖ where measured, else the elementwise max relative "
    "error; `tol` is the normwise tolerance it was judged against, `rtol` the elementwise one "
    "(docs/parity.md); `n/N bad` counts the elements beyond it. "
    f"'error grew' marks an error over {GROWTH_FACTOR:g}x the first column's "
    "(rocm-compat diff's rule). "
    f"'slower' marks a measured row over {SLOWDOWN_FACTOR:g}x slower than in the first column, "
    "beyond both columns' recorded spread (rocm-compat diff --max-slowdown's rule; a change within "
    "the spread is noise and not marked)."
)
