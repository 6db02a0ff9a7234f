"""The compatibility table as one self-contained HTML page (no network: inline CSS, JS and SVG).

Read top down in a minute: a banner per CPU reference-baseline column, the environments (the
scale profile in each column header), the summary (per suite and column: passed, failed,
crashed, not-installed, skipped), the rows that differ between columns and the failures, the charts
(fp16 vs bf16 error per operation, the first column's open; throughput where measured), then
every row in a collapsed section per suite. One row per feature, the dtypes as sub-columns; each cell shows its
reason, its parity figure with the tolerance (legend above the rows), a grown error and a slowdown. Filters
by outcome and suite (also from the URL: ``#outcome=failed,crashed&suite=operators``). What the
page says is decided in ``table.grid``, as for the Markdown.

Why this module is long: the page is self-contained, so its two SVG charts live here with the
markup that uses them (its stylesheet and script are data files: ``data/table.css``, ``table.js``).
"""

from __future__ import annotations

import math
from functools import lru_cache
from html import escape
from typing import Any

from pytest_rocm._resources import load_text
from pytest_rocm.parity.tolerances import LOW_PRECISION_DTYPES, short_dtype
from pytest_rocm.report.escape import web_url
from pytest_rocm.report.outcomes import GOOD, OUTCOMES, SUMMARY, Outcome
from pytest_rocm.report.selection import NOT_SELECTED
from pytest_rocm.table.grid import (
    LEGEND,
    NO_DTYPE,
    FeatureRow,
    cpu_baselines,
    growth_text,
    sections,
    slowdown_text,
    status_counts,
    suite_dtypes,
    summary,
)
from pytest_rocm.table.model import Cell, Table, environment_line, issue_name
from pytest_rocm.table.oneline import failure_lines, one_line
from pytest_rocm.table.perf_chart import table_chart_svg
from pytest_rocm.table.repro_link import repro_command
from pytest_rocm.table.speed_html import speed_block_html

COLOURS = {  # background, text
    "passed": ("#c8e6c9", "#1b5e20"),
    "xpassed": ("#b2dfdb", "#004d40"),
    "failed": ("#ffcdd2", "#b71c1c"),
    "error": ("#ffab91", "#7f1d00"),
    "crashed": ("#e1bee7", "#4a148c"),
    "timeout": ("#ffe0b2", "#e65100"),
    "xfailed": ("#fff9c4", "#6d5d00"),
    "skipped": ("#eeeeee", "#424242"),
    "not-installed": ("#e3f2fd", "#0d47a1"),
    "not-run": ("#fafafa", "#616161"),
}
STATUS_COLOURS = {
    "works everywhere": "#2e7d32",
    "regressed": "#c62828",
    "fixed": "#1565c0",
    "partial": "#ef6c00",
    "broken": "#c62828",
    "expected failure": "#8d6e00",
    "untested": "#757575",
}
#: the charted dtypes (the low-precision ones) and their bars' colours
DTYPE_COLOURS = dict(zip(LOW_PRECISION_DTYPES, ("#1f77b4", "#ff7f0e"), strict=True))

#: the page's stylesheet and script (inline: the page is one self-contained file)
CSS = load_text("table.css")
SCRIPT = load_text("table.js")


def _attr(text: Any) -> str:
    return _escaped(str(text))


@lru_cache(maxsize=1 << 16)
def _escaped(text: str) -> str:
    """Once per distinct text: a page says the same outcomes, labels and suites thousands of times."""
    return escape(text, quote=True)


def _banners(table: Table) -> str:
    notes = "".join(f"<div class='banner merge-note'>Note: {_attr(note)}</div>" for note in table.notes)
    return notes + "".join(
        f'<div class=banner data-label="{_attr(label)}">CPU reference baseline: the column '
        f"&ldquo;{_attr(table.column(label))}&rdquo; ran on the CPU; its results say nothing about a GPU.</div>"
        for label in cpu_baselines(table)
    )


def _environments(table: Table) -> str:
    rows = []
    for label in table.labels:
        note = ' <span class="note">interrupted run: partial results</span>' if label in table.interrupted else ""
        warning = table.accelerator_warning(label)
        note += f' <span class="note">warning: {_attr(warning)}</span>' if warning else ""
        rows.append(
            f"<tr><th>{_attr(table.column(label))}</th><td>{_attr(environment_line(table.environments[label]))}"
            f"{note}</td><td>{_attr(table.sources.get(label, ''))}</td></tr>"
        )
    head = "<thead><tr><th>column</th><th>environment</th><th>report</th></tr></thead>"
    return f"<table class=envs>{head}<tbody>{''.join(rows)}</tbody></table>"


def _summary(table: Table, rows: list[FeatureRow], differ: int) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in status_counts(rows).items())
    head = "".join(f"<th>{name}</th>" for name, _ in SUMMARY)
    body = []
    for suite, per_label in summary(table).items():
        for label, numbers in per_label.items():
            cells = "".join(
                f'<td class="n n-{name}{" hot" if numbers[name] and name in ("failed", "crashed") else ""}">'
                f"{numbers[name]}</td>"
                for name, _ in SUMMARY
            )
            body.append(
                f'<tr data-suite="{_attr(suite)}" data-label="{_attr(label)}"><td>{_attr(suite or "(no suite)")}</td>'
                f"<td>{_attr(table.column(label))}</td>{cells}</tr>"
            )
    return (
        f"<p id=row-summary>{len(rows)} features: {counts}; <b id=differ-count>{differ}</b> differ between columns</p>"
        f"<table id=summary><thead><tr><th>suite</th><th>column</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _cell(
    cell: Cell | None, growth: float | None, base: str, span: int, slowdown: float | None = None, source: str = ""
) -> str:
    """A passed cell: its outcome and figures. Any other: one line (``table.oneline``), the whole
    reason and every figure behind a click (``<details>``)."""
    if cell is None:
        colspan = f" colspan={span}" if span > 1 else ""
        return f'<td class="cell missing"{colspan} title="not run in this environment">—</td>'
    figure = cell.figure()
    if cell.outcome in GOOD and not growth and not slowdown:  # most cells of a table
        return _passed_cell(cell.outcome, figure, span)
    return _marked_cell(cell, figure, growth, base, span, slowdown, source)


@lru_cache(maxsize=1 << 14)
def _passed_cell(outcome: Outcome, figure: str, span: int) -> str:
    """A passed cell without a mark, made once per distinct outcome, figure and width: the same
    markup as any cell (a passed cell's says nothing but those three)."""
    return _marked_cell(Cell(outcome), figure, None, "", span, None)


def _marked_cell(
    cell: Cell, figure: str, growth: float | None, base: str, span: int, slowdown: float | None, source: str = ""
) -> str:
    colspan = f" colspan={span}" if span > 1 else ""
    bg, fg = COLOURS[cell.outcome]
    parts: list[str] = []
    if cell.outcome in GOOD:
        parts.append(cell.outcome)
        if figure:
            parts.append(f"<small class=fig>{_attr(figure)}</small>")
        title: str = cell.outcome
    else:
        title = line = one_line(cell)
        # what failed, from the records (whole in the report), then the recorded reason as it is
        text = "\n".join(p for p in (*failure_lines(cell.failed), (cell.reason or "").removeprefix("Skipped: ")) if p)
        body = (f"<pre class=full>{_attr(text)}</pre>" if text else "") + (
            f"<small class=fig>{_attr(figure)}</small>" if figure else ""
        )
        # the command that writes a standalone script of the failure (a table may lack its source)
        body += "".join(
            f"<small class=repro>reproducer: <code>{_attr(repro_command(source or 'REPORT', n))}</code></small>"
            for n in cell.repro
        )
        if body:
            parts.append(f"<details class=why><summary class=line>{_attr(line)}</summary>{body}</details>")
        else:
            parts.append(f"<span class=line>{_attr(line)}</span>")
    parts += [f"<small class=grown>&#9650; {_attr(growth_text(growth, base))}</small>"] if growth else []
    parts += [f"<small class=slower>&#9660; {_attr(slowdown_text(slowdown, base))}</small>"] if slowdown else []
    return (
        f'<td class="cell o-{cell.outcome}"{colspan} style="background:{bg};color:{fg}" '
        f'title="{_attr(title)}">{"".join(parts)}</td>'
    )


def _detail(row: FeatureRow) -> str:  # a workload row's signature and call count, under its name
    return f"<br><code>{_attr(row.issue.detail)}</code>" if row.issue and row.issue.detail else ""


def _unselected(span: int) -> str:
    colspan = f" colspan={span}" if span > 1 else ""
    return f'<td class="cell missing"{colspan} title="this run selected a subset">{NOT_SELECTED}</td>'


def _issue_link(row: FeatureRow) -> str:
    """A known-issues row links its public report (seen on, fixed in as the link's title)."""
    if not row.issue or not row.issue.issue or not row.issue.issue.get("url"):
        return ""
    url = str(row.issue.issue["url"])
    title = _attr(row.issue.issue_text())
    if web_url(url) is None:  # javascript:, data: ... never become a link; the text shows what it was
        return f' <span class=issue title="{title}">(issue: {_attr(url[:200])}, not an http(s) link)</span>'
    return f' <a class=issue href="{_attr(url)}" title="{title}">{_attr(issue_name(url))}</a>'


#: the dtype sub-columns of a row without dtypes: its one result spans them all
_ONLY_COLUMN = (NO_DTYPE,)


