"""Perf records in the report's readers: the table's figure, the gate's slowdowns (the chart of
them is the table's: ``table.perf_chart``).

Torch-free and pure. A perf record is ``results[*].perf`` (docs/perf.md): ``median_s``,
``spread`` (relative interquartile range of the repetitions), ``throughput`` + ``unit``,
``peak_fraction``... Records from reports written before it simply have none.

- :func:`perf_figure` -> ``"312 GFLOP/s, 4 % of peak"``: the text a table cell shows next to the
  outcome and parity figure;
- :func:`slowdown_of` -> how much slower CANDIDATE ran than BASE and whether the change is within
  the recorded noise: the gate (``rocm-compat diff --max-slowdown``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_rocm.perf.stats import BUSY_SHARE

#: the default threshold of ``diff --max-slowdown``: 25 % slower is a slowdown
DEFAULT_MAX_SLOWDOWN = 1.25
#: a recorded spread at or above this hides a 2x change inside the noise: the row cannot be judged
TOO_NOISY_SPREAD = 1.0


def finite_number(value: Any) -> float | None:
    """The number rule of a perf record's fields: a finite int or float, never a bool (unlike a
    parity figure, ``parity.reading.figure``, a perf figure is never ``"inf"``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def busy_share(record: Mapping[str, Any] | None) -> float | None:
    """The row's ``run_queue_share`` when it is BUSY_SHARE or more (timed on a busy machine), else None."""
    share = finite_number(record.get("run_queue_share")) if isinstance(record, Mapping) else None
    return share if share is not None and share >= BUSY_SHARE else None


def _scaled(value: float, unit: str) -> str:
    """``312 GFLOP/s``, ``1.31 TFLOP/s``, ``850 MB/s``: three significant digits, SI prefix moved;
    ``41.2 tokens/s`` as it is (units without the G prefix are not rescaled)."""
    if not unit.startswith("G"):
        return f"{value:,.0f} {unit}" if value >= 1000 else f"{value:.3g} {unit}"
    base = unit.removeprefix("G")  # FLOP and byte rates are stored in G (1e9)
    for factor, prefix in ((1e3, "T"), (1.0, "G"), (1e-3, "M"), (1e-6, "k")):
        if value >= factor or factor == 1e-6:
            return f"{value / factor:.3g} {prefix}{base}"
    return f"{value:.3g} {unit}"  # pragma: no cover - the loop always returns


#: SI prefixes a G-unit (GFLOP/s, GB/s: stored in 1e9) is shown in, largest first
_PREFIXES = ((1e3, "T"), (1.0, "G"), (1e-3, "M"), (1e-6, "k"))


def unit_scale(unit: str, largest: float) -> tuple[float, str]:
    """(divisor, unit shown) for a group of figures whose largest is ``largest``: one unit per
    group (``TFLOP/s`` for fp32 and bf16 GEMM alike, never TFLOP/s beside MFLOP/s)."""
    if not unit.startswith("G"):
        return 1.0, unit
    factor, prefix = next(((f, p) for f, p in _PREFIXES if largest >= f), _PREFIXES[-1])
    return factor, prefix + unit.removeprefix("G")


def format_throughput(value: float, divisor: float, unit: str) -> str:
    """``195 GFLOP/s``, ``0.0753 GFLOP/s``: three significant digits in the given unit."""
    shown = value / divisor
    return f"{shown:,.0f} {unit}" if shown >= 1000 else f"{shown:.3g} {unit}"


def perf_figure(record: Mapping[str, Any] | None, scale: tuple[float, str] | None = None) -> str:
    """The cell text of a perf record: ``312 GFLOP/s, 4 % of peak``; ``1.2 ms`` without work; ``""``
    without a record (an older report, a row that does not measure). A row whose spread would hide
    a 2x change says it is too noisy to judge; one that stopped at its budget says how few reps it got.
    ``scale``: (divisor, unit) from :func:`unit_scale`, the unit of the figure's group."""
    if not isinstance(record, Mapping):
        return ""
    throughput, unit = finite_number(record.get("throughput")), record.get("unit")
    if throughput is not None and isinstance(unit, str) and unit:
        text = format_throughput(throughput, *scale) if scale else _scaled(throughput, unit)
    else:
        median = finite_number(record.get("median_s"))
        if median is None:
            return ""
        text = f"{median * 1e3:.3g} ms" if median >= 1e-3 else f"{median * 1e6:.3g} µs"
    fraction = finite_number(record.get("peak_fraction"))
    if fraction is not None:
        text += f", {fraction * 100:.2g} % of peak"
    noise = noise_text(record)
    if noise:
        text += f", {noise}"
    busy = busy_text(record)
    if busy:
        text += f", {busy}"
    if record.get("truncated") == "budget":
        text += f", {record.get('reps')} reps in its budget"
    return text


