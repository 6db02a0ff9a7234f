"""The compatibility table as one self-contained HTML page (no network: inline CSS, JS and SVG).

What a reader gets: the environment of each column, a colour per outcome, the reason on hover,
filters by outcome and suite, and per column a chart of fp16 vs bf16 errors per operation.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from pytest_rocm.parity.tolerances import LOW_PRECISION_DTYPES, short_dtype
from pytest_rocm.report.outcomes import OUTCOMES
from pytest_rocm.report.table import STATUSES, Row, Table, environment_line, issue_name

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
STATUS_COLOURS = {"works everywhere": "#2e7d32", "partial": "#ef6c00", "broken": "#c62828", "untested": "#757575"}
#: the charted dtypes (the low-precision ones) and their bars' colours
DTYPE_COLOURS = dict(zip(LOW_PRECISION_DTYPES, ("#1f77b4", "#ff7f0e"), strict=True))

CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222}
h1{font-size:22px;margin:0 0 12px}h2{font-size:17px;margin:24px 0 8px}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
thead th{background:#f5f5f5;position:sticky;top:0}
td.cell{white-space:nowrap;font-weight:600}td.cell small{display:block;font-weight:400;font-family:monospace}
td.missing{color:#999}td.status{font-weight:600}
#filters{display:flex;flex-wrap:wrap;gap:12px 20px;align-items:center;margin:12px 0;padding:8px;background:#fafafa;border:1px solid #e0e0e0}
#filters label{white-space:nowrap}.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:3px}
.suite-head td{background:#eceff1;font-weight:700}.hidden{display:none}
.note{color:#b71c1c}figure{margin:8px 0 16px}figcaption{font-weight:600}
"""

SCRIPT = """
(function(){
  var boxes=document.querySelectorAll('input[name=outcome]');
  var suite=document.getElementById('suite-filter');
  function apply(){
    var on={};boxes.forEach(function(b){on[b.value]=b.checked;});
    var shown=0,seen={};
    document.querySelectorAll('tr.row').forEach(function(tr){
      var outs=tr.dataset.outcomes.split(' ').filter(Boolean);
      var ok=(!suite.value||tr.dataset.suite===suite.value)&&outs.some(function(o){return on[o];});
      tr.classList.toggle('hidden',!ok);if(ok){shown++;seen[tr.dataset.suite]=1;}
    });
    document.querySelectorAll('tr.suite-head').forEach(function(tr){tr.classList.toggle('hidden',!seen[tr.dataset.suite]);});
    document.getElementById('shown-count').textContent=shown+' of '+document.querySelectorAll('tr.row').length+' rows shown';
  }
  // a link can carry a filter: table.html#outcome=failed,crashed&suite=operators
  var want={};location.hash.replace(/^#/,'').split('&').forEach(function(kv){
    var i=kv.indexOf('=');if(i>0)want[kv.slice(0,i)]=decodeURIComponent(kv.slice(i+1));});
  if(want.outcome){var keep=want.outcome.split(',');boxes.forEach(function(b){b.checked=keep.indexOf(b.value)>=0;});}
  if(want.suite){suite.value=want.suite;}
  boxes.forEach(function(b){b.addEventListener('change',apply);});
  suite.addEventListener('change',apply);apply();
})();
"""


def _issue_link(row: Row) -> str:
    """A known-issues row links its public report (seen on, fixed in as the link's title)."""
    if not row.issue or not row.issue.get("url"):
        return ""
    url = str(row.issue["url"])
    return f' <a class=issue href="{_attr(url)}" title="{_attr(row.issue_text())}">{_attr(issue_name(url))}</a>'


def _attr(text: Any) -> str:
    return escape(str(text), quote=True)


