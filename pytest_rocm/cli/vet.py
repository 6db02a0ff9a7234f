"""``rocm-compat vet TARGET``: scan a library for CUDA-only code, judge it, optionally check it live."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_rocm.vet import BadTarget, vet

if TYPE_CHECKING:
    from pytest_rocm.report.records import ResultRecord

EXIT_OK, EXIT_USAGE = 0, 2


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="an installed distribution name, a wheel, an sdist (.tar.gz/.zip) or a source folder",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--run",
        action="store_true",
        help="also run the live check here: import in a separate process, then the "
        "library suite when pytest-rocm has one",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="seconds the import may take before it counts as a hang (default 120)",
    )
    parser.add_argument(
        "--suite-timeout",
        type=float,
        default=1800.0,
        metavar="S",
        help="seconds the library suite may take (default 1800)",
    )
    parser.add_argument(
        "--device", metavar="DEV", help="--rocm-device for the library suite (default: cpu when no accelerator)"
    )
    parser.add_argument(
        "--report", metavar="FILE", help="with --run: write the live records as a pytest-rocm/report/1 file"
    )
    parser.add_argument(
        "--show", type=int, default=3, metavar="N", help="examples shown per rule in the text output (default 3)"
    )


def _write_report(path: str, records: list[ResultRecord]) -> None:
    from pytest_rocm.env.detect import detect_environment
    from pytest_rocm.report.files import write_json
    from pytest_rocm.report.records import assemble, default_label

    env = detect_environment()
    write_json(Path(path), assemble(default_label(env), env.to_dict(), records))


def _report_problem(report: str | None, live: bool) -> str | None:
    if not report:
        return None
    if not live:
        return f"--report {report} needs --run (the report holds the live check's records)"
    from pytest_rocm.report.files import unwritable

    why = unwritable(Path(report))
    return f"{report}: cannot write ({why})" if why else None


def run(args: argparse.Namespace) -> int:
    from pytest_rocm.vet import live as live_mod
    from pytest_rocm.vet.render import document, text

    problem = _report_problem(args.report, args.run)
    if problem:  # said now, not after a live check that may take half an hour
        print(f"rocm-compat vet: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        target, result, verdict = vet(args.target)
    except BadTarget as exc:
        print(f"rocm-compat vet: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"rocm-compat vet: {args.target}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    live = None
    if args.run:
        live = live_mod.live_check(
            target.name, target.top_level, timeout=args.timeout, suite_timeout=args.suite_timeout, device=args.device
        )
        if args.report:
            try:
                _write_report(args.report, live["records"])
            except OSError as exc:
                print(f"rocm-compat vet: {args.report}: cannot write ({exc.strerror})", file=sys.stderr)
                return EXIT_USAGE
    doc = document(target, result, verdict, live)
    try:
        print(json.dumps(doc, indent=2) if args.json else text(doc, args.show), flush=True)
    except BrokenPipeError:  # `rocm-compat vet X | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK
