"""Whether a parity error grew between two results, and by how much: the one rule that
``rocm-compat diff`` (the gate) and the table (its "error grew" mark) both apply, so one cell
never shows two figures.

A result's errors are keyed by (dtype, the record's name): a test's forward and backward are
compared each with its own (``gelu`` with ``gelu``, ``gelu.grad[0]`` with ``gelu.grad[0]``), never
the worst of one with the worst of the other: a forward error that grew 34x beside a larger,
unchanged gradient error is 34x, not the 28x the two worsts would give.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_rocm.parity.reading import error_of, figure
from pytest_rocm.report.load import worse
from pytest_rocm.report.records import ParityRecord

#: errors at or below this are noise for the growth check (a float32 result that was exact)
DEFAULT_FLOOR = 1e-6
#: a parity error counts as grown above this multiple of the base's (the gate and the table alike)
DEFAULT_FACTOR = 10.0


@dataclass
class Growth:
    feature: str
    dtype: str
    name: str | None
    base: float
    candidate: float
    factor: float


def at_least(value: float, worst: float) -> bool:
    """Whether ``value`` is as bad as ``worst`` or worse, NaN the worst of all (``>=`` is false
    for any NaN, so a NaN that came second would keep the tolerance of a finite error)."""
    return math.isnan(value) or (not math.isnan(worst) and value >= worst)


def parity_figures(
    parity: Sequence[ParityRecord],
) -> tuple[dict[str, float], dict[str, tuple[str, float]], dict[tuple[str, str | None], float]]:
    """(``table.worst_errors``, ``table.worst_tolerances``, :func:`parity_errors`) of one
    result's records in one pass: each record's figure is read once, not once per view (three
    reads of it were a sixth of building a 20,000-cell table)."""
    errors: dict[str, float] = {}
    tolerances: dict[str, tuple[str, float]] = {}
    judged: dict[str, float] = {}  # per dtype the figure its tolerance came with
    named: dict[tuple[str, str | None], float] = {}
    record: Any  # a file's record may be anything: not a dict is skipped
    for record in parity:
        if not isinstance(record, dict):
            continue
        # parity.reading's error_of and shown_tolerance, inlined: a float is figure()'s answer as
        # it stands, so most records need no call (a property test holds this to read_parity)
        normwise = record.get("normwise")
        from_normwise = type(normwise) is float or figure(normwise) is not None
        value = normwise if type(normwise) is float else error_of(record)
        if value is None:
            continue
        dtype = record.get("dtype", "?")
        if type(dtype) is not str:
            dtype = str(dtype)
        # the first figure of a key is its worst so far (most results have one record per dtype)
        errors[dtype] = worse(errors[dtype], value) if dtype in errors else value
        key = (dtype, record.get("name"))
        named[key] = worse(named[key], value) if key in named else value
        normwise_tol = record.get("normwise_tol") if from_normwise else None
        normwise_tol = normwise_tol if type(normwise_tol) is float else figure(normwise_tol)
        rtol = record.get("rtol")
        rtol = rtol if type(rtol) is float else figure(rtol)
        # a normwise_tol of 0 is no bound (exact comparisons, figures the check did not judge normwise)
        tol = ("tol", normwise_tol) if normwise_tol else ("rtol", rtol) if rtol is not None else None
        if tol is not None and (dtype not in judged or at_least(value, judged[dtype])):
            tolerances[dtype], judged[dtype] = tol, value
    return errors, tolerances, named


def parity_errors(parity: Sequence[Any]) -> dict[tuple[str, str | None], float]:
    """(dtype, name) -> the worst error of a result's parity records (normwise, else max_rel)."""
    return parity_figures(parity)[2]


def merge_worst(into: dict[Any, float], new: Mapping[Any, float]) -> None:
    """Keep the worse error of each key (NaN the worst: ``load.worse``) of two merged results."""
    for key, value in new.items():
        into[key] = worse(into.get(key, value), value)


def grew(before: float, after: float, factor: float, floor: float) -> bool:
    """Whether an error grew past ``factor`` times BASE's (floored): a non-finite error where
    BASE's was finite always has (NaN compares false with everything, so ``>`` alone lets it
    through); one that was already non-finite has nowhere to grow."""
    if not math.isfinite(before):
        return False
    if not math.isfinite(after):
        return True
    return after > factor * max(before, floor)


def grown_errors(
    feature: str,
    before: Mapping[tuple[str, str | None], float],
    after: Mapping[tuple[str, str | None], float],
    factor: float = DEFAULT_FACTOR,
    floor: float = DEFAULT_FLOOR,
) -> list[Growth]:
    """The comparisons of one result whose error grew past ``factor`` (:func:`grew`), each with
    how many times BASE's (floored) it is now (inf where it became non-finite)."""
    out = []
    for key, value in after.items():
        was = before.get(key)
        if was is not None and grew(was, value, factor, floor):
            ratio = value / max(was, floor) if math.isfinite(value) else math.inf
            out.append(Growth(feature, key[0], key[1], was, value, ratio))
    return out


def growth_figure(factor: float) -> str:
    """``34x``, or ``to non-finite``: how a growth is written, by the gate and the table alike."""
    return f"{factor:.0f}x" if math.isfinite(factor) else "to non-finite"
