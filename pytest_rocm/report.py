"""The compatibility report (schema ``pytest-rocm/report/1``): records, sidecar, final JSON.

Pure functions over pytest's TestReport objects (or anything with the same attributes), so the
hooks in ``report_plugin`` stay thin and everything here is testable without running pytest.

Durability: each finished test is appended to a JSON-lines *sidecar* (flushed and fsynced), so a
run killed with SIGKILL keeps every finished result; ``load_report`` reads a sidecar like a report.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from pytest_rocm.environment import Environment
from pytest_rocm.outcomes import INFO_PROPERTY, OUTCOMES, PARITY_PROPERTY, is_not_installed

SCHEMA = "pytest-rocm/report/1"
SIDECAR_SCHEMA = "pytest-rocm/report-sidecar/1"
#: user_properties key through which a worker hands the ``feature`` marker's name to the controller
FEATURE_PROPERTY = "rocm_feature"
SUITE_FOLDERS = ("suites", "_suites")
MAX_REASON = 400
_TIMEOUT_RE = re.compile(r"Timeout \(>[0-9.]+s\) from pytest-timeout")
_XDIST_CRASH_RE = re.compile(r"worker '?[\w-]+'? crashed while running")


class ReportError(ValueError):
    """A report that cannot be used; the message is one line naming the file and the fault."""


# -- feature names --------------------------------------------------------------------------
def suite_of(nodeid: str) -> str:
    """The folder under suites/ (``operators``), else the test's top folder, else its module."""
    parts = nodeid.split("::", 1)[0].split("/")
    folders = parts[:-1]
    for i, part in enumerate(folders[:-1]):
        if part in SUITE_FOLDERS:
            return folders[i + 1]
    if folders:
        return folders[0]
    return Path(parts[-1]).stem.removeprefix("test_")


def feature_of(nodeid: str, marker_name: str | None = None) -> str:
    """``suites/operators/test_matmul.py::test_matmul[bfloat16]`` -> ``operators/matmul[bfloat16]``."""
    if marker_name:
        return marker_name
    names = nodeid.split("::")[1:] or [Path(nodeid).stem]
    last = names[-1]
    params = ""
    if "[" in last and last.endswith("]"):
        last, params = last[: last.index("[")], last[last.index("[") :]
    scope = [n.removeprefix("Test") or n for n in names[:-1]]
    name = ".".join([*scope, last.removeprefix("test_")])
    return f"{suite_of(nodeid)}/{name}{params}"


# -- outcome of one test from its phase reports -----------------------------------------------
def _longrepr_text(report: Any) -> str:
    longrepr = getattr(report, "longrepr", None)
    if longrepr is None:
        return ""
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3:  # skip: (path, line, reason)
        return str(longrepr[2])
    return str(longrepr)


def reason_of(report: Any) -> str:
    """A one-line reason: the skip reason, or the exception's message line."""
    longrepr = getattr(report, "longrepr", None)
    crash = getattr(longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) if crash is not None else None
    if not text:
        lines = [line.strip() for line in _longrepr_text(report).splitlines() if line.strip()]
        text = lines[-1] if lines else ""
    text = text.removeprefix("Skipped: ")
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


def _skip_outcome(report: Any) -> tuple[str, str | None]:
    if hasattr(report, "wasxfail"):
        return "xfailed", report.wasxfail or None
    reason = reason_of(report)
    return ("not-installed" if is_not_installed(reason) else "skipped"), reason or None


def _failure_outcome(report: Any, fallback: str) -> tuple[str, str | None]:
    text = _longrepr_text(report)
    match = _TIMEOUT_RE.search(text)
    if match:
        return "timeout", match.group(0)
    if "[XPASS(strict)]" in text:
        return "xpassed", text.strip() or None
    if _XDIST_CRASH_RE.search(text):
        return "crashed", reason_of(report)
    return fallback, reason_of(report) or None


def outcome_of(
    phases: Sequence[Any], elapsed: float | None = None, timeout: float | None = None
) -> tuple[str, str | None]:
    """Map one test's phase reports (setup, call, teardown, or xdist's crash report) to an outcome.

    A worker that died while its test ran longer than the timeout was killed by pytest-timeout's
    thread method (which ends the process): that is ``timeout``, any other death ``crashed``.
    """
    by_when = {p.when: p for p in phases}
    crash = by_when.get("???")
    if crash is not None:
        # the controller sees the start a little late: allow a small margin below the timeout
        if timeout and elapsed is not None and elapsed >= timeout - max(0.5, 0.05 * timeout):
            return "timeout", f"worker killed after {elapsed:.1f}s: over the {timeout:g}s timeout"
        return "crashed", reason_of(crash) or "worker crashed"
    setup, call, teardown = by_when.get("setup"), by_when.get("call"), by_when.get("teardown")
    if setup is not None and setup.failed:
        return _failure_outcome(setup, "error")
    if setup is not None and setup.skipped:
        return _skip_outcome(setup)
    if call is not None:
        if call.skipped:
            return _skip_outcome(call)
        if call.failed:
            return _failure_outcome(call, "failed")
        if hasattr(call, "wasxfail"):
            return "xpassed", call.wasxfail or None
    if teardown is not None and teardown.failed:
        return _failure_outcome(teardown, "error")
    if call is None:  # interrupted before the test body ran
        return "error", "test did not run to completion"
    return "passed", None


