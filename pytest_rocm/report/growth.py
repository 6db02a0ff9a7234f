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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_rocm.report.load import metric, worse

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


def parity_errors(parity: Iterable[Any]) -> dict[tuple[str, str | None], float]:
    """(dtype, name) -> the worst error of a result's parity records (normwise, else max_rel)."""
    out: dict[tuple[str, str | None], float] = {}
    for entry in parity:
        value = metric(entry) if isinstance(entry, dict) else None
        if value is not None:
            key = (str(entry.get("dtype", "?")), entry.get("name"))
            out[key] = worse(out.get(key, value), value)
    return out


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
        if key in before and grew(before[key], value, factor, floor):
            ratio = value / max(before[key], floor) if math.isfinite(value) else math.inf
            out.append(Growth(feature, key[0], key[1], before[key], value, ratio))
    return out


def growth_figure(factor: float) -> str:
    """``34x``, or ``to non-finite``: how a growth is written, by the gate and the table alike."""
    return f"{factor:.0f}x" if math.isfinite(factor) else "to non-finite"
