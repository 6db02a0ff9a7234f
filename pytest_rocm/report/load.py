"""Reading compatibility reports back for ``table``, ``diff`` and ``run``: the final JSON or the
sidecar of an interrupted run (read line by line in ``report.partial``), validated, with one-line
errors naming the file and the fault.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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
__all__ = ["ReportError", "load_report", "load_reports", "metric", "plainly_valid", "validate", "worse"]


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


def load_reports(paths: Sequence[str | Path]) -> list[ReportDocument]:
    """Several reports for one table or diff; two with the same label is an error, unless their
    runs named their hosts (``--rocm-host-label``): identical nodes of a fleet share a label, and
    each column is then ``label on host`` (``report.fleet.columns_by_host``)."""
    from pytest_rocm.report.fleet import columns_by_host  # report.fleet reads no files: no cycle

    reports = [load_report(path) for path in paths]
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


def metric(record: Mapping[str, Any]) -> float | None:
    """The error figure of a parity record: normwise when measured, else the elementwise max_rel
    (``parity.reading.error_of``, the one reader of a record; this name stays for its callers)."""
    return error_of(record)


def worse(a: float, b: float) -> float:
    """The larger of two errors, NaN counting as the worst: ``max(x, nan)`` is x (NaN compares
    false with everything), so ``max`` keeps whichever came first and would lose a later NaN."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)
