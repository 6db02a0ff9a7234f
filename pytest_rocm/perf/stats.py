"""From timed repetitions to a perf record: median, spread, throughput (torch-free).

The record is ``results[*].perf`` of report/1 (docs/perf.md): ``median_s``, ``spread`` (the
interquartile range of the repetitions relative to their median: how far apart the middle half of
the timings lie; the gate's noise band), ``reps``, ``work`` (``{"flops": N}`` or ``{"bytes": N}``),
``throughput`` and ``unit`` (``GFLOP/s``/``GB/s``, decimal: 1e9; ``tokens/s``, ``steps/s`` for the
model rows' ``{"tokens": N}`` / ``{"steps": N}``), ``peak_fraction`` (of the
device's published peak, null when unknown) and ``backend`` (facts about what ran).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

#: the work kinds a row may declare -> (the unit of its throughput, the units of work per unit)
UNITS: dict[str, tuple[str, float]] = {
    "flops": ("GFLOP/s", 1e9),
    "bytes": ("GB/s", 1e9),
    "tokens": ("tokens/s", 1.0),
    "steps": ("steps/s", 1.0),
}


class PerfRecord(TypedDict, total=False):
    """One measurement, as the report stores it in ``results[*].perf``."""

    name: str
    median_s: float
    spread: float
    reps: int
    min_s: float
    work: dict[str, float]
    throughput: float | None
    unit: str | None
    peak_fraction: float | None
    peak: float | None
    dtype: str | None
    device: str
    backend: dict[str, Any]
    #: leading samples dropped as warm-up left-overs (absent: none)
    discarded: int
    #: ``budget``: the row stopped at its budget before ``min_reps`` samples (absent: it did not)
    truncated: str
    #: seconds the process's threads waited for a core (Linux run-queue time) per second of timing;
    #: at ``BUSY_SHARE`` or more the figure measured the machine's load, not the code (absent: not
    #: known here)
    run_queue_share: float


#: a row whose threads waited for a core half the time it was timed, or more: other processes had
#: the cores and torch's threads waited for each other (a 20 us GEMM timed at 25 ms, every sample
#: alike, so the spread stays small); such a figure cannot judge a change
BUSY_SHARE = 0.5


def median_and_spread(times: Sequence[float]) -> tuple[float, float]:
    """(median seconds, relative interquartile range) of ``times``; spread 0 for one repetition."""
    if not times:
        raise ValueError("no timings: at least one repetition is needed")
    if any(not math.isfinite(t) or t < 0 for t in times):
        raise ValueError(f"timings must be finite and >= 0, got {list(times)!r:.80}")
    median = statistics.median(times)
    if len(times) < 2:
        return median, 0.0
    q1, _, q3 = statistics.quantiles(times, n=4, method="inclusive")
    return median, ((q3 - q1) / median if median > 0 else 0.0)


def check_work(work: Mapping[str, float] | None) -> dict[str, float]:
    """``{"flops": N}``, ``{"bytes": N}``, ``{"tokens": N}`` or ``{"steps": N}`` (N > 0), or ``{}``;
    anything else is a ValueError."""
    if not work:
        return {}
    if len(work) != 1 or next(iter(work)) not in UNITS:
        raise ValueError(f"work must be one of {{{', '.join(repr(k) + ': N' for k in UNITS)}}}, got {dict(work)!r:.80}")
    kind, amount = next(iter(work.items()))
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not amount > 0 or not math.isfinite(amount):
        raise ValueError(f"work {kind} must be a finite number > 0, got {amount!r}")
    return {kind: float(amount)}


def throughput(work: Mapping[str, float], seconds: float) -> tuple[float | None, str | None]:
    """(figure, unit): ``work`` per second in GFLOP/s, GB/s, tokens/s or steps/s; (None, None)
    without work."""
    if not work or seconds <= 0:
        return None, None
    kind, amount = next(iter(work.items()))
    unit, scale = UNITS[kind]
    return amount / seconds / scale, unit


def build_perf_record(
    times: Sequence[float],
    work: Mapping[str, float] | None = None,
    *,
    peak: float | None = None,
    name: str | None = None,
    dtype: str | None = None,
    device: str = "cpu",
    backend: Mapping[str, Any] | None = None,
) -> PerfRecord:
    """The report's perf record of timed repetitions. ``peak``: the device's peak in the same
    unit as the throughput (GFLOP/s or GB/s), or None when unknown."""
    checked = check_work(work)
    median, spread = median_and_spread(times)
    figure, unit = throughput(checked, median)
    record: PerfRecord = {
        "median_s": median,
        "spread": round(spread, 6),
        "reps": len(times),
        "min_s": min(times),
        "work": checked,
        "throughput": figure,
        "unit": unit,
        "peak_fraction": (figure / peak) if figure is not None and peak else None,
        "peak": peak,
        "dtype": dtype,
        "device": device,
        "backend": dict(backend or {}),
    }
    if name:
        record["name"] = name
    return record
