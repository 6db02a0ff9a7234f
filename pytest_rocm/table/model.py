"""``rocm-compat table REPORT... [--format md|csv|html] [-o FILE]``: the compatibility table.

Rows are features grouped by suite, columns are report labels, cells are outcomes with the worst
parity error per dtype where one was recorded, and each row gets a combined status.

Why this module is long: it is the one definition of a cell, a row and a table and of how reports
merge into them, which every renderer reads; split, the model and its merging would drift apart.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pytest_rocm.parity.tolerances import DTYPE_SHORT
from pytest_rocm.report.escape import csv_cell
from pytest_rocm.report.features import row_detail
from pytest_rocm.report.fleet import tool_version_note
from pytest_rocm.report.growth import at_least, merge_worst, parity_figures
from pytest_rocm.report.judgement import STATUSES, Status, feature_statuses, unit_status
from pytest_rocm.report.outcomes import SEVERITY, Outcome
from pytest_rocm.report.perf import perf_figure
from pytest_rocm.report.records import ParityRecord, ReportDocument, ResultRecord, scale_of
from pytest_rocm.report.selection import selected_cells, subset_columns
from pytest_rocm.table.oneline import is_failing, worst_failing
from pytest_rocm.table.repro_link import reproducible

SUITE_ORDER = ("operators", "libraries", "models")
__all__ = ["STATUSES", "Status"]  # re-exported: a row's status is report.judgement's


#: `` (rtol 1.0e-03)`` per tolerance seen, for Cell.figure: formatting a float is ~3,000
#: instructions, and a table's tolerances are few. Bounded (a NaN key never matches); no zero
#: is kept, as 0.0 and -0.0 are one key written two ways
_TOLERANCE_TEXT: dict[tuple[str, float], str] = {}


def _tolerance_text(tol: tuple[str, float]) -> str:
    text = f" ({tol[0]} {tol[1]:.1e})"
    if tol[1] and len(_TOLERANCE_TEXT) < 4096:
        _TOLERANCE_TEXT[tol] = text
    return text


@dataclass
class Cell:
    outcome: Outcome
    reason: str | None = None
    #: worst error figure per dtype (normwise, else max_rel)
    errors: dict[str, float] = field(default_factory=dict)
    #: elements beyond tolerance per dtype, where some were: (n_bad, n) summed over the records
    bad: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: the row's perf record (``results[*].perf``), where it measured speed
    perf: dict[str, Any] | None = None
    #: per dtype the tolerance the worst error was judged against: ("tol", its normwise_tol) for a
    #: normwise figure, ("rtol", its rtol) for an elementwise one or where no normwise_tol was recorded
    tolerances: dict[str, tuple[str, float]] = field(default_factory=dict)
    named_errors: dict[tuple[str, str | None], float] = field(default_factory=dict)  #: report.growth's keys
    #: the parity record that failed worst (``table.oneline.worst_failing``): the cell's one line
    failing: dict[str, Any] | None = None
    #: every parity record that failed (``ok`` false), as recorded: the cell's note lists them
    failed: list[dict[str, Any]] = field(default_factory=list)
    #: node ids whose failed check a script can rebuild (``rocm-compat repro``, ``table.repro_link``)
    repro: list[str] = field(default_factory=list)

    def figure(self) -> str:
        """``fp16 1.4e-03 (tol 4.9e-03) 3/1536 bad``: the worst error with its tolerance; a failure
        below the figure's size says how many elements failed."""
        errors, perf = self.errors, self.perf
        if not errors and not perf:
            return ""
        bad, tolerances, parts = self.bad, self.tolerances, []
        for d, v in errors.items():  # made for every cell of a table: one f-string, no helper calls
            tol = tolerances.get(d)
            text = f"{DTYPE_SHORT.get(d, d)} {v:.1e}"
            if tol:  # a column's tolerances are few (one per dtype and size): each written once
                text += _TOLERANCE_TEXT.get(tol) or _tolerance_text(tol)
            n_bad, n = bad.get(d, (0, 0)) if bad else (0, 0)
            parts.append(f"{text} {n_bad}/{n} bad" if n_bad else text)
        if perf:  # "312 GFLOP/s, 4 % of peak" next to the parity figure
            parts.append(perf_figure(perf))
        return " ".join(parts)

    def text(self) -> str:
        figure = self.figure()
        return f"{self.outcome} ({figure})" if figure else self.outcome