def _environments(table: Table) -> str:
    rows = []
    for label in table.labels:
        env = table.environments[label]
        note = ' <span class="note">interrupted run: partial results</span>' if label in table.interrupted else ""
        warning = table.accelerator_warning(label)
        note += f' <span class="note">warning: {_attr(warning)}</span>' if warning else ""
        source = table.sources.get(label, "")
        rows.append(
            f"<tr><th>{_attr(table.column(label))}</th><td>{_attr(environment_line(env))}{note}</td><td>{_attr(source)}</td></tr>"
        )
    return (
        "<table class=envs><thead><tr><th>column</th><th>environment</th><th>report</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _filters(table: Table) -> str:
    boxes = []
    for outcome in OUTCOMES:
        bg, _ = COLOURS[outcome]
        boxes.append(
            f'<label><input type=checkbox name=outcome value="{outcome}" checked>'
            f'<span class=swatch style="background:{bg}"></span>{outcome}</label>'
        )
    suites = sorted({r.suite for r in table.rows})
    options = "".join(f'<option value="{_attr(s)}">{_attr(s)}</option>' for s in suites)
    return (
        f"<div id=filters><span>Outcome:</span>{''.join(boxes)}"
        f'<label>Suite: <select id=suite-filter><option value="">all suites</option>{options}</select></label>'
        f"<span id=shown-count></span></div>"
    )


def _main_table(table: Table) -> str:
    width = len(table.labels) + 2
    head = "".join(
        f'<th title="{_attr(environment_line(table.environments[label]))}">{_attr(table.column(label))}</th>'
        for label in table.labels
    )
    out = [f"<table id=compat><thead><tr><th>feature</th>{head}<th>status</th></tr></thead><tbody>"]
    suite = None
    for row in table.rows:
        if row.suite != suite:
            suite = row.suite
            out.append(
                f'<tr class=suite-head data-suite="{_attr(suite)}"><td colspan={width}>{_attr(suite or "(no suite)")}</td></tr>'
            )
        cells, outcomes = [], []
        for cell in row.cells.values():
            if cell is None:
                cells.append('<td class="cell missing" title="not run in this environment">—</td>')
                continue
            outcomes.append(cell.outcome)
            bg, fg = COLOURS[cell.outcome]
            figure = f"<small>{_attr(cell.figure())}</small>" if cell.errors else ""
            title = cell.reason or cell.outcome
            cells.append(
                f'<td class="cell o-{cell.outcome}" style="background:{bg};color:{fg}" title="{_attr(title)}">{cell.outcome}{figure}</td>'
            )
        colour = STATUS_COLOURS[row.status]
        out.append(
            f'<tr class=row data-suite="{_attr(row.suite)}" data-outcomes="{" ".join(sorted(set(outcomes)))}">'
            f"<td>{_attr(row.feature)}{_issue_link(row)}</td>{''.join(cells)}"
            f'<td class=status style="color:{colour}">{row.status}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def op_errors(table: Table, label: str) -> dict[str, dict[str, float]]:
    """Per operation (feature without its parameters) the worst fp16 and bf16 error in a column."""
    ops: dict[str, dict[str, float]] = {}
    for row in table.rows:
        cell = row.cells.get(label)
        if cell is None:
            continue
        for dtype in DTYPE_COLOURS:
            if dtype in cell.errors:
                op = ops.setdefault(row.feature.split("[", 1)[0], {})
                op[dtype] = max(op.get(dtype, cell.errors[dtype]), cell.errors[dtype])
    return ops


def chart_svg(ops: dict[str, dict[str, float]], title: str) -> str:
    """A horizontal bar chart on a log scale, one pair of bars (fp16, bf16) per operation."""
    finite = [v for d in ops.values() for v in d.values() if math.isfinite(v) and v > 0]
    lo = math.floor(math.log10(min(finite))) if finite else -8
    hi = max(math.ceil(math.log10(max(finite))) if finite else 0, lo + 1)
    left, plot_w, bar_h, gap = 230, 440, 10, 8
    height = 30 + len(ops) * (2 * bar_h + gap) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + plot_w + 90}" height="{height}" role="img" aria-label="{_attr(title)}">'
    ]

    def x_of(value: float) -> float:
        return left + plot_w * (min(max(math.log10(value), lo), hi) - lo) / (hi - lo)

    for decade in range(lo, hi + 1):
        x = x_of(10.0**decade)
        parts.append(
            f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{height - 24}" stroke="#ddd"/>'
            f'<text x="{x:.1f}" y="{height - 8}" font-size="11" text-anchor="middle">1e{decade}</text>'
        )
    y = 24
    for op, values in ops.items():
        parts.append(f'<text x="{left - 6}" y="{y + bar_h + 3}" font-size="12" text-anchor="end">{_attr(op)}</text>')
        for dtype, colour in DTYPE_COLOURS.items():
            value = values.get(dtype)
            if value is not None:
                short = short_dtype(dtype)
                width = plot_w if not math.isfinite(value) else max(x_of(value) - left, 1.0) if value > 0 else 0.0
                text = f"{value:.1e}" if math.isfinite(value) else "non-finite"
                parts.append(
                    f'<rect x="{left}" y="{y}" width="{width:.1f}" height="{bar_h - 1}" fill="{colour}">'
                    f"<title>{_attr(op)} {short}: {text}</title></rect>"
                    f'<text x="{left + width + 4:.1f}" y="{y + bar_h - 1}" font-size="10">{short} {text}</text>'
                )
            y += bar_h
        y += gap
    legend = "".join(
        f'<rect x="{left + i * 70}" y="4" width="10" height="10" fill="{c}"/><text x="{left + i * 70 + 14}" y="13" font-size="11">{short_dtype(d)}</text>'
        for i, (d, c) in enumerate(DTYPE_COLOURS.items())
    )
    parts.append(legend + "</svg>")
    return "".join(parts)


def _charts(table: Table) -> str:
    out = [
        "<section id=charts><h2>fp16 vs bf16 error per operation</h2>"
        "<p>Worst recorded error per operation (normwise relative, else elementwise max relative), log scale.</p>"
    ]
    for label in table.labels:
        ops = op_errors(table, label)
        body = chart_svg(ops, f"fp16 vs bf16 errors, {label}") if ops else "<p>no fp16/bf16 parity figures recorded</p>"
        out.append(f"<figure><figcaption>{_attr(label)}</figcaption>{body}</figure>")
    out.append("</section>")
    return "".join(out)


def render_html(table: Table) -> str:
    counts = ", ".join(f"{sum(1 for r in table.rows if r.status == s)} {s}" for s in STATUSES)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>pytest-rocm compatibility table</title><style>{CSS}</style></head><body>"
        f"<h1>Compatibility table</h1><p id=row-summary>{len(table.rows)} features: {counts}</p>"
        f"<h2>Environments</h2>{_environments(table)}<h2>Results</h2>{_filters(table)}{_main_table(table)}"
        f"{_charts(table)}<script>{SCRIPT}</script></body></html>\n"
    )
