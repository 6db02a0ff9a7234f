"""Reading the sidecar of an interrupted run back as a report (``report.load.load_report`` of a
``.jsonl``): each line checked on its own, so an error names the line (``FILE: line 7: ...``),
and the test the run's process died in named as its ``crashed`` row (``report.deaths``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pytest_rocm.env.schemas import first_problem
from pytest_rocm.report.checks import ReportError, _parse, plainly_valid, validate
from pytest_rocm.report.deaths import crashed_record
from pytest_rocm.report.features import row_of
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
)

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