@dataclass
class Row:
    suite: str
    feature: str
    cells: dict[str, Cell | None]
    status: Status
    #: the public bug report a known-issues row reproduces (its ``info["issue"]``: url, seen_on,
    #: fixed_in, ...), None for other rows
    issue: dict[str, Any] | None = None
    detail: str = ""  # a workload row's signature and call count (features.row_detail): sorted by it

    def issue_text(self) -> str:
        """``pytorch/pytorch#189849; seen on gfx1151, torch 2.14.0a0; fixed in: not stated``"""
        if not self.issue:
            return ""
        url = str(self.issue.get("url") or "")
        seen = self.issue.get("seen_on")
        if isinstance(seen, dict):
            seen = ", ".join(f"{k} {v}" for k, v in seen.items() if v)
        return (
            f"{issue_name(url)}; seen on {seen or 'not stated'}; fixed in {self.issue.get('fixed_in') or 'not stated'}"
        )


def issue_name(url: str) -> str:
    """``https://github.com/pytorch/pytorch/issues/189849`` -> ``pytorch/pytorch#189849``."""
    parts = url.rstrip("/").split("/")
    if len(parts) >= 7 and parts[2] == "github.com" and parts[5] in ("issues", "pull"):
        return f"{parts[3]}/{parts[4]}#{parts[6]}"
    return url


@dataclass
class Table:
    labels: list[str]
    environments: dict[str, dict[str, Any]]
    rows: list[Row]
    sources: dict[str, str] = field(default_factory=dict)
    interrupted: list[str] = field(default_factory=list)
    #: each label's scale profile (``ci``/``full``), None for reports older than ``--rocm-scale``
    scales: dict[str, str | None] = field(default_factory=dict)
    #: per GPU column (used, measured): how many of its tests allocated on the accelerator
    accelerator: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: each label's device under test (``cpu`` for a CPU reference baseline), None when not recorded
    devices: dict[str, str | None] = field(default_factory=dict)
    #: each column that ran a subset of the suite -> how (``report.selection.subset_text``)
    selections: dict[str, str] = field(default_factory=dict)
    #: notes about merging these reports at all (``report.fleet``: written by different tool versions)
    notes: list[str] = field(default_factory=list)

    def column(self, label: str) -> str:
        """A column's header: the label, with its scale profile when recorded (``cpu torch2.13.0 [ci]``)
        and, for a GPU column, how many tests ran on the GPU (``rocm ... gfx1100 (3/40 on the GPU)``)."""
        scale = self.scales.get(label)
        header = f"{label} [{scale}]" if scale else label
        if label in self.selections:  # not the whole suite: its empty cells are "not selected"
            header += f" [subset: {self.selections[label]}]"
        if label in self.accelerator:
            used, measured = self.accelerator[label]
            header += f" ({used}/{measured} on the GPU)"
        return header

    def accelerator_warning(self, label: str) -> str | None:
        """The warning a GPU column gets when none of its tests used the GPU."""
        used, measured = self.accelerator.get(label, (1, 1))
        if used or not measured:
            return None
        return f"no test of {measured} used the GPU: the suite chose its own device (CPU?)"


def accelerator_use(report: ReportDocument) -> tuple[int, int] | None:
    """(used, measured) of a report run on a GPU (``device`` not cpu); None where not measured."""
    device = report.get("device")
    flags = [r["accelerator"] for r in report["results"] if isinstance(r.get("accelerator"), bool)]
    if not device or device == "cpu" or not flags:
        return None
    return sum(flags), len(flags)


