"""Reading compatibility reports back for ``table``, ``diff`` and ``run``: the final JSON or the
sidecar of an interrupted run (read line by line in ``report.partial``), validated, with one-line
errors naming the file and the fault.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_rocm.env.textfile import UserFileError, read_text
from pytest_rocm.parity.reading import error_of
from pytest_rocm.report.checks import ReportError, _parse, plainly_valid, validate
from pytest_rocm.report.files import sidecar_path
from pytest_rocm.report.partial import from_sidecar
from pytest_rocm.report.records import ReportDocument

#: what the readers of reports import from here (the checks live in report.checks, the sidecar's
#: reading in report.partial)
__all__ = [
    "Bounds",
    "ReportError",
    "load_bounded",
    "load_report",
    "load_reports",
    "metric",
    "plainly_valid",
    "validate",
    "worse",
]


@dataclass(frozen=True)
class Bounds:
    """How much a command that holds every row at once (``table``, ``diff``) reads: a report's size, checked
    before it is read, and the rows of all reports together, checked as each is parsed and
    before any table is built. The memory grows with both (about 2.5 KB per row for a table: a
    100,000-row report takes 0.25 GB and 8 s, measured), so a million-row report is one line
    naming the limit and its flag, not a MemoryError. ``None``: no bound (``run`` reads the
    report it just wrote)."""

    max_bytes: int
    max_rows: int
    #: the options that raise them, named in the refusal
    bytes_flag: str = "--max-report-mb"
    rows_flag: str = "--max-rows"


#: the defaults of ``rocm-compat table`` and ``diff``: far above the bundled suites' full profile (a few thousand rows)
TABLE_BOUNDS = Bounds(max_bytes=64 * 1024 * 1024, max_rows=250_000)


def _read_text(path: Path) -> str:
    try:
        return read_text(path, "report")
    except UserFileError as exc:
        hint = sidecar_path(path)
        if str(exc).endswith("no such file") and hint.is_file():
            raise ReportError(f"{exc} (an interrupted run left {hint}: pass that instead)") from None
        raise ReportError(str(exc)) from None


def load_report(path: str | Path, ended: str | None = None) -> ReportDocument:
    """Read a report (``.json``) or the sidecar of an interrupted run (``.jsonl``), validated;
    ``ended``: how the run's process ended, for the row of a test it died in (``from_sidecar``)."""
    path = Path(path)
    text = _read_text(path)
    if path.suffix == ".jsonl":
        return from_sidecar(text, str(path), ended)
    return validate(_parse(text, str(path)), str(path))


def load_bounded(paths: Sequence[str | Path], bounds: Bounds | None) -> list[ReportDocument]:
    """The reports of ``paths``, refused (ReportError naming the limit and its flag) before one
    past ``bounds`` is read, or past its rows, tabled or compared."""
    reports: list[ReportDocument] = []
    rows = 0
    for path in paths:
        if bounds is not None:
            _check_size(path, bounds)
        reports.append(load_report(path))
        rows += len(reports[-1]["results"])
        if bounds is not None and rows > bounds.max_rows:
            before = f" ({rows} with the reports before it)" if len(reports) > 1 else ""
            raise ReportError(
                f"{path}: {len(reports[-1]['results'])} rows{before}, more than this command holds "
                f"({bounds.max_rows} rows: {bounds.rows_flag} N raises it)"
            )
    return reports


def load_reports(paths: Sequence[str | Path], bounds: Bounds | None = None) -> list[ReportDocument]:
    """Several reports for one table; two with the same label is an error, unless their
    runs named their hosts (``--rocm-host-label``): identical nodes of a fleet share a label, and
    each column is then ``label on host`` (``report.fleet.columns_by_host``). ``bounds``: as
    :func:`load_bounded`."""
    from pytest_rocm.report.fleet import columns_by_host  # report.fleet reads no files: no cycle

    reports = load_bounded(paths, bounds)
    labels, clash = columns_by_host(reports)
    if clash is not None:
        first, second = clash
        label = reports[second]["label"]
        raise ReportError(
            f"{paths[second]}: label {label!r} is also the label of {paths[first]} (give runs distinct "
            "--rocm-label, or name each run's host with --rocm-host-label)"
        )
    for report, label in zip(reports, labels, strict=True):
        report["label"] = label
    return reports


def _check_size(path: str | Path, bounds: Bounds) -> None:
    """A report larger than the bound, said before a byte of it is read (a missing or unreadable
    file is left to the reader, which says so in its own words)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return
    if size > bounds.max_bytes:
        mib = bounds.max_bytes / (1024 * 1024)
        raise ReportError(
            f"{path}: {size} bytes, larger than a report this command reads ({mib:g} MiB: {bounds.bytes_flag} N raises it)"
        )


def metric(record: Mapping[str, Any]) -> float | None:
    """The error figure of a parity record: normwise when measured, else the elementwise max_rel
    (``parity.reading.error_of``, the one reader of a record; this name stays for its callers)."""
    return error_of(record)


def worse(a: float, b: float) -> float:
    """The larger of two errors, NaN counting as the worst: ``max(x, nan)`` is x (NaN compares
    false with everything), so ``max`` keeps whichever came first and would lose a later NaN."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)
