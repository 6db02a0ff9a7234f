"""The compatibility table in each output format: ``render(table, "md" | "csv" | "html")``.

Its own module so that the table (``report.table``) and the HTML page (``report.html``, which
builds on the table) import in one direction only: this one imports both.
"""

from __future__ import annotations

from pytest_rocm.report.html import render_html
from pytest_rocm.report.markdown import render_markdown
from pytest_rocm.report.table import Table, render_csv

#: what ``rocm-compat table --format`` offers (the default: md)
FORMATS: tuple[str, ...] = ("md", "csv", "html")


def render(table: Table, fmt: str) -> str:
    """The table as Markdown (the default), CSV or one self-contained HTML page."""
    if fmt == "csv":
        return render_csv(table)
    if fmt == "html":
        return render_html(table)
    return render_markdown(table)
