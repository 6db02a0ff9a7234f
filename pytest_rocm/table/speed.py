"""The speed block: "how fast" at a glance, per column, on the table's first screen.

Pure and stdlib only; ``html`` and ``markdown`` render what :func:`speed_block` decides.

The **headline rows** are the bundled suites' measured rows a reader asks about first: GEMM per
dtype, SDPA prefill and decode (the fastest backend that ran, named), convolution, memory
bandwidth, host-to-device copy, the model's prefill and decode tokens/s and its training steps/s
(the fastest dtype, named). A table with measured rows of its own (a project's ``perf`` tests) gets
one entry per measured operation after them, up to :data:`MAX_ENTRIES` in all.

Each figure is the report's: ``perf_figure``'s throughput, in **one unit per entry group** (GEMM's
fp32 and bf16 rows both in TFLOP/s, never TFLOP/s beside MFLOP/s), the % of the device's published
peak where known, the backend that ran (BLAS library, TunableOp, SDPA backend) and, for a figure
whose spread would hide a 2x change, ``perf.noise_text``'s mark. Bars: with one column, the
fraction of the device's peak (no peak known: no bar, and the block says why); with several, each
column against the entry's fastest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_rocm.parity.tolerances import short_dtype
from pytest_rocm.report.outcomes import GOOD
from pytest_rocm.report.perf import caveats, finite_number, format_throughput, slowdown_of, unit_scale
from pytest_rocm.table.grid import SLOWDOWN_FACTOR, slowdown_text, split_dtype
from pytest_rocm.table.model import Cell, Table
from pytest_rocm.table.oneline import one_line

#: how many entries the block shows at most (the throughput chart further down has every row)
MAX_ENTRIES = 14


@dataclass(frozen=True)
class Headline:
    """One headline entry: the rows it takes its figure from and how they differ."""

    title: str
    #: matches the row's feature; its ``variant`` group (a backend, a dtype) names the one shown
    pattern: str
    #: the entries that share one unit (GEMM's dtypes)
    group: str = ""


HEADLINES: tuple[Headline, ...] = (
    Headline("GEMM fp32", r"operators/perf_gemm\[mm-(?P<variant>float32)\]", "gemm"),
    Headline("GEMM fp16", r"operators/perf_gemm\[mm-(?P<variant>float16)\]", "gemm"),
    Headline("GEMM bf16", r"operators/perf_gemm\[mm-(?P<variant>bfloat16)\]", "gemm"),
    Headline("SDPA prefill", r"operators/perf_sdpa\[prefill-(?P<variant>\w+)\]"),
    Headline("SDPA decode", r"operators/perf_sdpa\[decode-(?P<variant>\w+)\]"),
    Headline("convolution", r"operators/perf_conv2d\[(?P<variant>[^\]]+)\]"),
    Headline("bandwidth (a + b)", r"operators/perf_elementwise_bandwidth\[(?P<variant>[^\]]+)\]", "bytes"),
    Headline("host→device copy", r"operators/perf_copy\[(?:[^\]]*-)?(?P<variant>h2d-pinned)\]", "bytes"),
    Headline("model prefill", r"models/perf/prefill-tokens\[(?P<variant>\w+)\]", "tokens"),
    Headline("model decode", r"models/perf/decode-tokens\[(?P<variant>\w+)\]", "tokens"),
    Headline("training", r"models/perf/amp-train-steps\[(?P<variant>\w+)\]"),
)


@dataclass
class Figure:
    """One column's figure of an entry, every part from the report's perf record."""

    feature: str
    throughput: str  # ``195 GFLOP/s`` in the entry group's unit
    peak: str  # ``4.9 % of peak``, or ""
    backend: str  # ``hipblaslt, TunableOp`` / ``SDPA flash``, or ""
    #: ``too noisy to judge (spread 4.6e+02)``, ``timed on a busy machine (...): cannot judge``
    #: (``perf.caveats``: the evidence diff calls noisy), or ""
    noisy: str
    variant: str  # which of the matching rows gave it (``flash``, ``bf16``), "" when one row matched
    speed: float  # the raw throughput (or 1 / median), for the bars
    fraction: float | None  # of the device's published peak
    #: ``29.7x slower vs <first column>`` where diff's rule calls it a slowdown beyond the noise
    slower: str = ""

    @property
    def shown_variant(self) -> str:
        """The variant, unless the backend already names it (``SDPA flash`` for ``flash``)."""
        return "" if self.variant and self.variant in self.backend.split(", ")[0].split() else self.variant

    def text(self) -> str:
        parts = [self.throughput + (f" ({self.shown_variant})" if self.shown_variant else "")]
        parts += [p for p in (self.peak, self.backend, self.noisy, self.slower) if p]
        return " · ".join(parts)


@dataclass
class Entry:
    title: str
    suite: str
    group: str
    #: label -> the figure, or None (then ``missing`` says why)
    figures: dict[str, Figure | None] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    #: label -> the bar's length, 0..1 (None: no bar)
    bars: dict[str, float | None] = field(default_factory=dict)


@dataclass
class SpeedBlock:
    entries: list[Entry]
    #: what the bars measure: "peak" (one column: the device's published peak) or "best" (the
    #: entry's fastest column)
    bars: Literal["peak", "best"]
    #: measured operations left out past MAX_ENTRIES
    more: int = 0
    #: one column with figures but no published peak: why there are no bars
    note: str = ""


def _speed(record: Mapping[str, Any]) -> float | None:
    throughput = finite_number(record.get("throughput"))
    if throughput and throughput > 0:
        return throughput
    median = finite_number(record.get("median_s"))
    return 1.0 / median if median and median > 0 else None


def backend_text(record: Mapping[str, Any]) -> str:
    """``SDPA flash``, ``hipblaslt, TunableOp``, ``mkl``: what ran, from the record's ``backend``."""
    backend = record.get("backend")
    if not isinstance(backend, Mapping):
        return ""
    parts = []
    if isinstance(backend.get("sdpa"), str) and backend["sdpa"]:
        parts.append(f"SDPA {backend['sdpa']}")
    if isinstance(backend.get("blas"), str) and backend["blas"]:
        parts.append(str(backend["blas"]))
    if backend.get("tunableop") is True:
        parts.append("TunableOp")
    return ", ".join(parts)