def worst_errors(parity: Sequence[ParityRecord]) -> dict[str, float]:
    """Per dtype the worst error figure of the records (normwise, else max_rel; NaN the worst)."""
    return parity_figures(parity)[0]


def worst_tolerances(parity: Sequence[ParityRecord]) -> dict[str, tuple[str, float]]:
    """Per dtype the tolerance of the worst record: ("tol", ``normwise_tol``) when its figure is
    normwise and the bound was recorded, else ("rtol", its elementwise ``rtol``)."""
    return parity_figures(parity)[1]


def bad_counts(parity: Sequence[ParityRecord]) -> dict[str, tuple[int, int]]:
    """Per dtype (n_bad, n) summed over the records that have both (``n_bad``/``numel`` are optional)."""
    counts: dict[str, tuple[int, int]] = {}
    for record in parity:
        n_bad, n = (record.get("n_bad"), record.get("numel")) if isinstance(record, dict) else (None, None)
        if not isinstance(n_bad, int) or not isinstance(n, int) or isinstance(n_bad, bool):
            continue
        dtype = str(record.get("dtype", "?"))
        bad, total = counts.get(dtype, (0, 0))
        counts[dtype] = (bad + n_bad, total + n)
    return counts


def _merge(cell: Cell | None, record: ResultRecord) -> Cell:
    parity = record.get("parity")
    if parity:
        errors, tolerances, named = parity_figures(parity)
        failed = [r for r in parity if is_failing(r)]
        new = Cell(
            record["outcome"],
            record.get("reason"),
            errors,
            bad_counts(parity),
            record.get("perf"),
            tolerances,
            named,
            worst_failing(failed),
            cast("list[dict[str, Any]]", failed),
            repro=[record["nodeid"]] if failed and reproducible(failed) else [],
        )
    else:  # no parity records: no figures, counts or failing record to find
        new = Cell(record["outcome"], record.get("reason"), perf=record.get("perf"))
    if cell is None:
        return new
    if new.failing is not None:
        cell.failing = worst_failing([r for r in (cell.failing, new.failing) if r is not None])
        cell.failed = cell.failed + new.failed  # a new list: a cell never shares its list with another
        cell.repro = cell.repro + new.repro
    merge_worst(cell.named_errors, new.named_errors)
    for dtype, tol in new.tolerances.items():
        if at_least(new.errors.get(dtype, 0.0), cell.errors.get(dtype, 0.0)):
            cell.tolerances[dtype] = tol
    cell.perf = cell.perf or new.perf
    for dtype, (n_bad, n) in new.bad.items():
        old_bad, old_n = cell.bad.get(dtype, (0, 0))
        cell.bad[dtype] = (old_bad + n_bad, old_n + n)
    if SEVERITY.index(new.outcome) < SEVERITY.index(cell.outcome):
        cell.outcome, cell.reason = new.outcome, new.reason
    merge_worst(cell.errors, new.errors)
    return cell


def row_status(cells: list[Cell | None]) -> Status:
    """The status of one test whose cells these are (in the table's order, the first the base, as
    in ``rocm-compat diff``): ``report.judgement.unit_status`` on their outcomes. ``build_table``
    judges the records themselves (``judgement.feature_statuses``: parity records too, and a
    feature's tests each on its own)."""
    return unit_status([None if c is None else {"outcome": c.outcome} for c in cells])


#: a row's detail where no record gave one (``features.row_detail``): no text, no calls
_NO_DETAIL = ("", 0)


