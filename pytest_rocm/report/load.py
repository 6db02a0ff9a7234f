"""Reading compatibility reports back for ``table``, ``diff`` and ``run``: the final JSON or the
sidecar of an interrupted run, validated, with one-line errors naming the file and the fault.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pytest_rocm._values import label_problem
from pytest_rocm.env.schemas import first_problem, first_problem_at, schema
from pytest_rocm.env.textfile import UserFileError, parse_json, read_text
from pytest_rocm.report.deaths import crashed_record
from pytest_rocm.report.features import row_of
from pytest_rocm.report.files import sidecar_path
from pytest_rocm.report.records import (
    SCHEMA,
    SIDECAR_COLLECTED,
    SIDECAR_ENVIRONMENT,
    SIDECAR_FINISHED,
    SIDECAR_LINE_KIND,
    SIDECAR_RUNNING,
    SIDECAR_SCHEMA,
    ReportDocument,
    ResultRecord,
    assemble,
    suite_of,
    summarize,
)


class ReportError(ValueError):
    """A report that cannot be used; the message is one line naming the file and the fault."""


def _read_text(path: Path) -> str:
    try:
        return read_text(path, "report")
    except UserFileError as exc:
        hint = sidecar_path(path)
        if str(exc).endswith("no such file") and hint.is_file():
            raise ReportError(f"{exc} (an interrupted run left {hint}: pass that instead)") from None
        raise ReportError(str(exc)) from None


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
_PARITY_FIGURES = ("max_abs", "max_rel", "normwise", "rtol", "atol")


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


#: the kinds of a sidecar line that is not a result
_LINE_KINDS = (SIDECAR_ENVIRONMENT, SIDECAR_COLLECTED, SIDECAR_FINISHED, SIDECAR_RUNNING)

#: header keys that are the sidecar's own bookkeeping, not report fields
_SIDECAR_ONLY = ("schema", "pid", SIDECAR_LINE_KIND)


def _check_header_fields(fields: dict[str, Any], where: str) -> None:
    """The report fields of a header or environment line (label, environment, device, scale...),
    checked against the report schema so a wrong value is named with its line."""
    document: dict[str, Any] = {k: v for k, v in fields.items() if k not in _SIDECAR_ONLY}
    if not document.get("label"):  # unlabelled until the environment is known: named at assembly
        document["label"] = "-"
    problem = first_problem("report", {**document, "schema": SCHEMA, "results": []})
    if problem:
        raise ReportError(f"{where}: {problem}")


def _check_record(entry: Any, where: str) -> None:
    """One result line against the report schema's ``result`` (any JSON value may be on a line)."""
    if not isinstance(entry, dict):
        raise ReportError(f"{where}: expected a JSON object (one test's record), got {type(entry).__name__}")
    if plainly_valid(entry):  # the common shape: no jsonschema descent
        return
    problem = first_problem("report", entry, definition="result")
    if problem:
        raise ReportError(f"{where}: {problem.removeprefix('document: ')}")


def _running_test(entry: dict[str, Any], where: str) -> dict[str, str]:
    """A ``running`` line: the test a serial run started (nodeid, feature, suite)."""
    fields = {k: entry.get(k) for k in ("nodeid", "feature", "suite")}
    for key, value in fields.items():
        if not isinstance(value, str) or not value:
            raise ReportError(f"{where}: {key} is {value!r:.60}, expected a non-empty string")
    return cast("dict[str, str]", fields)


