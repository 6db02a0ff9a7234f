"""Covering arrays: a few rows in which every ``t`` values of any ``t`` dimensions appear together.

A boundary sweep has many dimensions (sizes, layouts, keyword arguments, value patterns, dtypes),
each with a handful of values where GPU libraries switch kernels; their full product is far too
large to run, but most numerics bugs need only two or three of those values at once (a K-remainder
*and* a transposed operand *and* bf16). A t-way covering array holds every such combination in some
row: ``t=2`` (pairwise) for the ``ci`` profile, ``t=3`` for ``full``.

The generator is a greedy one in the AETG/IPOG family, kept deterministic (no random tie-breaks:
the same dimensions give the same rows on every machine, so a row id is stable across the columns
of a table): take the first combination not yet covered, start a row from it, fill each remaining
dimension with the value that covers the most new combinations (the first such value on a tie),
repeat until nothing is uncovered. Constraints are forbidden combinations (:class:`Exclude`); a
combination that no valid row can hold is left out and reported, never silently dropped.

Pure (no torch, no pytest): the suites, the table and the tests all read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations, product

__all__ = ["CoveringArray", "Dimension", "Exclude", "covering_array", "t_tuples_missing"]


@dataclass(frozen=True)
class Dimension:
    """One axis of a sweep: its name and its value labels (strings, in a fixed order).

    ``isolated`` values mask faults elsewhere in their row (a NaN input makes every output NaN, zeros
    make a scaled output zero): a row holding one covers only the combinations that include it, so
    every combination of the other values also appears in a row without any isolated value (the
    single-fault rule of combinatorial testing for invalid and masking values)."""

    name: str
    values: tuple[str, ...]
    isolated: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError(f"dimension {self.name!r} has no values")
        if len(set(self.values)) != len(self.values):
            raise ValueError(f"dimension {self.name!r} repeats a value: {self.values}")
        unknown = sorted(set(self.isolated) - set(self.values))
        if unknown:
            raise ValueError(f"dimension {self.name!r}: isolated value {unknown[0]!r} is not one of its values")


@dataclass(frozen=True)
class Exclude:
    """A forbidden combination: a row in which *every* named dimension takes one of its listed values
    is invalid (``Exclude({"is_causal": {"true"}, "seq": {"q1_k1"}})``). It is judged on partial rows
    too, which is what lets the generator steer around it."""

    when: Mapping[str, frozenset[str]]
    why: str = ""

    def __init__(self, when: Mapping[str, Iterable[str]], why: str = "") -> None:
        object.__setattr__(self, "when", {k: frozenset(v) for k, v in when.items()})
        object.__setattr__(self, "why", why)

    def forbids(self, row: Mapping[str, str]) -> bool:
        return all(name in row and row[name] in values for name, values in self.when.items())


@dataclass
class CoveringArray:
    """The rows (dimension -> value label, in dimension order) and what the constraints ruled out."""

    dimensions: tuple[Dimension, ...]
    strength: int
    rows: list[dict[str, str]]
    #: t-combinations no valid row can hold (each as {dimension: value})
    infeasible: list[dict[str, str]] = field(default_factory=list)


Key = tuple[tuple[int, int], ...]  # ((dimension index, value index), ...) in dimension order
#: candidate rows tried per row kept (more: fewer rows, a slower build)
_CANDIDATES = 12


def _isolated(dims: Sequence[Dimension], key: Key) -> set[tuple[int, int]]:
    return {(d, v) for d, v in key if dims[d].values[v] in dims[d].isolated}


def _holds(dims: Sequence[Dimension], row: Key, combination: Key) -> bool:
    """Whether ``row`` covers ``combination`` (a sub-key of it): every isolated value of the row is in it."""
    return _isolated(dims, row) <= set(combination)


def _valid(partial: Mapping[str, str], excludes: Sequence[Exclude]) -> bool:
    return not any(e.forbids(partial) for e in excludes)


def _named(dims: Sequence[Dimension], key: Key) -> dict[str, str]:
    return {dims[d].name: dims[d].values[v] for d, v in key}


def _check(dims: Sequence[Dimension], strength: int, excludes: Sequence[Exclude]) -> None:
    names = [d.name for d in dims]
    if len(set(names)) != len(names):
        raise ValueError(f"dimension names repeat: {names}")
    if strength < 1:
        raise ValueError(f"strength must be >= 1, got {strength}")
    for e in excludes:
        for name, values in e.when.items():
            dim = next((d for d in dims if d.name == name), None)
            if dim is None:
                raise ValueError(f"exclude {dict(e.when)} names an unknown dimension {name!r}")
            unknown = sorted(values - set(dim.values))
            if unknown:
                raise ValueError(f"exclude {dict(e.when)}: {name!r} has no value {unknown[0]!r}")


def _complete(
    dims: Sequence[Dimension],
    seed: Key,
    t: int,
    uncovered: set[Key],
    excludes: Sequence[Exclude],
    pending: Mapping[tuple[int, int], int],
    turn: int = 0,
) -> dict[int, int] | None:
    """A full valid row holding ``seed``, each free dimension chosen greedily; None if none is found
    (the greedy fill backtracks one dimension at a time before giving up)."""
    row = dict(seed)
    free = [d for d in range(len(dims)) if d not in row]
    free = free[turn % len(free) :] + free[: turn % len(free)] if free else free  # each candidate its own order

    isolated = _isolated(dims, seed)  # a row's isolated values are its seed's

    def gain(d: int, v: int) -> int:
        assigned = sorted(row)
        count = 0
        for others in combinations(assigned, t - 1):
            key = tuple(sorted([(o, row[o]) for o in others] + [(d, v)]))
            count += key in uncovered and isolated <= set(key)
        return count

    def named(r: Mapping[int, int]) -> dict[str, str]:
        return {dims[d].name: dims[d].values[v] for d, v in r.items()}

    def fill(i: int) -> bool:
        if i == len(free):
            return True
        d = free[i]
        # ties go to the value with the most combinations still uncovered (then the first)
        order = sorted(range(len(dims[d].values)), key=lambda v: (-gain(d, v), -pending.get((d, v), 0), v))
        for v in order:
            if dims[d].values[v] in dims[d].isolated:
                continue  # only a seed brings an isolated value into a row
            row[d] = v
            if _valid(named(row), excludes) and fill(i + 1):
                return True
            del row[d]
        return False

    if not _valid(named(row), excludes) or not fill(0):
        return None
    return row


def _spread_seeds(ordered: Sequence[Key], position: int, uncovered: set[Key]) -> list[Key]:
    """Up to ``_CANDIDATES`` uncovered seeds, at most one per group of dimensions (seeds of one group
    grow near-identical rows), taken in order from ``position``."""
    seeds: dict[tuple[int, ...], Key] = {}
    for key in ordered[position:]:
        if key in uncovered:
            seeds.setdefault(tuple(d for d, _ in key), key)
            if len(seeds) == _CANDIDATES:
                break
    return list(seeds.values())


def covering_array(
    dimensions: Sequence[Dimension], strength: int = 2, excludes: Sequence[Exclude] = ()
) -> CoveringArray:
    """Rows covering every valid ``strength``-way combination of ``dimensions`` (deterministic).

    With fewer dimensions than ``strength`` the array is their full product. ValueError on a
    repeated dimension name, a strength below 1, or an exclude naming an unknown dimension or value.
    """
    dims = tuple(dimensions)
    _check(dims, strength, excludes)
    t = min(strength, len(dims))
    uncovered: set[Key] = set()
    ordered: list[Key] = []
    for group in combinations(range(len(dims)), t):
        for values in product(*(range(len(dims[d].values)) for d in group)):
            key = tuple(zip(group, values, strict=True))
            if _valid(_named(dims, key), excludes):
                uncovered.add(key)
                ordered.append(key)
    rows: list[dict[str, str]] = []
    infeasible: list[dict[str, str]] = []
    position = 0
    groups = list(combinations(range(len(dims)), t))
    #: per (dimension, value): how many uncovered combinations hold it (the greedy fill's tie-break)
    pending: dict[tuple[int, int], int] = {}
    for key in uncovered:
        for pair in key:
            pending[pair] = pending.get(pair, 0) + 1
    while uncovered:
        while ordered[position] not in uncovered:
            position += 1
        best: tuple[int, dict[int, int]] | None = None
        # AETG: several candidate rows, each from another uncovered seed; keep the one covering most
        seeds = _spread_seeds(ordered, position, uncovered)
        for turn, seed in enumerate(seeds):
            row = _complete(dims, seed, t, uncovered, excludes, pending, turn)
            if row is None:
                uncovered.discard(seed)
                for pair in seed:
                    pending[pair] -= 1
                infeasible.append(_named(dims, seed))
                continue
            full = tuple(sorted(row.items()))
            new = sum((key := tuple((d, row[d]) for d in g)) in uncovered and _holds(dims, full, key) for g in groups)
            if best is None or new > best[0]:
                best = (new, row)
        if best is None:
            continue
        row = best[1]
        full_row = tuple(sorted(row.items()))
        for group in groups:
            key = tuple((d, row[d]) for d in group)
            if key in uncovered and _holds(dims, full_row, key):
                uncovered.discard(key)
                for pair in key:
                    pending[pair] -= 1
        rows.append({dims[d].name: dims[d].values[row[d]] for d in range(len(dims))})
    return CoveringArray(dims, strength, rows, infeasible)


def t_tuples_missing(
    dimensions: Sequence[Dimension], rows: Sequence[Mapping[str, str]], strength: int, excludes: Sequence[Exclude] = ()
) -> list[dict[str, str]]:
    """Every valid ``strength``-combination that no row holds, found by brute force over all full
    rows (valid: some full row that no exclude forbids holds it; a row holds a combination only if
    each of its isolated values is in it). For checking small arrays."""
    dims = tuple(dimensions)
    t = min(strength, len(dims))
    full_rows = [
        dict(zip([d.name for d in dims], values, strict=True)) for values in product(*(d.values for d in dims))
    ]
    valid_rows = [r for r in full_rows if _valid(r, excludes)]
    isolated = {d.name: d.isolated for d in dims}

    def holdable(r: Mapping[str, str], group: tuple[str, ...]) -> bool:  # its isolated values all in group
        return all(n in group for n, v in r.items() if v in isolated.get(n, ()))

    missing = []
    for group in combinations([d.name for d in dims], t):
        feasible = {tuple(r[n] for n in group) for r in valid_rows if holdable(r, group)}
        held = {tuple(r[n] for n in group) for r in rows if holdable(r, group)}
        missing += [dict(zip(group, values, strict=True)) for values in sorted(feasible - held)]
    return missing
