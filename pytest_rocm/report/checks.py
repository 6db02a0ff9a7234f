"""Checking a report's content (report/1): the envelope against the schema, each record by a fast
check of the plain shape (the schema only where that is not sure), one-line errors naming the
file and the field. ``report.load`` reads reports through it, ``report.partial`` sidecars.
"""

from __future__ import annotations

from typing import Any, cast

from pytest_rocm._values import label_problem
from pytest_rocm.env.schemas import first_problem, first_problem_at, schema
from pytest_rocm.env.textfile import UserFileError, parse_json
from pytest_rocm.report.records import SCHEMA, ReportDocument, suite_of, summarize


class ReportError(ValueError):
    """A report that cannot be used; the message is one line naming the file and the fault."""


def _parse(text: str, where: str) -> Any:
    try:
        return parse_json(text, where, "JSON report")
    except UserFileError as exc:
        raise ReportError(str(exc)) from None


def _first_problem(data: dict[str, Any]) -> str | None:
    """The report's first schema violation, or None. The envelope is checked by the schema; each
    record first by :func:`plainly_valid` (the common case, ~100 times faster than a jsonschema
    descent: two 10,000-row reports took 4.5 s of CPU to check), and by the schema only when that
    is not sure, so every message is the schema's own."""
    results = data.get("results")
    if not isinstance(results, list):
        return first_problem("report", data)
    problem = first_problem("report", {**data, "results": []})
    if problem:
        return problem
    for i, record in enumerate(results):
        if not plainly_valid(record):
            problem = first_problem_at("report", record, "#/$defs/result", ("results", i))
            if problem:
                return problem
    return None


def _schema_enum(*path: str) -> frozenset[str]:
    node: Any = schema("report")
    for key in path:
        node = node[key]
    return frozenset(node["enum"])


_OUTCOMES = _schema_enum("$defs", "result", "properties", "outcome")
_FIGURE_WORDS = frozenset(("inf", "-inf", "nan"))
_PARITY_FIGURES = ("max_abs", "max_rel", "normwise", "rtol", "atol", "worst_bound")  # the schema's figures


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


def _plain_parity(entry: Any) -> bool:
    if type(entry) is not dict:
        return False
    for key in _PARITY_FIGURES:
        value = entry.get(key)
        kind = type(value)  # _is_number inlined: this runs for every figure of every record
        if value is not None and kind is not int and kind is not float and not (kind is str and value in _FIGURE_WORDS):
            return False
    dtype, ok, name = entry.get("dtype", ""), entry.get("ok"), entry.get("name")
    return type(dtype) is str and (ok is None or type(ok) is bool) and (name is None or type(name) is str)


def plainly_valid(record: Any) -> bool:
    """Whether a result record is surely valid under ``#/$defs/result``: the plain shape every
    writer of this project produces. False means "not sure" (a perf record, an odd value): the
    schema then decides. It must never say True of a record the schema rejects (a property test
    holds it to that)."""
    if type(record) is not dict or "perf" in record:
        return False
    nodeid, feature, outcome = record.get("nodeid"), record.get("feature"), record.get("outcome")
    if type(nodeid) is not str or not nodeid or type(feature) is not str or not feature:
        return False
    if type(outcome) is not str or outcome not in _OUTCOMES:
        return False
    suite = record.get("suite", "x")
    reason, duration, info = record.get("reason"), record.get("duration"), record.get("info")
    if type(suite) is not str or not suite or (reason is not None and type(reason) is not str):
        return False
    if duration is not None and not (_is_number(duration) and duration >= 0):
        return False
    if info is not None and type(info) is not dict:
        return False
    parity = record.get("parity", [])
    return type(parity) is list and all(map(_plain_parity, parity))  # map: no generator frame per record


def validate(data: Any, where: str, records_checked: bool = False) -> ReportDocument:
    """Check the report against its schema (``data/schemas/report-1.json``: types and values,
    the embedded environment's too) and that no node id appears twice; raise ReportError naming
    ``where`` and the field.

    What a ``ReportDocument`` requires and the file may lack is filled in: a record's ``suite``
    (from its node id), ``reason`` and ``parity``; the report's ``environment`` and ``summary``.
    ``records_checked``: each record was already checked (a sidecar's, line by line).
    """
    if not isinstance(data, dict):
        raise ReportError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if "schema" not in data:
        raise ReportError(f'{where}: not a pytest-rocm report (no "schema" field)')
    if data["schema"] != SCHEMA:
        raise ReportError(f"{where}: schema is {data['schema']!r:.60}, expected {SCHEMA!r}")
    problem = first_problem("report", {**data, "results": []}) if records_checked else _first_problem(data)
    if problem:
        raise ReportError(f"{where}: {problem}")
    problem = label_problem(data["label"])  # the rule --rocm-label applies to a label typed in
    if problem:
        raise ReportError(f"{where}: label {data['label']!r:.80}: {problem}")
    results = data["results"]
    first_at: dict[str, int] = {}
    for i, record in enumerate(results):
        if record["nodeid"] in first_at:
            raise ReportError(
                f"{where}: results[{i}] nodeid {record['nodeid']!r} is also results[{first_at[record['nodeid']]}]"
                " (one result per test)"
            )
        first_at[record["nodeid"]] = i
        if "suite" not in record:  # setdefault would work the suite out for every record that has one
            record["suite"] = suite_of(record["nodeid"])
        record.setdefault("reason", None)
        record.setdefault("parity", [])
    data.setdefault("environment", {})
    if not isinstance(data.get("summary"), dict):
        data["summary"] = summarize(results)
    return cast("ReportDocument", data)