def _measured(cell: Cell | None) -> bool:
    return (
        cell is not None and cell.outcome in GOOD and isinstance(cell.perf, Mapping) and _speed(cell.perf) is not None
    )


def _matching(table: Table) -> list[tuple[Headline | None, str, str, Any]]:
    """(headline or None, entry key, variant, row) for every row with a perf record in some column."""
    out: list[tuple[Headline | None, str, str, Any]] = []
    for row in table.rows:
        for c in row.cells.values():  # a loop, not any(generator): most rows of a table measured nothing
            if c is not None and c.perf is not None and isinstance(c.perf, Mapping):
                break
        else:
            continue
        headline = next((h for h in HEADLINES if re.fullmatch(h.pattern, row.feature)), None)
        if headline is None and row.feature.split("[", 1)[0] in HEADLINE_OPS:
            continue  # a bundled measured row past the headline (bmm, linear_bias): in the chart
        if headline is not None:
            match = re.fullmatch(headline.pattern, row.feature)
            variant = match.group("variant") if match and "variant" in headline.pattern else ""
            out.append((headline, headline.title, variant, row))
        else:  # a project's own measured row: one entry per operation, its fastest variant named
            base, dtype = split_dtype(row.feature)
            op, _, params = base.partition("[")
            variant = "-".join(p for p in (params.rstrip("]"), short_dtype(dtype) if dtype else "") if p)
            out.append((None, op, variant, row))
    return out


def speed_block(table: Table) -> SpeedBlock | None:
    """The block for a table, None when no column measured anything."""
    entries: dict[str, Entry] = {}
    candidates: dict[str, list[tuple[str, Any]]] = {}
    for headline, key, variant, row in _matching(table):
        if key not in entries:
            group = headline.group or key if headline else key
            entries[key] = Entry(key, row.suite, group)
        candidates.setdefault(key, []).append((variant, row))
    order = [h.title for h in HEADLINES if h.title in entries] + [k for k in entries if k not in HEADLINES_BY_TITLE]
    more = max(0, len(order) - MAX_ENTRIES)
    chosen = [entries[k] for k in order[:MAX_ENTRIES]]
    records: dict[tuple[str, str], tuple[str, str, Mapping[str, Any]]] = {}
    for entry in chosen:
        rows = candidates[entry.title]
        for label in table.labels:
            best: tuple[float, str, str, Mapping[str, Any]] | None = None
            for variant, row in rows:
                cell = row.cells.get(label)
                if _measured(cell):
                    assert cell is not None and cell.perf is not None
                    speed = _speed(cell.perf) or 0.0
                    if best is None or speed > best[0]:
                        best = (speed, variant, row.feature, cell.perf)
            if best is None:
                entry.missing[label] = _why_missing([row.cells.get(label) for _, row in rows])
            else:
                shown_variant = best[1] if len(rows) > 1 else ""
                records[(entry.title, label)] = (shown_variant, best[2], best[3])
    _fill_figures(table, chosen, records)
    _mark_slowdowns(table, chosen, records)
    block = SpeedBlock(chosen, "peak" if len(table.labels) == 1 else "best", more)
    if not any(e.figures.get(label) for e in chosen for label in table.labels):
        return None
    _fill_bars(table, block)
    return block


