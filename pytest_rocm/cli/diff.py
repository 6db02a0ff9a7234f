"""``rocm-compat diff BASE CANDIDATE``: the upgrade gate (exit 1 on a regression)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from pytest_rocm.report.diff import (
    DEFAULT_FLOOR,
    compare,
    render_text,
    verdict,
)
from pytest_rocm.report.load import ReportError, load_report
from pytest_rocm.report.records import jsonable


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", metavar="BASE", help="report of the environment in use today")
    parser.add_argument("candidate", metavar="CANDIDATE", help="report of the environment to adopt")
    parser.add_argument(
        "--factor",
        type=float,
        default=10.0,
        help="a parity error counts as grown above this multiple of BASE's (default 10)",
    )
    parser.add_argument(
        "--floor",
        type=float,
        default=DEFAULT_FLOOR,
        help=f"BASE errors below this count as this (default {DEFAULT_FLOOR:g}), so exact results do not make noise",
    )
    parser.add_argument("--fail-on-new-skips", action="store_true", help="exit 1 on new skips too")
    parser.add_argument("--fail-on-grown-errors", action="store_true", help="exit 1 on grown parity errors too")
    parser.add_argument("--json", action="store_true", help="print the differences as JSON")


def run(args: argparse.Namespace) -> int:
    if not args.factor > 0:
        print(f"rocm-compat diff: --factor must be positive, got {args.factor:g}", file=sys.stderr)
        return 2
    try:
        base, candidate = load_report(args.base), load_report(args.candidate)
    except ReportError as exc:
        print(f"rocm-compat diff: {exc}", file=sys.stderr)
        return 2
    diff = compare(base, candidate, args.factor, args.floor)
    status = verdict(diff, args.fail_on_new_skips, args.fail_on_grown_errors)
    if args.json:
        print(
            json.dumps(
                {"base": base["label"], "candidate": candidate["label"], "exit": status, **jsonable(asdict(diff))},
                indent=1,
            )
        )
    else:
        sys.stdout.write(render_text(diff, base["label"], candidate["label"], args.factor))
        print("verdict: " + ("FAIL" if status else "ok"))
    return status
