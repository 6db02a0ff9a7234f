"""Finding a fleet's reports: every ``*.json`` report (and the sidecar of a killed run that left
no report) under the folders given, read and validated by ``report.load``. A file that is not a
report (another tool's JSON, a venv's) is passed over; a report that cannot be read is named with
why, never dropped without a word. The same run copied twice (same label, date and machine) is
read once."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_rocm.report.fleet import machine_of
from pytest_rocm.report.load import ReportError, load_report

#: what marks a file as one of ours: the schema ids of a report and of its sidecar
MARKERS = (b"pytest-rocm/report/1", b"pytest-rocm/report-sidecar/1")


def _candidates(root: Path, skip: Path | None) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        # never the site being written, nor hidden folders and virtual environments
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and (skip is None or (here / d).resolve() != skip)
            and not (here / d / "pyvenv.cfg").exists()
        )
        for name in sorted(files):
            path = here / name
            if name.endswith(".json") or (
                name.endswith(".json.partial.jsonl") and not (here / name[: -len(".partial.jsonl")]).exists()
            ):
                yield path


def _is_ours(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return True  # unreadable: said so by load_report's own message
    return any(marker in head for marker in MARKERS)


def iter_reports(
    roots: Sequence[Path], unread: list[tuple[str, str]], skip: Path | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(source, report) of every report found, one at a time (a fleet's reports need not all fit
    in memory at once); (source, why) of each that could not be read is appended to ``unread``."""
    seen: set[tuple[str, str, str]] = set()
    resolved_skip = skip.resolve() if skip is not None else None
    for root in roots:
        for path in _candidates(root, resolved_skip):
            if not path.is_file() or not _is_ours(path):
                continue
            try:
                document = dict(load_report(path))
            except ReportError as exc:
                unread.append((str(path), str(exc)))
                continue
            key = (str(document.get("label")), str(document.get("created")), str(machine_of(document)["id"]))
            if key in seen:
                continue
            seen.add(key)
            yield str(path), document


def find_reports(
    roots: Sequence[Path], skip: Path | None = None
) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, str]]]:
    """Every report found (a list), and (source, why) of those that could not be read."""
    unread: list[tuple[str, str]] = []
    return list(iter_reports(roots, unread, skip)), unread