def _rows_table(table: Table, rows: list[FeatureRow], table_id: str = "") -> str:
    dtypes = suite_dtypes(rows)
    base = table.labels[0] if table.labels else ""
    top = "".join(f"<th colspan={len(dtypes)}>{_attr(table.column(label))}</th>" for label in table.labels)
    sub = "".join(f"<th>{short_dtype(d) if d else 'result'}</th>" for _ in table.labels for d in dtypes)
    out = [
        f"<table{f' id={table_id}' if table_id else ''} class=compat><thead>"
        f"<tr><th rowspan=2>feature</th>{top}<th rowspan=2>status</th></tr><tr>{sub}</tr></thead><tbody>"
    ]
    labels, subsets = table.labels, table.selections
    for row in rows:
        cells, outcomes = [], set()
        by_dtype, growth, slowdown = row.by_dtype, row.growth, row.slowdown
        marked = growth or slowdown
        only_one = len(by_dtype) == 1 and NO_DTYPE in by_dtype
        span = len(dtypes) if only_one else 1
        for label in labels:
            for dtype in _ONLY_COLUMN if only_one else dtypes:
                r = by_dtype.get(dtype)
                cell = r.cells.get(label) if r else None
                if cell is None:
                    cells.append(_unselected(span) if label in subsets else _cell(None, None, base, span))
                    continue
                outcomes.add(cell.outcome)
                if not marked and cell.outcome in GOOD:  # _cell's common case, without its call
                    cells.append(_passed_cell(cell.outcome, cell.figure(), span))
                    continue
                cells.append(
                    _cell(
                        cell,
                        growth.get((label, dtype)) if growth else None,
                        base,
                        span,
                        slowdown.get((label, dtype)) if slowdown else None,
                        table.sources.get(label, ""),
                    )
                )
        colour = STATUS_COLOURS["broken" if marked else row.status]
        links = f"{_issue_link(row)}{_detail(row)}" if row.issue else ""  # both are "" without it
        out.append(  # the feature's name escaped afresh: each is on one row, a cache would only fill
            f'<tr class=row data-suite="{_escaped(row.suite)}" data-outcomes="{" ".join(sorted(outcomes))}">'
            f"<td>{escape(row.feature, quote=True)}{links}</td>{''.join(cells)}"
            f'<td class=status style="color:{colour}">{_escaped(row.status_text if marked else row.status)}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def _filters(table: Table) -> str:
    boxes = "".join(
        f'<label><input type=checkbox name=outcome value="{o}" checked>'
        f'<span class=swatch style="background:{COLOURS[o][0]}"></span>{o}</label>'
        for o in OUTCOMES
    )
    options = "".join(f'<option value="{_attr(s)}">{_attr(s)}</option>' for s in sorted({r.suite for r in table.rows}))
    return (
        f"<div id=filters><span>Outcome:</span>{boxes}"
        f'<label>Suite: <select id=suite-filter><option value="">all suites</option>{options}</select></label>'
        f"<span id=shown-count></span></div>"
    )


def op_errors(table: Table, label: str) -> dict[str, dict[str, float]]:
    """Per operation (feature without its parameters) the worst fp16 and bf16 error in a column."""
    ops: dict[str, dict[str, float]] = {}
    for row in table.rows:
        cell = row.cells.get(label)
        if cell is None or not cell.errors:  # most rows of a large table: no figure to chart
            continue
        errors, op = cell.errors, None
        for dtype in DTYPE_COLOURS:
            value = errors.get(dtype)
            if value is None:
                continue
            if op is None:
                op = ops.setdefault(row.feature.split("[", 1)[0], {})
            worst = op.get(dtype)
            # the worst figure, NaN the worst of all (as the table's cells rank them): max() kept
            # a NaN only when it came first, so a NaN after a finite figure vanished from the chart
            if worst is None or value > worst or (value != value and worst == worst):
                op[dtype] = value
    return ops


#: the chart's geometry: pixels per label character (12 px text), the log plot's width, one bar
CHAR_PX, PLOT_W, BAR_H, GAP = 7.2, 440, 10, 8
#: the chart's log axis spans at most 1e-30..1e30; a figure beyond sits at the edge, its text exact
AXIS_DECADES = 30


def chart_svg(ops: dict[str, dict[str, float]], title: str) -> str:
    """A horizontal bar chart on a log scale, one pair of bars (fp16, bf16) per operation; the
    left margin fits the longest operation name, so no label is cut."""
    finite = [v for d in ops.values() for v in d.values() if math.isfinite(v) and v > 0]
    # the axis in whole decades, clamped to 1e-30..1e30 before 10.0**decade is taken: 1.7e308
    # rounds up to 1e309 (OverflowError) and 5e-324 down to 1e-324 == 0.0 (log10: domain error)
    lo = math.floor(math.log10(min(finite))) if finite else -8
    lo = min(max(lo, -AXIS_DECADES), AXIS_DECADES - 1)
    hi = max(math.ceil(math.log10(max(finite))) if finite else 0, lo + 1)
    hi = min(hi, AXIS_DECADES)
    left = round(max((len(op) for op in ops), default=10) * CHAR_PX) + 12
    height = 30 + len(ops) * (2 * BAR_H + GAP) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + PLOT_W + 130}" height="{height}" role="img" aria-label="{_attr(title)}">'
    ]

    def x_of(value: float) -> float:
        return left + PLOT_W * (min(max(math.log10(value), lo), hi) - lo) / (hi - lo)

    for decade in range(lo, hi + 1):
        x = x_of(10.0**decade)
        parts.append(
            f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{height - 24}" stroke="#ddd"/>'
            f'<text x="{x:.1f}" y="{height - 8}" font-size="11" text-anchor="middle">1e{decade}</text>'
        )
    y = 24
    for op, values in ops.items():
        parts.append(f'<text x="{left - 6}" y="{y + BAR_H + 3}" font-size="12" text-anchor="end">{_attr(op)}</text>')
        for dtype, colour in DTYPE_COLOURS.items():
            value = values.get(dtype)
            if value is not None:
                short = short_dtype(dtype)
                width = PLOT_W if not math.isfinite(value) else max(x_of(value) - left, 1.0) if value > 0 else 0.0
                text = f"{value:.1e}" if math.isfinite(value) else "non-finite"
                parts.append(
                    f'<rect x="{left}" y="{y}" width="{width:.1f}" height="{BAR_H - 1}" fill="{colour}">'
                    f"<title>{_attr(op)} {short}: {text}</title></rect>"
                    f'<text x="{left + width + 4:.1f}" y="{y + BAR_H - 1}" font-size="10">{short} {text}</text>'
                )
            y += BAR_H
        y += GAP
    legend = "".join(
        f'<rect x="{left + i * 70}" y="4" width="10" height="10" fill="{c}"/><text x="{left + i * 70 + 14}" y="13" font-size="11">{short_dtype(d)}</text>'
        for i, (d, c) in enumerate(DTYPE_COLOURS.items())
    )
    parts.append(legend + "</svg>")
    return "".join(parts)