def noise_text(record: Mapping[str, Any]) -> str:
    """``too noisy to judge (spread 4.6e+02)`` for a figure whose recorded spread would hide a 2x
    change (``TOO_NOISY_SPREAD``), else ``""``: the one mark of a noisy figure, wherever shown."""
    spread = finite_number(record.get("spread"))
    return f"too noisy to judge (spread {spread:.2g})" if spread is not None and spread >= TOO_NOISY_SPREAD else ""


def busy_text(record: Mapping[str, Any]) -> str:
    """``timed on a busy machine (waited for a core 130% of the time): cannot judge`` for a figure
    timed while other processes had the cores (:func:`busy_share`, the evidence the gate calls
    "noisy"), else ``""``: the one mark of such a figure, in a cell and in the speed block alike."""
    share = busy_share(record)
    return "" if share is None else f"timed on a busy machine (waited for a core {share:.0%} of the time): cannot judge"


def caveats(record: Mapping[str, Any]) -> str:
    """Every mark a figure needs before anyone reads it: too noisy (:func:`noise_text`), timed on
    a busy machine (:func:`busy_text`); ``""`` for a figure that can be judged."""
    return ", ".join(part for part in (noise_text(record), busy_text(record)) if part)


# -- the gate -----------------------------------------------------------------------------------
@dataclass
class Slowdown:
    """One row measured in both reports that ran slower in CANDIDATE than ``max_slowdown`` allows."""

    feature: str
    base_s: float
    candidate_s: float
    #: how many times slower (the ratio of throughputs where both have one, else of medians)
    factor: float
    #: the noise band: the wider of the two recorded spreads
    noise: float
    #: the change lies within the noise band: reported as noisy, never a regression
    noisy: bool
    #: False: BASE's figure is 0, negative or not finite, so no ratio means anything; the row is
    #: listed as "not comparable" (``factor`` is inf) and fails the gate, never a silent pass
    comparable: bool = True
    #: the larger ``run_queue_share`` of the two when one was timed on a busy machine (then ``noisy``)
    busy: float | None = None


def _speed_ratio(before: Mapping[str, Any], after: Mapping[str, Any]) -> float | None:
    """How many times slower ``after`` ran: base throughput / candidate throughput (same unit),
    else candidate median / base median; None when they cannot be compared."""
    tp_b, tp_a = finite_number(before.get("throughput")), finite_number(after.get("throughput"))
    if tp_b and tp_a and before.get("unit") == after.get("unit"):
        return tp_b / tp_a
    med_b, med_a = finite_number(before.get("median_s")), finite_number(after.get("median_s"))
    if med_b and med_a is not None and before.get("work") == after.get("work"):
        return med_a / med_b
    return None


def measured_in_both(before: Any, after: Any) -> bool:
    """Whether the speed gate compares a row: both perf records give a ratio, or BASE's figure is
    unusable beside CANDIDATE's (then :func:`slowdown_of` says "not comparable", which fails)."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return False
    return _unusable_base(before, after) or _speed_ratio(before, after) is not None


def _unusable_base(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """BASE recorded a median of 0, below 0 or not finite while CANDIDATE has a figure: any
    slowdown would pass unseen (a ratio over 0 is inf, or skipped as "cannot be compared")."""
    raw = before.get("median_s")
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return False  # no median at all: nothing was measured there
    tp_b, tp_a = finite_number(before.get("throughput")), finite_number(after.get("throughput"))
    if tp_b and tp_b > 0 and tp_a is not None and before.get("unit") == after.get("unit"):
        return False  # the throughputs compare
    usable = math.isfinite(raw) and raw > 0
    return not usable and finite_number(after.get("median_s")) is not None


def slowdown_of(
    feature: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, max_slowdown: float
) -> Slowdown | None:
    """The slowdown of a row between two perf records, when it ran more than ``max_slowdown``
    times slower; None otherwise (or when either is missing). A change no wider than the rows'
    recorded spread (``factor - 1 <= max(spread)``) is marked ``noisy``: on a loaded machine the
    repetitions of one run already differ that much, so it proves nothing. So is a row either side
    timed on a busy machine (``busy``: its threads waited for a core half the time or more): the
    figures measured the machine's load."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return None
    if _unusable_base(before, after):
        raw = float(before["median_s"])  # a number: _unusable_base checked
        return Slowdown(feature, raw, float(after.get("median_s") or 0.0), math.inf, 0.0, False, False)
    factor = _speed_ratio(before, after)
    if factor is None or not factor > max_slowdown:
        return None
    noise = max(finite_number(before.get("spread")) or 0.0, finite_number(after.get("spread")) or 0.0)
    shares = [share for share in (busy_share(before), busy_share(after)) if share is not None]
    busy = max(shares) if shares else None
    return Slowdown(
        feature,
        float(before.get("median_s") or 0.0),
        float(after.get("median_s") or 0.0),
        factor,
        noise,
        factor - 1 <= noise or busy is not None,
        busy=busy,
    )
