"""The per-item cache of parsed plugin markers, and what reads it.

Every test's markers are parsed (validated) once at collection and kept on the item; the plugin's
hooks decide from that cache, and what reads a marker later (the report's ``feature``, the parity
fixture's ``tolerance``) reads it too instead of parsing the raw marks again.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_rocm.plugin.marks import NAMES, parse_mark
from pytest_rocm.plugin.markspec import Parsed

#: parsed plugin marks of an item, with the count of its own markers when they were parsed
_CACHE = pytest.StashKey[tuple[int, list[Parsed]]]()
NO_MARKS: list[Parsed] = []  # shared, never mutated


def _mark_objects(item: pytest.Item) -> list[pytest.Mark]:
    """Like ``item.iter_markers()`` (closest first) filtered to ours; a plain loop because it runs
    for every test of every suite, most of which use no marker of ours."""
    found = []
    node: Any = item
    while node is not None:
        for mark in node.own_markers:
            if mark.name in NAMES:
                found.append(mark)
        node = node.parent
    return found


def item_marks(item: pytest.Item) -> list[Parsed]:
    """The item's plugin markers, parsed, closest first; MarkerError on a bad one.

    Parsed once at collection and cached on the item; parsed again when the item gained markers
    since (``item.add_marker`` in a conftest's collection hook). Markers added to parent nodes
    after collection are not seen: add them to the items.
    """
    count = len(item.own_markers)
    stash = item.stash
    if _CACHE in stash:  # not stash.get: a miss raises KeyError inside, costly on every test
        seen, parsed = stash[_CACHE]
        if seen == count:
            return parsed
    found = _mark_objects(item)
    if not found:
        # Most tests of a big suite: cache nothing. Two objects per item kept alive for the whole
        # session made every garbage collection slower (measurable on a 5,000-test run).
        return NO_MARKS
    parsed = [parse_mark(m.name, m.args, dict(m.kwargs)) for m in found]
    stash[_CACHE] = (count, parsed)
    return parsed


def feature_of(item: pytest.Item) -> str | None:
    """The closest ``feature`` marker's name (the compatibility-table row), else None."""
    return next((str(p.args[0]) for p in item_marks(item) if p.name == "feature"), None)


def tolerances_of(item: pytest.Item) -> dict[str, dict[str, float]]:
    """{dtype: overrides} from the item's ``tolerance`` markers; the closest marker wins per key."""
    merged: dict[str, dict[str, float]] = {}
    for p in reversed(item_marks(item)):  # closest first: apply the farthest first
        if p.name == "tolerance":
            dtype, overrides = p.args
            merged.setdefault(dtype, {}).update(overrides)
    return merged