def _charts(table: Table) -> str:
    out = [
        "<p id=charts-note class=hidden>The charts show every row: clear the filter to see them.</p>"
        "<div id=charts-block><h2>fp16 vs bf16 error per operation</h2>"
        "<p>Worst recorded error per operation (normwise relative, else elementwise max relative), log scale.</p>"
        "<section id=charts>"
    ]
    for i, label in enumerate(table.labels):  # the first column open, the others one click away
        ops = op_errors(table, label)
        body = chart_svg(ops, f"fp16 vs bf16 errors, {label}") if ops else "<p>no fp16/bf16 parity figures recorded</p>"
        out.append(
            f"<details{' open' if i == 0 else ''}><summary>{_attr(table.column(label))}</summary>"
            f"<figure>{body}</figure></details>"
        )
    out.append("</section>")
    perf = table_chart_svg(table)  # table/perf_chart.py: throughput relative to each row's best column
    if perf:
        title = (
            "Throughput per row, against the device's peak"
            if len(table.labels) == 1
            else "Throughput per row, relative to its best column"
        )
        out.append(f"<h2>{title}</h2><section id=perf-chart>{perf}</section>")
    out.append("</div>")
    return "".join(out)


def render_html(table: Table) -> str:
    chosen = sections(table)
    rows, differ, failing = chosen.rows, chosen.differ, chosen.failing
    shown = []
    if differ:
        shown.append(
            f"<section class=rows-block><h2>Differences between columns ({len(differ)})</h2>"
            f"{_rows_table(table, differ, 'differences')}</section>"
        )
    if failing:
        shown.append(
            f"<section class=rows-block><h2>Failures ({len(failing)})</h2>{_rows_table(table, failing, 'failures')}</section>"
        )
    every = []
    for suite, members in chosen.by_suite.items():
        every.append(
            f'<details data-suite="{_attr(suite)}"><summary>{_attr(suite or "(no suite)")}: {len(members)} features</summary>'
            f"{_rows_table(table, members)}</details>"
        )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>pytest-rocm compatibility table</title><style>{CSS}</style></head><body>"
        f"<h1>Compatibility table</h1>{_banners(table)}{_environments(table)}"
        f"<div id=glance><section id=summary-block><h2>Summary</h2>{_summary(table, rows, len(differ))}</section>"
        f"{speed_block_html(table)}</div>"
        f"<h2>Results</h2><p id=legend>{_attr(LEGEND)}</p>{_filters(table)}{''.join(shown)}{_charts(table)}"
        f"<h2>All results</h2><section id=all-rows>{''.join(every)}</section>"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