def _string_list(value: Any, key: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ReportError(f"{where}: {key} is {value!r:.60}, expected a list of non-empty strings")
    return value


def _collected_tests(entry: dict[str, Any], where: str) -> tuple[list[str], dict[str, str], tuple[str, ...]]:
    """A ``collected`` line: (the node ids in run order, node id -> marker name, device tokens)."""
    tests = _string_list(entry.get("tests"), "tests", where)
    marked = entry.get("marked", {})
    if not isinstance(marked, dict) or not all(isinstance(v, str) and v for v in marked.values()):
        raise ReportError(f"{where}: marked is {marked!r:.60}, expected an object of non-empty strings")
    return tests, marked, tuple(_string_list(entry.get("device_ids", []), "device_ids", where))


def _first_unfinished(
    collected: tuple[list[str], dict[str, str], tuple[str, ...]], done: Mapping[str, Any], ended: str | None
) -> ResultRecord | None:
    """The crashed row of a serial run: its tests run in the collected order, so the first one
    without a result is the one the process died in (None: every test has one)."""
    tests, marked, device_ids = collected
    nodeid = next((n for n in tests if n not in done), None)
    if nodeid is None:
        return None
    feature, suite = row_of(nodeid, marked.get(nodeid), device_ids)
    return crashed_record(nodeid, feature, suite, ended)


def _check_unique(lines_of: dict[str, list[int]], where: str) -> None:
    for nodeid, numbers in lines_of.items():
        if len(numbers) > 1:
            raise ReportError(
                f"{where}: line {numbers[1]}: nodeid {nodeid!r} is also on line {numbers[0]} (one result per test)"
            )


def from_sidecar(text: str, where: str, ended: str | None = None) -> ReportDocument:
    """Rebuild a report from a sidecar; a last line cut off by a kill is dropped, not an error.
    Each line is checked on its own, so an error names the line (``FILE: line 7: ...``).

    The test a serial run died in is the row of the crash: the first of its ``collected`` tests
    without a result (an earlier version's sidecar: the test of its last ``running`` line, when
    it has none). ``crashed``, its reason saying how the process ended when ``ended`` says it
    (``killed by SIGSEGV (signal 11)``: the caller waited for the process), else that it is not
    recorded."""
    lines = text.split("\n")
    complete, tail = lines[:-1], lines[-1]  # tail: text after the last newline (a cut-off write)
    if not complete:
        raise ReportError(f"{where}: empty or truncated sidecar (no complete header line)")
    header = _parse(complete[0], f"{where}: line 1")
    if not isinstance(header, dict) or header.get("schema") != SIDECAR_SCHEMA:
        got = header.get("schema") if isinstance(header, dict) else type(header).__name__
        raise ReportError(f"{where}: line 1: schema is {got!r}, expected {SIDECAR_SCHEMA!r}")
    _check_header_fields(header, f"{where}: line 1")
    results: list[ResultRecord] = []
    lines_of: dict[str, list[int]] = {}
    running: dict[str, str] | None = None  # an earlier version's: the test started last, not yet finished
    collected: tuple[list[str], dict[str, str], tuple[str, ...]] | None = None
    finished = False  # the run ended in order: no test crashed
    for number, line in enumerate(complete[1:], start=2):
        if not line.strip():
            continue
        entry = _parse(line, f"{where}: line {number}")
        kind = entry.get(SIDECAR_LINE_KIND) if isinstance(entry, dict) else None
        if kind == SIDECAR_COLLECTED:
            collected = _collected_tests(entry, f"{where}: line {number}")
        elif kind == SIDECAR_FINISHED:
            finished = True
        elif kind == SIDECAR_RUNNING:
            running = _running_test(entry, f"{where}: line {number}")
        elif isinstance(entry, dict) and SIDECAR_LINE_KIND in entry:
            if entry[SIDECAR_LINE_KIND] != SIDECAR_ENVIRONMENT:
                raise ReportError(
                    f"{where}: line {number}: {SIDECAR_LINE_KIND} is {entry[SIDECAR_LINE_KIND]!r:.60},"
                    f" expected one of {', '.join(repr(k) for k in _LINE_KINDS)}"
                )
            _check_header_fields(entry, f"{where}: line {number}")
            # detected in a child process after the run began: the header's missing fields
            header.update({k: v for k, v in entry.items() if k != SIDECAR_LINE_KIND})
        else:
            _check_record(entry, f"{where}: line {number}")
            lines_of.setdefault(entry["nodeid"], []).append(number)
            results.append(entry)
            if running is not None and running["nodeid"] == entry["nodeid"]:
                running = None
    crashed = None  # and none where the run ended in order: the tests without a result never ran
    if collected is not None and not finished:
        crashed = _first_unfinished(collected, lines_of, ended)
    elif running is not None and not finished and running["nodeid"] not in lines_of:
        crashed = crashed_record(running["nodeid"], running["feature"], running["suite"], ended)
    if crashed is not None:
        results.append(crashed)
    _check_unique(lines_of, where)
    # the header's run bookkeeping (pid) is not a report field
    extra = {k: v for k, v in header.items() if k not in ("schema", "label", "environment", "created", "pid")}
    # killed before the environment was known (a child detection still running) and no --rocm-label:
    # the column still needs a name, and says why it has no environment
    label = (
        header.get("label") or f"unlabelled run of {header.get('created') or 'unknown time'} (environment not detected)"
    )
    document = assemble(label, header.get("environment", {}), results, header.get("created"), **extra)
    document["interrupted"] = True
    document["dropped_partial_line"] = bool(tail.strip())
    return validate(document, where, records_checked=True)


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
    """The error figure of a parity record: normwise when measured, else the elementwise max_rel."""
    for key in ("normwise", "max_rel"):
        value = record.get(key)
        if value is not None:
            try:
                return float(value)  # "inf"/"nan" strings come back as floats
            except (TypeError, ValueError):
                continue
    return None


def worse(a: float, b: float) -> float:
    """The larger of two errors, NaN counting as the worst: ``max(x, nan)`` is x (NaN compares
    false with everything), so ``max`` keeps whichever came first and would lose a later NaN."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)
