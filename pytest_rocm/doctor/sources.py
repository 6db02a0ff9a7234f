"""Where each bundled fact comes from and how old it is: the audit behind ``rocm-compat doctor
--knowledge-age`` and the test that every data entry names a source.

A data file (``pytest_rocm/data/*.json``) is a tree. A node *names its source* when it has a
``source``, ``sources`` or ``_sources`` key; that covers everything below it. An *entry* is the
node that names its source (entries nest: a figure's own source inside its device's). A fact no source covers is an unsourced leaf. An
entry's date is its ``checked`` field, else the newest ISO date (``2026-08-26``, ``2026-08``) its
sources quote; an entry with neither is undated. Stdlib only.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pytest_rocm._resources import load_json

#: the bundled data files whose facts the doctor, the matrix and the reports decide from
DATA_FILES = (
    "doctor.json",
    "gfx.json",
    "known_errors.json",
    "peaks.json",
    "torch_wheels.json",
    "vendor_libraries.json",
)
#: what names a source: the keys the data files use, and ``why`` (a decision against a source, quoted there)
SOURCE_KEYS = ("source", "sources", "_sources", "why")
#: prose about the facts beside them (the sources disagree), not facts themselves
COMMENTARY_KEYS = ("disagreements", "checked")
#: how old an entry may be before --knowledge-age lists it
MAX_AGE = dt.timedelta(days=365)
_DATE_RE = re.compile(r"\b(20[0-9]{2})-(0[1-9]|1[0-2])(?:-([0-3][0-9]))?\b")


@dataclass(frozen=True)
class Entry:
    file: str
    #: where in the file: ``amd_builds.list[2]``, ``apu_gfx``
    path: str
    sources: tuple[str, ...]
    #: the entry's date (None: undated)
    date: dt.date | None


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def _date_of(node: dict[str, Any], sources: list[str]) -> dt.date | None:
    checked = node.get("checked") or node.get("_checked")
    if isinstance(checked, str):
        try:
            return dt.date.fromisoformat(checked)
        except ValueError:
            pass
    found = [
        dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3) or 1))
        for text in sources
        for m in _DATE_RE.finditer(text)
        if not m.group(3) or 1 <= int(m.group(3)) <= 31
    ]
    return max(found) if found else None


def _walk(file: str, node: Any, path: str, covered: bool, found: tuple[list[Entry], list[str]]) -> None:
    entries, unsourced = found
    if isinstance(node, dict):
        keys = [k for k in SOURCE_KEYS if k in node]
        if keys:
            sources = [text for k in keys for text in _texts(node[k])]
            entries.append(Entry(file, path or "(file)", tuple(sources), _date_of(node, sources)))
        for key, value in node.items():
            if key.startswith("_") or key in COMMENTARY_KEYS or key in SOURCE_KEYS:
                continue
            _walk(file, value, f"{path}.{key}" if path else key, covered or bool(keys), found)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _walk(file, value, f"{path}[{i}]", covered, found)
    elif not covered:
        unsourced.append(f"{file}: {path}")


def audit(files: tuple[str, ...] = DATA_FILES, load: Callable[[str], Any] = load_json) -> tuple[list[Entry], list[str]]:
    """Every entry of the data files, and every fact (``file: path``) no source covers."""
    entries: list[Entry] = []
    unsourced: list[str] = []
    for file in files:
        _walk(file, load(file), "", False, (entries, unsourced))
    return entries, unsourced


def stale(entries: list[Entry], today: dt.date) -> list[Entry]:
    """The dated entries older than :data:`MAX_AGE`, oldest first."""
    old = [e for e in entries if e.date is not None and today - e.date > MAX_AGE]
    return sorted(old, key=lambda e: (e.date or today, e.file, e.path))


def render_age(entries: list[Entry], unsourced: list[str], today: dt.date) -> str:
    """The text ``rocm-compat doctor --knowledge-age`` prints."""
    old = stale(entries, today)
    undated = [e for e in entries if e.date is None]
    lines = [
        f"{len(entries)} entries in {len({e.file for e in entries})} data files: {len(old)} last dated more than a year "
        f"before {today.isoformat()}, {len(undated)} undated, {len(unsourced)} facts without a source"
    ]
    for entry in old:
        lines.append(f"  {entry.date}  {entry.file}: {entry.path}  ({entry.sources[0][:90]})")
    if undated:
        lines.append("undated (no 'checked' date and no date in the sources):")
        lines.extend(f"  {e.file}: {e.path}" for e in undated)
    lines.extend(f"no source: {fact}" for fact in unsourced)
    return "\n".join(lines)
