"""The report's files: the JSON-lines sidecar written as tests finish, and the final JSON.

Durability: each finished test is appended to the *sidecar* (flushed and fsynced), so a run
killed with SIGKILL keeps every finished result; the final report is written atomically.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from pytest_rocm.report.records import SIDECAR_SCHEMA, ReportDocument, ResultRecord


def sidecar_path(report_path: str | Path) -> Path:
    path = Path(report_path)
    return path.with_name(path.name + ".partial.jsonl")


class Sidecar:
    """Append-only JSON lines: a header, then one record per finished test, each made durable."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO | None = open(path, "w", encoding="utf-8")  # noqa: SIM115 (kept open)
        self._write({"schema": SIDECAR_SCHEMA, **header})

    def _write(self, obj: Mapping[str, Any]) -> None:
        assert self._file is not None
        self._file.write(json.dumps(obj, allow_nan=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def append(self, record: ResultRecord) -> None:
        self._write(record)

    def close(self, remove: bool = False) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if remove:
            self.path.unlink(missing_ok=True)


def unwritable(path: Path) -> str | None:
    """Why the report and its sidecar cannot be written there (checked before any test runs)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe = path.with_name(path.name + ".probe")
        with open(probe, "w", encoding="utf-8"):
            pass
        probe.unlink()
    except FileExistsError as exc:  # mkdir met a file where a folder must be
        return f"{exc.filename} is a file, not a folder"
    except OSError as exc:
        return exc.strerror or str(exc)
    if path.is_dir():
        return "is a directory"
    return None


def write_json(path: Path, document: ReportDocument) -> None:
    """Write atomically (temporary file, then rename) so a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
