"""``rocm-compat table REPORT...``: merge reports into one table (md, csv, html)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_rocm.cli.argtypes import path_text
from pytest_rocm.env.textfile import collector_paused
from pytest_rocm.report.coverage import coverage_map
from pytest_rocm.report.formats import FORMATS, render
from pytest_rocm.report.load import ReportError, load_reports
from pytest_rocm.report.table import build_table, write_output


# -- command line -----------------------------------------------------------------------------
def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "reports",
        nargs="+",
        metavar="REPORT",
        type=path_text,
        help="report JSON files (or the .partial.jsonl sidecar of an interrupted run)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="output format (default: from -o's suffix, else md)",
    )
    parser.add_argument("-o", "--output", metavar="FILE", type=path_text, help="write here instead of stdout")


def _format_of(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    suffix = Path(args.output).suffix.lower() if args.output else ""
    return {".csv": "csv", ".html": "html", ".htm": "html"}.get(suffix, "md")


def run(args: argparse.Namespace) -> int:
    try:
        # parsed reports, rows, cells and markup: many objects and no cycles. Paused throughout and
        # freed (by their counts) before it resumes, the collector never walks them: resumed after
        # each step, it walked everything that step made (the first allocation after gc.enable()
        # collects the youngest generation, which held all of it)
        with collector_paused():
            reports = load_reports(args.reports)
            table = build_table(reports, [str(p) for p in args.reports])
            text = render(table, _format_of(args), coverage_map(reports))
            write_output(text, args.output)
            del reports, table, text
    except ReportError as exc:
        print(f"rocm-compat table: {exc}", file=sys.stderr)
        return 2
    return 0