HEADLINES_BY_TITLE = {h.title for h in HEADLINES}
#: the operations the headlines take rows from (``operators/perf_gemm``)
HEADLINE_OPS = frozenset(h.pattern.split("\\[", 1)[0] for h in HEADLINES)


def _why_missing(cells: list[Cell | None]) -> str:
    """A column without a figure for an entry: the best outcome its rows had, in one line."""
    present = [c for c in cells if c is not None]
    if not present:
        return "not run"
    passed = [c for c in present if c.outcome in GOOD]
    if passed:
        return "not measured"
    return one_line(present[0], limit=60)


def _fill_figures(table: Table, entries: list[Entry], records: dict[tuple[str, str], tuple[str, str, Any]]) -> None:
    groups: dict[str, list[tuple[Entry, str, Mapping[str, Any]]]] = {}
    for entry in entries:
        for label in table.labels:
            if (entry.title, label) in records:
                groups.setdefault(entry.group, []).append((entry, label, records[(entry.title, label)][2]))
    for members in groups.values():
        units = {str(r.get("unit") or "") for _, _, r in members}
        largest = max((finite_number(r.get("throughput")) or 0.0) for _, _, r in members)
        # one unit per group; rows of another unit in one group (not expected) keep their own
        scale = unit_scale(units.pop(), largest) if len(units) == 1 else None
        for entry, label, record in members:
            variant, feature, _ = records[(entry.title, label)]
            entry.figures[label] = _figure(feature, variant, record, scale)


def _figure(feature: str, variant: str, record: Mapping[str, Any], scale: tuple[float, str] | None) -> Figure:
    throughput, unit = finite_number(record.get("throughput")), str(record.get("unit") or "")
    if throughput is not None and unit:
        divisor, shown_unit = scale if scale else unit_scale(unit, throughput)
        text = format_throughput(throughput, divisor, shown_unit)
    else:
        median = finite_number(record.get("median_s")) or 0.0
        text = f"{median * 1e3:.3g} ms" if median >= 1e-3 else f"{median * 1e6:.3g} µs"
    fraction = finite_number(record.get("peak_fraction"))
    return Figure(
        feature=feature,
        throughput=text,
        peak=f"{fraction * 100:.2g} % of peak" if fraction is not None else "",
        backend=backend_text(record),
        noisy=caveats(record),  # too noisy, or timed on a busy machine: the gate's evidence, marked
        variant=short_dtype(variant),
        speed=_speed(record) or 0.0,
        fraction=fraction,
    )


def _mark_slowdowns(table: Table, entries: list[Entry], records: dict[tuple[str, str], tuple[str, str, Any]]) -> None:
    """A later column's figure that ran slower than the first column's same row, past
    SLOWDOWN_FACTOR and beyond both recorded spreads (``slowdown_of``: diff's and the cells' rule)."""
    if len(table.labels) < 2:
        return
    base_label = table.labels[0]
    for entry in entries:
        base = records.get((entry.title, base_label))
        for label in table.labels[1:]:
            figure, mine = entry.figures.get(label), records.get((entry.title, label))
            if base is None or mine is None or figure is None or base[1] != mine[1]:
                continue  # another row (a faster backend) in one of them: not the same measurement
            slow = slowdown_of(mine[1], base[2], mine[2], SLOWDOWN_FACTOR)
            if slow is not None and not slow.noisy:
                figure.slower = slowdown_text(slow.factor, base_label)


def _fill_bars(table: Table, block: SpeedBlock) -> None:
    if block.bars == "peak":
        label = table.labels[0]
        for entry in block.entries:
            figure = entry.figures.get(label)
            entry.bars[label] = min(figure.fraction, 1.0) if figure and figure.fraction is not None else None
        if all(entry.bars.get(label) is None for entry in block.entries):
            block.note = "no % of peak and no bars: this device's peak is not known (data/peaks.json; none for a CPU)"
        return
    for entry in block.entries:
        best = max((f.speed for f in entry.figures.values() if f), default=0.0)
        for label in table.labels:
            figure = entry.figures.get(label)
            entry.bars[label] = figure.speed / best if figure and best > 0 else None
