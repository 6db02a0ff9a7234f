"""The per-item cache of parsed plugin markers, and what reads it.

Every test's markers are parsed (validated) once at collection and kept on the item; the plugin's
hooks decide from that cache, and what reads a marker later (the report's ``feature``, the parity
fixture's ``tolerance``) reads it too instead of parsing the raw marks again.

Which names are the plugin's is decided per session (:func:`set_active`): the canonical names
always, a short alias only where the project does not register a marker of that name. A marker the
project owns is never read here, so it is never validated nor evaluated.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_rocm.plugin.marks import SPECS, active_names, owned_names, parse_mark
from pytest_rocm.plugin.markspec import Parsed

#: parsed plugin marks of an item, with the count of its own markers when they were parsed
_CACHE = pytest.StashKey[tuple[int, list[Parsed]]]()
NO_MARKS: list[Parsed] = []  # shared, never mutated
#: the cache entry of an item without plugin markers, per count of its own markers (shared)
_NONE_SEEN: dict[int, tuple[int, list[Parsed]]] = {}
#: {name as written: canonical name} of the markers this session's plugin acts on
_ACTIVE = pytest.StashKey[dict[str, str]]()
#: before set_active: the canonical names only (a bare item, a plugin configured elsewhere)
_CANONICAL = {name: name for name in SPECS}


def set_active(config: pytest.Config, names: dict[str, str]) -> None:
    config.stash[_ACTIVE] = names


def refresh(config: pytest.Config, short_markers: bool) -> dict[str, str]:
    """Decide the names the plugin acts on from the markers registered now (the project's own
    lines told from the plugin's), and keep them for the session."""
    names = active_names(short_markers, owned_names(config.getini("markers")))
    set_active(config, names)
    return names


def active(config: pytest.Config) -> dict[str, str]:
    return config.stash.get(_ACTIVE, _CANONICAL)  # set at configure: the miss (costly) is rare


def _mark_objects(item: pytest.Item) -> list[pytest.Mark]:
    """Like ``item.iter_markers()`` (closest first) filtered to ours; a plain loop because it runs
    for every test of every suite, most of which use no marker of ours."""
    names = active(item.config)
    found = []
    node: Any = item
    while node is not None:
        for mark in node.own_markers:
            if mark.name in names:
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
        # Most tests of a big suite: "none" is cached too (the report's tagger and the setup hook
        # read it again), as a pair shared by every item with as many markers: two objects per item
        # kept alive for the whole session made every garbage collection slower (5,000 tests).
        none = _NONE_SEEN.get(count)
        if none is None:
            none = _NONE_SEEN[count] = (count, NO_MARKS)
        stash[_CACHE] = none
        return NO_MARKS
    parsed = [parse_mark(m.name, m.args, dict(m.kwargs)) for m in found]
    stash[_CACHE] = (count, parsed)
    return parsed


def feature_of(item: pytest.Item) -> str | None:
    """The closest ``rocm_feature`` marker's name (the compatibility-table row), else None."""
    return next((str(p.args.name) for p in item_marks(item) if p.name == "rocm_feature"), None)


def tolerances_of(item: pytest.Item) -> dict[str, dict[str, float]]:
    """{dtype: overrides} from the item's ``rocm_tolerance`` markers; the closest marker wins per key."""
    merged: dict[str, dict[str, float]] = {}
    for p in reversed(item_marks(item)):  # closest first: apply the farthest first
        if p.name == "rocm_tolerance":
            merged.setdefault(p.args.dtype, {}).update(p.args.overrides)
    return merged
