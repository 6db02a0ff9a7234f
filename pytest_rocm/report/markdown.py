"""The compatibility table as Markdown: the summary first (per suite and column), the rows that
differ between columns, the failures, then every row in a collapsed ``<details>`` per suite.

One row per feature, the dtypes as sub-columns (``label fp16``, ``label bf16``); each cell says its
outcome, its reason when it did not pass, its parity figure with the tolerance, its perf figure, and a grown error or a slowdown.
"""

from __future__ import annotations

from pytest_rocm.parity.tolerances import short_dtype
from pytest_rocm.report.escape import markdown_cell, markdown_url, web_url
from pytest_rocm.report.grid import (
    LEGEND,
    NO_DTYPE,
    FeatureRow,
    cell_text,
    cpu_baselines,
    sections,
    status_counts,
    suite_dtypes,
    summary,
)
from pytest_rocm.report.outcomes import SUMMARY
from pytest_rocm.report.selection import empty_cell_text
from pytest_rocm.report.table import Table, environment_line


def _esc(text: str) -> str:
    return markdown_cell(text)


def _issue(text: str, url: str) -> str:
    """A known issue's note: a link only to an http(s) URL (encoded, so it stays one cell)."""
    words = _esc(text).replace("[", "\\[").replace("]", "\\]")
    if web_url(url) is None:
        return f" ({words}: {_esc(url[:200])}, not an http(s) link)"
    return f" ([{words}]({markdown_url(url)}))"


def _rows_table(table: Table, rows: list[FeatureRow]) -> list[str]:
    dtypes = suite_dtypes(rows)
    heads = [f"{table.column(label)} {short_dtype(d) if d else 'result'}" for label in table.labels for d in dtypes]
    out = ["| feature | " + " | ".join(_esc(h) for h in heads) + " | status |", "|---" * (len(heads) + 2) + "|"]
    base = table.labels[0] if table.labels else ""
    for row in rows:
        cells = []
        for label in table.labels:
            for dtype in dtypes:
                r = row.by_dtype.get(dtype)
                cell = r.cells.get(label) if r else None
                if dtype == NO_DTYPE and cell is None and r is None:
                    cells.append("")
                    continue
                key = (label, dtype)
                cells.append(
                    _esc(cell_text(cell, row.growth.get(key), base, slowdown=row.slowdown.get(key)))
                    if cell
                    else empty_cell_text(label, table.selections)
                )
        feature = _esc(row.feature)
        if row.issue and row.issue.issue:
            feature += _issue(row.issue.issue_text(), str(row.issue.issue.get("url") or ""))
        if row.issue and row.issue.detail:
            feature += f": `{_esc(row.issue.detail)}`"
        out.append(f"| {feature} | " + " | ".join(cells) + f" | {_esc(row.status_text)} |")
    return out


def render_markdown(table: Table) -> str:
    chosen = sections(table)
    rows, differ, failing = chosen.rows, chosen.differ, chosen.failing
    out = ["# Compatibility table", ""]
    for label in cpu_baselines(table):
        out += [
            f"> **CPU reference baseline**: `{_esc(table.column(label))}` ran on the CPU: its results say "
            "nothing about a GPU.",
            "",
        ]
    for merge_note in table.notes:
        out += [f"> **Note**: {_esc(merge_note)}", ""]
    for label in table.labels:
        note = " (interrupted run: partial results)" if label in table.interrupted else ""
        warning = table.accelerator_warning(label)
        note += f" **warning: {warning}**" if warning else ""
        out.append(f"- **{_esc(table.column(label))}**: {_esc(environment_line(table.environments[label]))}{note}")
    counts = ", ".join(f"{n} {s}" for s, n in status_counts(rows).items())
    out += ["", "## Summary", "", f"Features: {len(rows)} ({counts}); {len(differ)} differ between columns.", ""]
    out.append("| suite | column | " + " | ".join(name for name, _ in SUMMARY) + " |")
    out.append("|---|---|" + "---:|" * len(SUMMARY))
    for suite, per_label in summary(table).items():
        for label, numbers in per_label.items():
            values = " | ".join(str(numbers[name]) for name, _ in SUMMARY)
            out.append(f"| {_esc(suite or '(no suite)')} | {_esc(table.column(label))} | {values} |")
    if differ:
        out += ["", f"## Differences between columns ({len(differ)})", "", *_rows_table(table, differ)]
    if failing:
        out += ["", f"## Failures ({len(failing)})", "", *_rows_table(table, failing)]
    out += ["", "## All results", "", LEGEND]
    for suite, members in chosen.by_suite.items():
        out += ["", f"<details><summary>{_esc(suite or '(no suite)')}: {len(members)} features</summary>", ""]
        out += [*_rows_table(table, members), "", "</details>"]
    return "\n".join(out) + "\n"
