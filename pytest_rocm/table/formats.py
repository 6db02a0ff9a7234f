"""The compatibility table in each output format: ``render(table, "md" | "csv" | "html")``.

Its own module so that the table (``table.model``) and the HTML page (``table.html``, which
builds on the table) import in one direction only: this one imports both.
"""

from __future__ import annotations

from pytest_rocm.table.boundary_map import CoverageMap, html_section, markdown_section
from pytest_rocm.table.html import render_html
from pytest_rocm.table.markdown import render_markdown
from pytest_rocm.table.model import Table, render_csv

#: what ``rocm-compat table --format`` offers (the default: md)
FORMATS: tuple[str, ...] = ("md", "csv", "html")


def render(table: Table, fmt: str, coverage: CoverageMap | None = None) -> str:
    """The table as Markdown (the default), CSV or one self-contained HTML page; ``coverage``
    (``table.boundary_map.coverage_map``) adds its section at the end of the Markdown and before the
    HTML page's script (CSV: one table per file, so not there)."""
    if fmt == "csv":
        return render_csv(table)
    if fmt == "html":
        page = render_html(table)
        if coverage is None:
            return page
        head, script, tail = page.rpartition("<script>")
        return head + html_section(coverage) + script + tail if script else page
    text = render_markdown(table)
    return text + "\n".join(markdown_section(coverage)) + "\n" if coverage is not None else text
