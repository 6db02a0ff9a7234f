"""``rocm-compat diff BASE CANDIDATE``: the upgrade gate (exit 1 on a regression, 3 when the speed
gate was asked for and nothing was measured in both reports)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from pytest_rocm.cli.argtypes import non_negative_float, path_text, positive_float
from pytest_rocm.cli.table import add_bounds_arguments, bounds_of
from pytest_rocm.env.textfile import collector_paused
from pytest_rocm.report.diff import DEFAULT_FACTOR, DEFAULT_FLOOR, compare, verdict
from pytest_rocm.report.diff_text import SHOW_LIMIT, render_text
from pytest_rocm.report.escape import terminal
from pytest_rocm.report.load import ReportError, load_bounded
from pytest_rocm.report.perf import DEFAULT_MAX_SLOWDOWN
from pytest_rocm.report.records import jsonable
from pytest_rocm.table.repro_link import reproducer_lines, reproducible_failures


def at_least_one(text: str) -> float:
    """``--max-slowdown``: a finite number >= 1 (below 1 every unchanged row would be slower)."""
    value = positive_float("the slowdown")(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: the slowdown must be at least 1 (1.25: 25 % slower)")
    return value


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", metavar="BASE", type=path_text, help="report of the environment in use today")
    parser.add_argument("candidate", metavar="CANDIDATE", type=path_text, help="report of the environment to adopt")
    parser.add_argument(
        "--factor",
        type=positive_float("the factor"),
        default=DEFAULT_FACTOR,
        help=f"a parity error counts as grown above this multiple of BASE's (default {DEFAULT_FACTOR:g})",
    )
    parser.add_argument(
        "--floor",
        type=non_negative_float("the floor"),
        default=DEFAULT_FLOOR,
        help=f"BASE errors below this count as this (default {DEFAULT_FLOOR:g}), so exact results do not make noise",
    )
    parser.add_argument(
        "--allow-new-failures",
        action="store_true",
        help="do not fail on tests new in CANDIDATE that failed, errored, crashed or hung there",
    )
    parser.add_argument("--fail-on-new-skips", action="store_true", help="exit 1 on new skips too")
    parser.add_argument("--fail-on-grown-errors", action="store_true", help="exit 1 on grown parity errors too")
    parser.add_argument(
        "--max-slowdown",
        type=at_least_one,
        default=DEFAULT_MAX_SLOWDOWN,
        metavar="X",
        help=f"a measured row (results[*].perf) counts as slower above X times BASE's time (default"
        f" {DEFAULT_MAX_SLOWDOWN:g}); a change within the recorded spread is 'noisy', not a slowdown",
    )
    parser.add_argument(
        "--fail-on-slowdown",
        action="store_true",
        help="exit 1 on slowdowns too (the speed gate); exit 3 when no row was measured in both reports",
    )
    parser.add_argument(
        "--strict-selection",
        action="store_true",
        help="compare every test even where one report ran a subset (-k, -m, node ids): a test the"
        " subset did not select counts as missing",
    )
    parser.add_argument(
        "--show-all",
        action="store_true",
        help=f"list every entry of each section (default: the first {SHOW_LIMIT}, then how many more)",
    )
    parser.add_argument("--json", action="store_true", help="print the differences as JSON")
    add_bounds_arguments(parser)


def run(args: argparse.Namespace) -> int:
    with collector_paused():  # as `table`: the collector never walks the parsed reports (no cycles)
        status = _run(args)
    return status


def _run(args: argparse.Namespace) -> int:
    try:
        base, candidate = load_bounded([args.base, args.candidate], bounds_of(args))
    except ReportError as exc:
        print(f"rocm-compat diff: {exc}", file=sys.stderr)
        return 2
    diff = compare(base, candidate, args.factor, args.floor, args.max_slowdown, args.strict_selection)
    status = verdict(
        diff, args.fail_on_new_skips, args.fail_on_grown_errors, args.fail_on_slowdown, args.allow_new_failures
    )
    # each regression and new failure a standalone script can rebuild, with the command that writes it
    repro = reproducible_failures([*diff.regressions, *diff.new_failures], candidate)
    if args.json:
        document = {"base": base["label"], "candidate": candidate["label"], "exit": status, **jsonable(asdict(diff))}
        print(json.dumps(document | {"reproducible": repro}, indent=1))
    else:
        limit = None if args.show_all else SHOW_LIMIT
        text = render_text(diff, base["label"], candidate["label"], args.factor, args.max_slowdown, limit)
        if repro:
            text += "\n".join(reproducer_lines(repro, args.candidate)) + "\n"
        sys.stdout.write(terminal(text))  # a report's escape sequences never reach the terminal
        print("verdict: " + ("FAIL" if status else "ok"))
    return status
