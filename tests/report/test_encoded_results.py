"""The plugin keeps each result as its JSON line (report.encoded): the report written from those
lines must be the report written from the records, and the counts kept beside them the same."""

from __future__ import annotations

import json

from pytest_rocm.report import files, records
from pytest_rocm.report.encoded import EncodedResults

RECORDS: list[records.ResultRecord] = [
    {"nodeid": "a.py::t1", "feature": "a/t1", "suite": "a", "outcome": "passed", "reason": None,
     "duration": 0.5, "parity": [], "info": {}, "accelerator": True},
    {"nodeid": "a.py::t2", "feature": "a/t2", "suite": "a", "outcome": "failed", "reason": "wrong numbers é",
     "duration": 0.1, "parity": [{"dtype": "float16", "normwise": "inf"}], "info": {"lib": "1.0"},
     "accelerator": False},
    {"nodeid": "a.py::t3", "feature": "a/t3", "suite": "a", "outcome": "not-installed", "reason": "not installed: x",
     "duration": 0.0, "parity": [], "info": {}},
    {"nodeid": "a.py::t1", "feature": "a/t1", "suite": "a", "outcome": "passed", "reason": None,
     "duration": 0.2, "parity": [], "info": {}, "device_variant": "cuda", "accelerator": True},
]  # fmt: skip


def test_the_report_from_the_lines_is_the_report_from_the_records() -> None:
    kept = EncodedResults()
    lines = [kept.add(record) for record in RECORDS]
    assert lines == kept.lines == [files.encode_line(record) for record in RECORDS]
    whole = records.assemble("cpu", {"torch": "2.13.0"}, list(RECORDS), "2026-12-02T00:00:00+00:00", device="cpu")
    envelope = records.assemble(
        "cpu", {"torch": "2.13.0"}, [], "2026-12-02T00:00:00+00:00", kept.summary(), device="cpu"
    )
    assert files.report_text(envelope, kept.lines) == files.report_text(whole)
    assert json.loads(files.report_text(envelope, kept.lines)) == json.loads(json.dumps(whole))


def test_the_counts_kept_beside_the_lines_are_the_records_counts() -> None:
    kept = EncodedResults()
    assert kept.summary() == records.summarize([]) and not kept
    for record in RECORDS:
        kept.add(record)
    assert kept.summary() == records.summarize(RECORDS)
    assert list(kept.summary()) == list(records.summarize(RECORDS))  # the summary's key order too
    assert len(kept) == 4
    assert kept.nodeids == {"a.py::t1", "a.py::t2", "a.py::t3"}
    assert (kept.used_accelerator, kept.probed) == (2, 3)


def test_an_empty_run_writes_empty_results() -> None:
    envelope = records.assemble("cpu", {}, [], "2026-12-02T00:00:00+00:00", EncodedResults().summary())
    assert json.loads(files.report_text(envelope, []))["results"] == []
    assert files.report_text(envelope, []) == files.report_text(records.assemble("cpu", {}, [], envelope["created"]))