# -- records ------------------------------------------------------------------------------------
def _properties(phases: Sequence[Any]) -> list[tuple[str, Any]]:
    # In-process all phases share item.user_properties; under xdist each phase carries a copy
    # taken when it ended. Properties only grow, so the longest list has them all.
    longest = max((list(getattr(p, "user_properties", []) or []) for p in phases), key=len, default=[])
    return [tuple(p) for p in longest if isinstance(p, (tuple, list)) and len(p) == 2]  # type: ignore[misc]


def jsonable(value: Any) -> Any:
    """Strict-JSON form: non-finite floats as strings ("inf", "nan"), unknown objects as str."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy / torch scalars
        try:
            return jsonable(value.item())
        except (TypeError, ValueError):
            pass
    return str(value)


def build_record(
    nodeid: str, phases: Sequence[Any], elapsed: float | None = None, timeout: float | None = None
) -> dict[str, Any]:
    """The report record of one test from its phase reports."""
    parity: list[Any] = []
    info: dict[str, Any] = {}
    marker_feature = None
    for key, value in _properties(phases):
        if key == PARITY_PROPERTY:
            parity.extend(value if isinstance(value, (list, tuple)) else [value])
        elif key == INFO_PROPERTY and isinstance(value, dict):
            info.update(value)
        elif key == FEATURE_PROPERTY:
            marker_feature = str(value)
    outcome, reason = outcome_of(phases, elapsed, timeout)
    duration = sum(float(getattr(p, "duration", 0) or 0) for p in phases)
    if outcome in ("crashed", "timeout") and elapsed is not None:
        duration = max(duration, elapsed)
    return {
        "nodeid": nodeid,
        "feature": feature_of(nodeid, marker_feature),
        "suite": suite_of(nodeid),
        "outcome": outcome,
        "reason": reason,
        "duration": round(duration, 6),
        "parity": jsonable(parity),
        "info": jsonable(info),
    }


def summarize(results: Iterable[dict[str, Any]]) -> dict[str, int]:
    summary = dict.fromkeys(OUTCOMES, 0)
    total = 0
    for record in results:
        summary[record["outcome"]] = summary.get(record["outcome"], 0) + 1
        total += 1
    summary["total"] = total
    return summary


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def assemble(
    label: str, environment: dict[str, Any], results: list[dict[str, Any]], created: str | None = None, **extra: Any
) -> dict[str, Any]:
    """The final report document of DESIGN.md."""
    report = {"schema": SCHEMA, "label": label, "created": created or now_iso(), "environment": environment}
    report.update(extra)
    report["results"] = results
    report["summary"] = summarize(results)
    return report


def default_label(env: Environment, device: str | None = None) -> str:
    """``rocm torch2.6.0 rocm6.2.4 gfx1100`` / ``cpu torch2.13.0``: the column of this run."""
    on_cpu = device == "cpu" or not env.devices or env.backend == "cpu"
    backend = "cpu" if on_cpu else env.backend
    parts = [backend]
    if env.torch:
        parts.append("torch" + env.torch.split("+", 1)[0])
    if on_cpu:
        return " ".join(parts)
    if backend == "rocm" and env.rocm:
        parts.append("rocm" + env.rocm)
    if backend == "cuda" and env.cuda:
        parts.append("cuda" + env.cuda)
    index = int(device.split(":", 1)[1]) if device and ":" in device and device.split(":", 1)[1].isdigit() else None
    chosen = next((d for d in env.devices if d.index == index), env.devices[0])
    parts.append(chosen.gfx or chosen.arch)
    return " ".join(parts)


def slug(label: str) -> str:
    """A file name for a label: ``rocm-torch2.6.0-rocm6.2.4-gfx1100``."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", label).strip("-.") or "report"