def build_table(reports: Sequence[ReportDocument], sources: list[str] | None = None) -> Table:
    labels = [r["label"] for r in reports]
    grid: dict[tuple[str, str], dict[str, Cell | None]] = {}
    issues: dict[tuple[str, str], dict[str, Any]] = {}
    details: dict[tuple[str, str], tuple[str, int]] = {}
    for report in reports:
        label = report["label"]
        for record in report["results"]:
            key = (record.get("suite") or "", record["feature"])
            cells = grid.get(key)
            if cells is None:  # not setdefault: that would make the empty row for every record
                cells = grid[key] = dict.fromkeys(labels)
            cells[label] = _merge(cells[label], record)
            info = record.get("info")
            if not info:  # most records: no issue, no workload detail
                details.setdefault(key, _NO_DETAIL)
                continue
            if isinstance(info.get("issue"), dict) and key not in issues:
                issues[key] = info["issue"]
            details[key] = row_detail(info) or details.get(key, _NO_DETAIL)

    def order(key: tuple[str, str]) -> tuple[int, str, int, str]:
        rank = SUITE_ORDER.index(key[0]) if key[0] in SUITE_ORDER else len(SUITE_ORDER)
        return rank, key[0], -details[key][1], key[1]

    subsets = subset_columns(reports)
    statuses = feature_statuses(reports, subsets)
    rows = [
        Row(
            s,
            f,
            grid[(s, f)],
            statuses.get((s, f)) or row_status(selected_cells(grid[(s, f)], subsets)),
            issues.get((s, f)),
            details[(s, f)][0],
        )
        for s, f in sorted(grid, key=order)
    ]
    return Table(
        labels=labels,
        environments={r["label"]: r.get("environment") or {} for r in reports},
        rows=rows,
        sources=dict(zip(labels, sources or [], strict=False)),
        interrupted=[r["label"] for r in reports if r.get("interrupted")],
        scales={r["label"]: scale_of(r) for r in reports},
        accelerator={r["label"]: use for r in reports if (use := accelerator_use(r)) is not None},
        devices={r["label"]: r.get("device") for r in reports},
        selections=subsets,
        notes=[note] if (note := tool_version_note(reports, labels)) else [],
    )


def environment_line(env: dict[str, Any]) -> str:
    """``rocm, torch 2.6.0+rocm6.2.4, ROCm 6.2.4, AMD Radeon RX 7900 XTX (gfx1100), Python 3.11.7``"""
    parts = [str(env.get("backend") or "cpu")]
    if env.get("torch"):
        parts.append(f"torch {env['torch']}")
    if env.get("rocm"):
        parts.append(f"ROCm {env['rocm']}")
    if env.get("cuda"):
        parts.append(f"CUDA {env['cuda']}")
    devices = [
        f"{d.get('name')} ({d.get('arch') or d.get('gfx')})" for d in env.get("devices") or [] if isinstance(d, dict)
    ]
    for device in dict.fromkeys(devices):  # 8 identical MI300X: "8× AMD Instinct MI300X (...)"
        count = devices.count(device)
        parts.append(f"{count}× {device}" if count > 1 else device)
    if env.get("python"):
        parts.append(f"Python {env['python']}")
    return ", ".join(parts)


def render_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["suite", "feature", "status"]
    for label in table.labels:
        header += [label, f"{label} parity", f"{label} reason"]
    writer.writerow([csv_cell(h) for h in [*header, "issue url", "seen on", "fixed in"]])
    for row in table.rows:
        line = [row.suite, row.feature, row.status]
        for cell in row.cells.values():
            line += [cell.outcome, cell.figure(), cell.reason or ""] if cell else ["", "", ""]
        issue = row.issue or {}
        seen = issue.get("seen_on")
        seen_text = ", ".join(f"{k} {v}" for k, v in seen.items() if v) if isinstance(seen, dict) else seen or ""
        cells = [*line, issue.get("url") or "", seen_text, issue.get("fixed_in") or ""]
        writer.writerow([csv_cell(c) for c in cells])  # a spreadsheet never runs a cell as a formula
    return buffer.getvalue()
