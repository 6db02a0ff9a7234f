"""Every bundled fact names its source, and the audit that says so can find one that does not;
``rocm-compat doctor --knowledge-age`` lists what has not been checked for a year."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from typing import Any

from pytest_rocm.doctor import sources


def test_every_entry_of_every_data_file_names_a_source() -> None:
    entries, unsourced = sources.audit()
    assert unsourced == []
    assert len(entries) > 50 and all(entry.sources for entry in entries)


TREE: dict[str, Any] = {
    "_about": "a made-up data file",
    "good": {"_sources": ["a source (2024-05-01)"], "list": ["gfx1100"]},
    "records": [
        {"id": "a", "sources": ["checked 2026-11-30 in a release note"]},
        {"id": "b", "value": 3},  # no source: the audit must name it
    ],
    "nested": {"device": {"arch": "gfx942", "figure": {"value": 1.0, "source": "a page", "checked": "2023-01-02"}}},
}


def test_the_audit_names_a_fact_without_a_source() -> None:
    entries, unsourced = sources.audit(("made-up.json",), load=lambda name: TREE)
    assert unsourced == [
        "made-up.json: records[1].id",
        "made-up.json: records[1].value",
        "made-up.json: nested.device.arch",
    ]
    dates = {e.path: e.date for e in entries}
    assert dates == {
        "good": dt.date(2024, 5, 1),
        "records[0]": dt.date(2026, 11, 30),
        "nested.device.figure": dt.date(2023, 1, 2),  # its 'checked' field wins over dates in its text
    }


def test_entries_older_than_a_year_are_listed_oldest_first() -> None:
    entries, unsourced = sources.audit(("made-up.json",), load=lambda name: TREE)
    old = sources.stale(entries, dt.date(2026, 12, 2))
    assert [e.path for e in old] == ["nested.device.figure", "good"]
    text = sources.render_age(entries, unsourced, dt.date(2026, 12, 2))
    assert text.splitlines()[0].startswith("3 entries in 1 data files: 2 last dated more than a year")
    assert (
        "  2023-01-02  made-up.json: nested.device.figure" in text and "no source: made-up.json: records[1].id" in text
    )


def test_doctor_knowledge_age_runs_on_the_bundled_data() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_rocm.cli", "doctor", "--knowledge-age"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert " facts without a source" in done.stdout.splitlines()[0] and ", 0 facts without a source" in done.stdout
