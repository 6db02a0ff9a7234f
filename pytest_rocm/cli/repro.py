"""``rocm-compat repro REPORT [ROW ...] -o DIR``: a standalone reproducer (needs only torch) per
failed parity check, and ``ISSUE.md`` beside them (``pytest_rocm.repro``, docs/report.md).

Exit status: 0 every selected row has a script; 1 some row could not be rebuilt (each listed with
why); 2 bad input (an unreadable report, an output directory that cannot be written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_rocm.cli.argtypes import path_text
from pytest_rocm.env.textfile import collector_paused
from pytest_rocm.report.escape import terminal
from pytest_rocm.report.load import ReportError, load_report
from pytest_rocm.repro.issue import issue_text
from pytest_rocm.repro.write import plan


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "report", metavar="REPORT", type=path_text, help="the report (--rocm-report) of the failing run"
    )
    parser.add_argument(
        "rows", metavar="ROW", nargs="*", help="node ids of the rows (default: every failed parity row)"
    )
    parser.add_argument("-o", "--output", metavar="DIR", type=path_text, required=True, help="where the scripts go")
    parser.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        default="cuda",
        help="where each script runs the op by default (cuda: the GPU, ROCm's too; cpu: checks the script itself)",
    )
    parser.add_argument(
        "--keep-paths", action="store_true", help="keep the machine's paths in ISSUE.md (default: written <path>)"
    )


def run(args: argparse.Namespace) -> int:
    with collector_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        report = load_report(args.report)
    except ReportError as exc:
        print(f"rocm-compat repro: {exc}", file=sys.stderr)
        return 2
    built = plan(report, args.rows, args.device)
    out = Path(args.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for script in built.scripts:
            (out / script.file).write_text(script.source, encoding="utf-8")
        (out / "ISSUE.md").write_text(issue_text(report, built, args.keep_paths, args.device), encoding="utf-8")
    except OSError as exc:
        print(f"rocm-compat repro: {args.output}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    flag = "" if args.device == "cuda" else f" --device {args.device}"
    for script in built.scripts:
        print(terminal(f"{script.nodeid}: python {out / script.file}{flag}"))
    for refused in built.refused:
        print(terminal(f"{refused.nodeid}: not reproduced: {refused.why}"))
    if not built.scripts and not built.refused:
        print("no failed parity check in the report: nothing to reproduce")
    print(f"wrote {len(built.scripts)} script(s) and {out / 'ISSUE.md'}")
    return 1 if built.refused else 0
