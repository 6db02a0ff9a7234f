"""The HTML page's speed chart: one self-contained SVG of the measured rows across the columns,
each row's throughput relative to its best column, labelled with ``report.perf.perf_figure``.

Pure and stdlib only. :func:`table_chart_svg` takes a ``table.model.Table``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_rocm.report.perf import caveats, finite_number, perf_figure, unit_scale


def perf_chart_svg(rows: Sequence[tuple[str, Mapping[str, Mapping[str, Any] | None]]], columns: Sequence[str]) -> str:
    """A bar chart of the measured rows across the columns, one self-contained ``<svg>``.

    ``rows``: ``[(feature, {column label: perf record or None})]``; ``columns``: the labels in the
    table's order. Each bar is the column's throughput relative to the row's best column (so GEMM
    TFLOP/s and copy GB/s share one axis), labelled with :func:`perf_figure`; a row measured in no
    column is left out. ``""`` when nothing was measured."""
    measured = []
    for feature, cells in rows:
        speeds = {c: _speed(cells.get(c)) for c in columns}
        best = max((s for s in speeds.values() if s), default=None)
        if best:
            measured.append((feature, cells, speeds, best))
    if not measured:
        return ""
    single = len(columns) == 1  # one column: each bar is the fraction of the device's peak
    scales = _group_scales(measured)
    bar_h, gap, left, width = 12, 8, 260, 360
    height = sum(len(columns) * bar_h + gap for _ in measured) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="perf-chart" width="{left + width + 200}" height="{height}"'
        ' role="img" aria-label="throughput per row and column, relative to the row\'s best column">',
    ]
    y = 10
    for feature, cells, speeds, best in measured:
        parts.append(f'<text x="0" y="{y + bar_h}" font-size="11">{html.escape(feature)}</text>')
        for i, column in enumerate(columns):
            speed, record = speeds[column], cells.get(column)
            fraction = finite_number(record.get("peak_fraction")) if isinstance(record, Mapping) else None
            if single:
                length = 0 if fraction is None else max(1, round(width * min(fraction, 1.0)))
            else:
                length = 0 if not speed else max(1, round(width * speed / best))
            scale = scales.get((feature.split("[", 1)[0], str(record.get("unit")))) if record else None
            figure = perf_figure(record, scale) or "not measured"
            colour = "#bdbdbd" if isinstance(record, Mapping) and caveats(record) else BAR_COLOURS[i % len(BAR_COLOURS)]
            parts.append(
                f'<rect x="{left}" y="{y}" width="{length}" height="{bar_h - 2}" class="perf-col{i}"'
                f' fill="{colour}"><title>{html.escape(column)}: {html.escape(figure)}</title></rect>'
                f'<text x="{left + length + 4}" y="{y + bar_h - 3}" font-size="10">{html.escape(column)}: {html.escape(figure)}</text>'
            )
            y += bar_h
        y += gap
    parts.append("</svg>")
    return "".join(parts)


#: the columns' bar colours: none of them red (red is a failure everywhere else on the page)
BAR_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#8c564b", "#e377c2")


def _group_scales(measured: Sequence[tuple[str, Any, Any, Any]]) -> dict[tuple[str, str], tuple[float, str]]:
    """(operation, unit) -> the unit its figures share: the operation's rows (``perf_gemm[mm-...]``,
    ``perf_gemm[linear_bias-...]``) in one unit, chosen from their largest figure."""
    largest: dict[tuple[str, str], float] = {}
    for feature, cells, _, _ in measured:
        for record in cells.values():
            throughput = finite_number(record.get("throughput")) if isinstance(record, Mapping) else None
            if throughput is not None and isinstance(record.get("unit"), str):
                key = (feature.split("[", 1)[0], record["unit"])
                largest[key] = max(largest.get(key, 0.0), throughput)
    return {key: unit_scale(key[1], value) for key, value in largest.items()}


def table_chart_svg(table: Any) -> str:
    """:func:`perf_chart_svg` of a ``table.model.Table`` (its ``labels`` and ``rows``, each row's
    ``cells[label].perf``): the call the HTML page makes (any object with those, a made-up one in a test too)."""
    rows = []  # only the rows some column measured: the others have no bar (most rows of a parity table)
    for row in table.rows:
        for cell in row.cells.values():  # a loop, not any(generator): asked of every row
            if getattr(cell, "perf", None):
                rows.append((row.feature, {label: getattr(c, "perf", None) for label, c in row.cells.items()}))
                break
    return perf_chart_svg(rows, list(table.labels))


def _speed(record: Mapping[str, Any] | None) -> float | None:
    """Higher is faster: the throughput, else 1 / median."""
    if not isinstance(record, Mapping):
        return None
    throughput = finite_number(record.get("throughput"))
    if throughput:
        return throughput
    median = finite_number(record.get("median_s"))
    return 1.0 / median if median else None
