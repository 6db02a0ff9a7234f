"""``rocm-compat capture -o FILE -- CMD [ARGS]``: record the distinct aten op calls of a program.

The command runs as given (``python train.py --epochs 1``) with capture on; the file
(``pytest-rocm/workload/1``, docs/workload.md) is written even when the command fails, and the
command's exit status is this command's. ``pytest --rocm-workload=FILE`` replays it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_rocm.cli.argtypes import path_text


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, type=path_text, metavar="FILE", help="the workload file")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD", help="the program to run")
    parser.epilog = "Example: rocm-compat capture -o ops.json -- python train.py --steps 1"


def run(args: argparse.Namespace) -> int:
    from pytest_rocm.workload.child import run_captured, summary

    command = [a for a in args.command]
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print("rocm-compat capture: no command given (rocm-compat capture -o FILE -- CMD ...)", file=sys.stderr)
        return 2
    outcome = run_captured(command, Path(args.output))
    if outcome.document is None:
        print(f"rocm-compat capture: {args.output}: {outcome.problem}", file=sys.stderr)
        return outcome.status or 2
    count, calls, reasons = summary(outcome.document)
    print(f"rocm-compat capture: {args.output}: {count} signatures from {calls} op calls")
    for reason, n in sorted(reasons.items()):
        print(f"  not replayable ({n}): {reason}")
    if outcome.status:
        print(
            f"rocm-compat capture: the command exited {outcome.status}; {args.output} holds the ops it ran until then",
            file=sys.stderr,
        )
    return outcome.status
