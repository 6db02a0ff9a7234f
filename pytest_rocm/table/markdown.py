"""The compatibility table as Markdown: the summary first (per suite and column), the rows that
differ between columns, the failures, then every row in a collapsed ``<details>`` per suite.

The speed block (``table.speed``) follows the summary. One row per feature, the dtypes as
sub-columns (``label fp16``, ``label bf16``); a passed cell says its outcome, its parity figure with
the tolerance, its perf figure, and a grown error or a slowdown; any other cell says what happened
in one line (``table.oneline``) and links its note in "Failure details" (the whole reason and
every figure).
"""

from __future__ import annotations

from pytest_rocm.parity.tolerances import short_dtype
from pytest_rocm.report.escape import markdown_cell, markdown_pre, markdown_url, web_url
from pytest_rocm.report.outcomes import SUMMARY
from pytest_rocm.report.selection import empty_cell_text
from pytest_rocm.table.grid import (
    LEGEND,
    NO_DTYPE,
    FeatureRow,
    cell_text,
    cpu_baselines,
    needs_note,
    sections,
    status_counts,
    suite_dtypes,
    summary,
)
from pytest_rocm.table.model import Cell, Table, environment_line
from pytest_rocm.table.oneline import failure_lines
from pytest_rocm.table.speed import speed_block


def _esc(text: str) -> str:
    return markdown_cell(text)


def _issue(text: str, url: str) -> str:
    """A known issue's note: a link only to an http(s) URL (encoded, so it stays one cell)."""
    words = _esc(text).replace("[", "\\[").replace("]", "\\]")
    if web_url(url) is None:
        return f" ({words}: {_esc(url[:200])}, not an http(s) link)"
    return f" ([{words}]({markdown_url(url)}))"


class Notes:
    """The "Failure details" section: each cell whose one line leaves something out gets one
    numbered note (the same cell shown twice, under Failures and All results, keeps its number)."""

    def __init__(self) -> None:
        self.numbers: dict[tuple[str, str, str], int] = {}
        self.entries: list[tuple[str, str, Cell]] = []

    def ref(self, feature: str, label: str, dtype: str, cell: Cell) -> str:
        key = (feature, label, dtype)
        if key not in self.numbers:
            self.numbers[key] = len(self.entries) + 1
            self.entries.append((feature if not dtype else f"{feature} {short_dtype(dtype)}", label, cell))
        n = self.numbers[key]
        return f" [note {n}](#note-{n})"

    def section(self, table: Table) -> list[str]:
        if not self.entries:
            return []
        out = ["", f"## Failure details ({len(self.entries)})", ""]
        for n, (feature, label, cell) in enumerate(self.entries, 1):
            out += [
                f'<a id="note-{n}"></a>**note {n}**: `{_esc(feature)}` in {_esc(table.column(label))}: {cell.outcome}',
                "",
            ]
            # what failed, from the records (whole in the report: the reason may be cut), then the reason
            reason = (cell.reason or "").removeprefix("Skipped: ")
            body = "\n".join(p for p in (*failure_lines(cell.failed), reason, cell.figure()) if p)
            out += [markdown_pre(body), ""]
        return out[:-1]


def _rows_table(table: Table, rows: list[FeatureRow], notes: Notes) -> list[str]:
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
                if cell is None:
                    cells.append(empty_cell_text(label, table.selections))
                    continue
                text = _esc(cell_text(cell, row.growth.get(key), base, slowdown=row.slowdown.get(key)))
                cells.append(text + (notes.ref(row.feature, label, dtype, cell) if needs_note(cell) else ""))
        feature = _esc(row.feature)
        if row.issue and row.issue.issue:
            feature += _issue(row.issue.issue_text(), str(row.issue.issue.get("url") or ""))
        if row.issue and row.issue.detail:
            feature += f": `{_esc(row.issue.detail)}`"
        out.append(f"| {feature} | " + " | ".join(cells) + f" | {_esc(row.status_text)} |")
    return out


def _speed(table: Table) -> list[str]:
    """The speed block (``table.speed``) as a table: per headline row and column the figure."""
    block = speed_block(table)
    if block is None:
        return []
    what = block.note or "% of peak: of the device's published peak, data/peaks.json, where known"
    out = ["", "## Speed", "", f"Throughput of the headline rows, one unit per group ({what}).", ""]
    out.append("| measured | " + " | ".join(_esc(table.column(label)) for label in table.labels) + " |")
    out.append("|---" * (len(table.labels) + 1) + "|")
    for entry in block.entries:
        cells = []
        for label in table.labels:
            figure = entry.figures.get(label)
            cells.append(_esc(figure.text()) if figure else _esc(entry.missing.get(label, "")))
        out.append(f"| {_esc(entry.title)} | " + " | ".join(cells) + " |")
    if block.more:
        out += ["", f"{block.more} more measured operations: see the rows below."]
    return out


def render_markdown(table: Table) -> str:
    chosen = sections(table)
    rows, differ, failing = chosen.rows, chosen.differ, chosen.failing
    notes = Notes()
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
    out += _speed(table)
    if differ:
        out += ["", f"## Differences between columns ({len(differ)})", "", *_rows_table(table, differ, notes)]
    if failing:
        out += ["", f"## Failures ({len(failing)})", "", *_rows_table(table, failing, notes)]
    out += ["", "## All results", "", LEGEND]
    for suite, members in chosen.by_suite.items():
        out += ["", f"<details><summary>{_esc(suite or '(no suite)')}: {len(members)} features</summary>", ""]
        out += [*_rows_table(table, members, notes), "", "</details>"]
    out += notes.section(table)
    return "\n".join(out) + "\n"
