"""``rocm-compat table REPORT... [--format md|csv|html] [-o FILE]``: the compatibility table.

Rows are features grouped by suite, columns are report labels, cells are outcomes with the worst
parity error per dtype where one was recorded, and each row gets a combined status.
"""

from __future__ import annotations

import csv
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_rocm.report.load import ReportError, metric

#: outcomes that mean "works here", "does not work here"; the rest (skips) mean "not tested here"
GOOD = ("passed", "xpassed")
BAD = ("failed", "error", "crashed", "timeout", "xfailed")
#: when one feature has several tests in one report, the cell shows the worst
SEVERITY = ("crashed", "timeout", "error", "failed", "xfailed", "xpassed", "passed", "not-installed", "skipped")
SUITE_ORDER = ("operators", "libraries", "models")
STATUSES = ("works everywhere", "partial", "broken", "untested")
DTYPE_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}


@dataclass
class Cell:
    outcome: str
    reason: str | None = None
    #: worst error figure per dtype (normwise, else max_rel)
    errors: dict[str, float] = field(default_factory=dict)

    def figure(self) -> str:
        return " ".join(f"{DTYPE_SHORT.get(d, d)} {v:.1e}" for d, v in self.errors.items())

    def text(self) -> str:
        figure = self.figure()
        return f"{self.outcome} ({figure})" if figure else self.outcome


@dataclass
class Row:
    suite: str
    feature: str
    cells: dict[str, Cell | None]
    status: str


@dataclass
class Table:
    labels: list[str]
    environments: dict[str, dict[str, Any]]
    rows: list[Row]
    sources: dict[str, str] = field(default_factory=dict)
    interrupted: list[str] = field(default_factory=list)


def worst_errors(parity: list[dict[str, Any]]) -> dict[str, float]:
    errors: dict[str, float] = {}
    for record in parity:
        value = metric(record) if isinstance(record, dict) else None
        if value is None:
            continue
        dtype = str(record.get("dtype", "?"))
        errors[dtype] = max(errors.get(dtype, value), value)
    return errors


def _merge(cell: Cell | None, record: dict[str, Any]) -> Cell:
    new = Cell(record["outcome"], record.get("reason"), worst_errors(record.get("parity") or []))
    if cell is None:
        return new
    if SEVERITY.index(new.outcome) < SEVERITY.index(cell.outcome):
        cell.outcome, cell.reason = new.outcome, new.reason
    for dtype, value in new.errors.items():
        cell.errors[dtype] = max(cell.errors.get(dtype, value), value)
    return cell


def row_status(cells: list[Cell | None]) -> str:
    tested = [c for c in cells if c is not None and (c.outcome in GOOD or c.outcome in BAD)]
    if not tested:
        return "untested"
    if len(tested) == len(cells) and all(c.outcome in GOOD for c in tested):
        return "works everywhere"
    if all(c.outcome in BAD for c in tested):
        return "broken"
    return "partial"


def build_table(reports: list[dict[str, Any]], sources: list[str] | None = None) -> Table:
    labels = [r["label"] for r in reports]
    grid: dict[tuple[str, str], dict[str, Cell | None]] = {}
    for report in reports:
        for record in report["results"]:
            key = (record.get("suite") or "", record["feature"])
            cells = grid.setdefault(key, dict.fromkeys(labels))
            cells[report["label"]] = _merge(cells[report["label"]], record)

    def order(key: tuple[str, str]) -> tuple[int, str, str]:
        suite, feature = key
        rank = SUITE_ORDER.index(suite) if suite in SUITE_ORDER else len(SUITE_ORDER)
        return rank, suite, feature

    rows = [Row(s, f, grid[(s, f)], row_status(list(grid[(s, f)].values()))) for s, f in sorted(grid, key=order)]
    return Table(
        labels=labels,
        environments={r["label"]: r.get("environment") or {} for r in reports},
        rows=rows,
        sources=dict(zip(labels, sources or [], strict=False)),
        interrupted=[r["label"] for r in reports if r.get("interrupted")],
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


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(table: Table) -> str:
    out = ["# Compatibility table", ""]
    for label in table.labels:
        note = " (interrupted run: partial results)" if label in table.interrupted else ""
        out.append(f"- **{_md_escape(label)}**: {_md_escape(environment_line(table.environments[label]))}{note}")
    counts = {s: sum(1 for r in table.rows if r.status == s) for s in STATUSES}
    out += ["", "Rows: " + ", ".join(f"{n} {s}" for s, n in counts.items()), ""]
    suite = None
    for row in table.rows:
        if row.suite != suite:
            suite = row.suite
            out += ["", f"## {suite or '(no suite)'}", ""]
            out.append("| feature | " + " | ".join(_md_escape(label) for label in table.labels) + " | status |")
            out.append("|---" * (len(table.labels) + 2) + "|")
        cells = [_md_escape(c.text()) if c else "—" for c in row.cells.values()]
        out.append(f"| {_md_escape(row.feature)} | " + " | ".join(cells) + f" | {row.status} |")
    return "\n".join(out) + "\n"


def render_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["suite", "feature", "status"]
    for label in table.labels:
        header += [label, f"{label} parity", f"{label} reason"]
    writer.writerow(header)
    for row in table.rows:
        line = [row.suite, row.feature, row.status]
        for cell in row.cells.values():
            line += [cell.outcome, cell.figure(), cell.reason or ""] if cell else ["", "", ""]
        writer.writerow(line)
    return buffer.getvalue()


def render(table: Table, fmt: str) -> str:
    if fmt == "csv":
        return render_csv(table)
    if fmt == "html":
        from pytest_rocm.report.html import render_html

        return render_html(table)
    return render_markdown(table)


def write_output(text: str, output: str | None) -> None:
    """Write to FILE or stdout; an unwritable FILE is a ReportError naming it."""
    if not output or output == "-":
        sys.stdout.write(text)
        return
    path = Path(output)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{path}: cannot write ({exc.strerror or exc})") from None
