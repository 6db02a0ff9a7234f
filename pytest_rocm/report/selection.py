"""Which tests a run selected, and whether two runs can be compared row for row.

A report records its selection (``selection``: the paths or node ids pytest was given, ``-k``,
``-m``, how many collected tests were deselected). A column that ran a subset (``-k add`` beside a
full run) is not the full suite: the table marks it and shows the rows it did not select as "not
selected", not as missing, and ``diff`` of a subset against a full run says so first and compares
the tests both ran (``--strict-selection``: every test, as if both were complete).

Pure: the plugin's ``plugin.run_selection`` records the selection, this module reads it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: what a row a subset column did not select says in the table
NOT_SELECTED = "not selected"


def selection_of(document: Mapping[str, Any]) -> dict[str, Any]:
    """The report's ``selection`` ({} in reports older than it: taken as the whole suite)."""
    value = document.get("selection")
    return dict(value) if isinstance(value, dict) else {}


def narrowing(selection: Mapping[str, Any]) -> list[str]:
    """How a selection narrowed the suite, in words: ``-k 'add'``, ``-m 'not slow'``,
    ``12 deselected``, ``node ids tests/a.py::test_x``; [] for a whole-suite run."""
    out = []
    if selection.get("keyword"):
        out.append(f"-k {selection['keyword']!r}")
    if selection.get("markers"):
        out.append(f"-m {selection['markers']!r}")
    deselected = selection.get("deselected")
    if isinstance(deselected, int) and deselected > 0:
        out.append(f"{deselected} deselected")
    ids = [str(a) for a in selection.get("args") or [] if "::" in str(a)]
    if ids:
        out.append("node ids " + ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else ""))
    return out


def subset_text(document: Mapping[str, Any]) -> str | None:
    """``-k 'add', 12 deselected``: how the run narrowed the suite; None for a whole-suite run."""
    parts = narrowing(selection_of(document))
    return ", ".join(parts) if parts else None


def _paths(document: Mapping[str, Any]) -> list[str]:
    return sorted(str(a).split("::", 1)[0] for a in selection_of(document).get("args") or [])


def not_comparable(base: Mapping[str, Any], candidate: Mapping[str, Any]) -> tuple[bool, bool, str | None]:
    """(BASE's tests missing from CANDIDATE are unselected, not lost; CANDIDATE's tests missing from
    BASE are unselected there, not new; the sentence saying why) for two reports' selections."""
    base_subset, candidate_subset = subset_text(base), subset_text(candidate)
    base_paths, candidate_paths = _paths(base), _paths(candidate)
    other_paths = bool(base_paths and candidate_paths and base_paths != candidate_paths)
    why = []
    if candidate_subset:
        why.append(f"CANDIDATE ran a subset ({candidate_subset})")
    if base_subset:
        why.append(f"BASE ran a subset ({base_subset})")
    if other_paths:
        why.append(f"BASE ran {' '.join(base_paths)}, CANDIDATE {' '.join(candidate_paths)}")
    note = "; ".join(why) if why else None
    return bool(candidate_subset) or other_paths, bool(base_subset) or other_paths, note


def subset_columns(documents: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """label -> how its run narrowed the suite, for each report of a table that is not the whole of
    what the others ran: a ``-k``/``-m``/node-id subset (:func:`subset_text`), or a run over other
    paths than the first report's (``paths: operators``); the first report then too, as
    :func:`not_comparable` takes both of a pair with other paths, and the table judges each column
    against the first as ``diff`` judges CANDIDATE against BASE."""
    first = _paths(documents[0]) if documents else []
    other = [bool(first and (paths := _paths(d)) and paths != first) for d in documents]
    if any(other):
        other[0] = True
    out = {}
    for document, other_paths in zip(documents, other, strict=True):
        parts = narrowing(selection_of(document))
        paths = [str(a) for a in selection_of(document).get("args") or [] if "::" not in str(a)]
        if other_paths and paths:  # node ids are named by narrowing() already
            parts.append("paths: " + " ".join(sorted(paths)))
        if parts:
            out[str(document["label"])] = ", ".join(parts)
    return out


def selected_cells(cells: Mapping[str, T | None], subsets: Collection[str]) -> list[T | None]:
    """A row's cells without the empty ones of subset columns: a row a ``-k`` column did not
    select is neither "partial" nor "differs" for that."""
    return [cell for label, cell in cells.items() if cell is not None or label not in subsets]


def empty_cell_text(label: str, subsets: Collection[str]) -> str:
    """What an empty cell says: ``not selected`` in a subset column, else the dash of "not run"."""
    return NOT_SELECTED if label in subsets else "—"
