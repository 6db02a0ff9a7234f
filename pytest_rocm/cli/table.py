"""``rocm-compat table REPORT...``: merge reports into one table (md, csv, html)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_rocm.cli.argtypes import path_text, positive_int
from pytest_rocm.env.textfile import collector_paused
from pytest_rocm.report.escape import terminal
from pytest_rocm.report.files import UnsafeTarget, write_text_atomic
from pytest_rocm.report.load import TABLE_BOUNDS, Bounds, ReportError, load_reports
from pytest_rocm.table.boundary_map import coverage_map
from pytest_rocm.table.formats import FORMATS, render
from pytest_rocm.table.model import build_table


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
    add_bounds_arguments(parser)


def add_bounds_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-rows`` and ``--max-report-mb``: the bounds of a command that holds every row at once."""
    parser.add_argument(
        "--max-rows",
        type=positive_int("the row limit"),
        default=TABLE_BOUNDS.max_rows,
        metavar="N",
        help=f"refuse more rows than this, all reports together (default {TABLE_BOUNDS.max_rows}; "
        "memory grows with the rows)",
    )
    parser.add_argument(
        "--max-report-mb",
        type=positive_int("the size limit"),
        default=TABLE_BOUNDS.max_bytes // (1024 * 1024),
        metavar="N",
        help=f"refuse a report larger than N MiB, before reading it (default {TABLE_BOUNDS.max_bytes // (1024 * 1024)})",
    )


def bounds_of(args: argparse.Namespace) -> Bounds:
    return Bounds(max_bytes=args.max_report_mb * 1024 * 1024, max_rows=args.max_rows)


def _format_of(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    suffix = Path(args.output).suffix.lower() if args.output else ""
    return {".csv": "csv", ".html": "html", ".htm": "html"}.get(suffix, "md")


def write_output(text: str, output: str | None) -> None:
    """Write to FILE or stdout; an unwritable FILE is a ReportError naming it."""
    if not output or output == "-":
        sys.stdout.write(terminal(text))  # a report's escape sequences never reach the terminal
        return
    path = Path(output)
    try:  # atomically, and only over a regular file: never into a FIFO (a hang) or a device
        write_text_atomic(path, text)
    except UnsafeTarget as exc:
        raise ReportError(str(exc)) from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot write ({exc.strerror or exc})") from None


def run(args: argparse.Namespace) -> int:
    try:
        # parsed reports, rows, cells and markup: many objects and no cycles. Paused throughout and
        # freed (by their counts) before it resumes, the collector never walks them: resumed after
        # each step, it walked everything that step made (the first allocation after gc.enable()
        # collects the youngest generation, which held all of it)
        with collector_paused():
            reports = load_reports(args.reports, bounds_of(args))
            table = build_table(reports, [str(p) for p in args.reports])
            text = render(table, _format_of(args), coverage_map(reports))
            write_output(text, args.output)
            del reports, table, text
    except ReportError as exc:
        print(f"rocm-compat table: {exc}", file=sys.stderr)
        return 2
    return 0
