"""``rocm-compat capture -o FILE -- CMD [ARGS]``: record the distinct aten op calls of a program.

The command runs as given (``python train.py --epochs 1``) with capture on; the file
(``pytest-rocm/workload/1``, docs/workload.md) is written even when the command fails, and the
command's exit status is this command's. ``pytest --rocm-workload=FILE`` replays it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pytest_rocm.cli.argtypes import path_text


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, type=path_text, metavar="FILE", help="the workload file")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD", help="the program to run")
    parser.epilog = "Example: rocm-compat capture -o ops.json -- python train.py --steps 1"


def output_problem(output: Path) -> str | None:
    """Why the capture could not be written to ``output``, or None: checked before the program runs."""
    if output.is_dir():
        return "is a folder; name the file to write (-o folder/ops.json)"
    for parent in output.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is not a folder"
            if not os.access(parent, os.W_OK):
                return f"cannot write into {parent}"
            return None
    return None


def run(args: argparse.Namespace) -> int:
    from pytest_rocm.workload.command import run_captured, summary

    command = [a for a in args.command]
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print("rocm-compat capture: no command given (rocm-compat capture -o FILE -- CMD ...)", file=sys.stderr)
        return 2
    problem = output_problem(Path(args.output))
    if problem:  # found before the program runs, not after it ran for an hour
        print(f"rocm-compat capture: -o {args.output}: {problem}", file=sys.stderr)
        return 2
    outcome = run_captured(command, Path(args.output))
    if outcome.document is None:
        print(f"rocm-compat capture: {args.output}: {outcome.problem}", file=sys.stderr)
        return outcome.status or 2
    count, calls, reasons = summary(outcome.document)
    print(f"rocm-compat capture: {args.output}: {count} signatures from {calls} op calls")
    for reason, n in sorted(reasons.items()):
        print(f"  not replayable ({n}): {reason}")
    graphs = outcome.document.get("compiled_graphs") or 0
    if graphs:
        print(
            f"  torch.compile compiled {graphs} graph(s) while capturing: recorded are the aten ops the "
            "compiled code calls; kernels its backend generated (inductor's fused ones) are not aten ops"
        )
    if outcome.status:
        print(
            f"rocm-compat capture: the command exited {outcome.status}; {args.output} holds the ops it ran until then",
            file=sys.stderr,
        )
    return outcome.status