# -- files: sidecar, final JSON ------------------------------------------------------------------
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

    def _write(self, obj: dict[str, Any]) -> None:
        assert self._file is not None
        self._file.write(json.dumps(obj, allow_nan=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def append(self, record: dict[str, Any]) -> None:
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
    except OSError as exc:
        return exc.strerror or str(exc)
    if path.is_dir():
        return "is a directory"
    return None


def write_json(path: Path, document: dict[str, Any]) -> None:
    """Write atomically (temporary file, then rename) so a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


# -- reading reports back (table, diff) ----------------------------------------------------------
def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        hint = sidecar_path(path)
        extra = f" (an interrupted run left {hint}: pass that instead)" if hint.exists() else ""
        raise ReportError(f"{path}: no such file{extra}") from None
    except IsADirectoryError:
        raise ReportError(f"{path}: is a directory, not a report") from None
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not a JSON report (binary content)") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot read ({exc.strerror})") from None


def _parse(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if not text.strip():
            raise ReportError(f"{where}: empty file, not a JSON report") from None
        body = text.strip()
        cut_off = body[:1] in "{[" and body[-1:] not in "}]"  # a write that stopped part-way
        if exc.pos >= len(text.rstrip()) or cut_off:
            raise ReportError(f"{where}: truncated JSON (ends early at line {exc.lineno})") from None
        raise ReportError(f"{where}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


def validate(data: Any, where: str) -> dict[str, Any]:
    """Check the shape table and diff rely on; raise ReportError naming ``where`` and the field."""
    if not isinstance(data, dict):
        raise ReportError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if "schema" not in data:
        raise ReportError(f"{where}: not a pytest-rocm report (no \"schema\" field)")
    if data["schema"] != SCHEMA:
        raise ReportError(f"{where}: schema is {data['schema']!r}, expected {SCHEMA!r}")
    if not isinstance(data.get("label"), str) or not data["label"]:
        raise ReportError(f"{where}: \"label\" must be a non-empty string")
    if not isinstance(data.get("environment", {}), dict):
        raise ReportError(f"{where}: \"environment\" must be an object")
    results = data.get("results")
    if not isinstance(results, list):
        raise ReportError(f"{where}: \"results\" must be a list")
    for i, record in enumerate(results):
        if not isinstance(record, dict):
            raise ReportError(f"{where}: results[{i}] must be an object")
        for key in ("nodeid", "feature", "outcome"):
            if not isinstance(record.get(key), str):
                raise ReportError(f"{where}: results[{i}] has no {key!r} string")
        if record["outcome"] not in OUTCOMES:
            raise ReportError(
                f"{where}: results[{i}] outcome {record['outcome']!r} is not one of {', '.join(OUTCOMES)}"
            )
        if not isinstance(record.get("parity", []), list):
            raise ReportError(f"{where}: results[{i}] \"parity\" must be a list")
        record.setdefault("suite", suite_of(record["nodeid"]))
        record.setdefault("reason", None)
        record.setdefault("parity", [])
    return data


def from_sidecar(text: str, where: str) -> dict[str, Any]:
    """Rebuild a report from a sidecar; a last line cut off by a kill is dropped, not an error."""
    lines = text.split("\n")
    complete, tail = lines[:-1], lines[-1]  # tail: text after the last newline (a cut-off write)
    if not complete:
        raise ReportError(f"{where}: empty or truncated sidecar (no complete header line)")
    header = _parse(complete[0], f"{where}: line 1")
    if not isinstance(header, dict) or header.get("schema") != SIDECAR_SCHEMA:
        got = header.get("schema") if isinstance(header, dict) else type(header).__name__
        raise ReportError(f"{where}: line 1: schema is {got!r}, expected {SIDECAR_SCHEMA!r}")
    results = []
    for number, line in enumerate(complete[1:], start=2):
        if line.strip():
            results.append(_parse(line, f"{where}: line {number}"))
    extra = {k: v for k, v in header.items() if k not in ("schema", "label", "environment", "created")}
    document = assemble(
        header.get("label", ""), header.get("environment", {}), results, header.get("created"), **extra
    )
    document["interrupted"] = True
    document["dropped_partial_line"] = bool(tail.strip())
    return validate(document, where)


def load_report(path: str | Path) -> dict[str, Any]:
    """Read a report (``.json``) or the sidecar of an interrupted run (``.jsonl``), validated."""
    path = Path(path)
    text = _read_text(path)
    if path.suffix == ".jsonl":
        return from_sidecar(text, str(path))
    return validate(_parse(text, str(path)), str(path))


def load_reports(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Several reports for one table or diff; two with the same label is an error."""
    reports: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for path in paths:
        report = load_report(path)
        label = report["label"]
        if label in seen:
            raise ReportError(
                f"{path}: label {label!r} is also the label of {seen[label]} (give runs distinct --rocm-label)"
            )
        seen[label] = str(path)
        reports.append(report)
    return reports


def metric(record: dict[str, Any]) -> float | None:
    """The error figure of a parity record: normwise when measured, else the elementwise max_rel."""
    for key in ("normwise", "max_rel"):
        value = record.get(key)
        if value is not None:
            try:
                return float(value)  # "inf"/"nan" strings come back as floats
            except (TypeError, ValueError):
                continue
    return None
