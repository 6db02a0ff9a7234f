"""``rocm-compat``: the command line. Each subcommand lives in its own module, imported only
when it is the one asked for, so ``rocm-compat --help`` stays instant and never imports torch.

A subcommand module provides ``configure_parser(parser: argparse.ArgumentParser) -> None`` and
``run(args: argparse.Namespace) -> int``; one that sets ``PASSES_UNKNOWN_ARGS = True`` receives
the arguments it does not know as ``args.passthrough`` (``rocm-compat run -k matmul``). Exit statuses: 0 ok, 1 the command's own "no"
(a regression, a failing check), 2 bad input; ``diff --fail-on-slowdown`` exits 3 when it compared
no speed at all (docs/report.md).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from pytest_rocm import __version__

#: name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "env": ("pytest_rocm.cli.env", "detect and print this machine's environment"),
    "run": ("pytest_rocm.cli.run", "run the bundled suites here and write the report and table"),
    "table": ("pytest_rocm.cli.table", "merge reports into a compatibility table (md, csv, html)"),
    "diff": ("pytest_rocm.cli.diff", "compare two reports; exit 1 on a regression (upgrade gate)"),
    "repro": ("pytest_rocm.cli.repro", "write a standalone torch script and ISSUE.md per failed parity check"),
    "atlas": ("pytest_rocm.cli.atlas", "build a static site of many reports: many machines, many dates"),
    "matrix": ("pytest_rocm.cli.matrix", "list the ROCm/PyTorch combinations, or emit a CI job matrix"),
    "vet": ("pytest_rocm.cli.vet", "scan a library for CUDA-only code and judge it for ROCm"),
    "doctor": ("pytest_rocm.cli.doctor", "diagnose a broken ROCm/PyTorch setup and say how to fix it"),
    "setup": ("pytest_rocm.cli.setup", "install the torch build for this machine, then the extras"),
    "capture": ("pytest_rocm.cli.capture", "record the aten ops a program runs, for --rocm-workload"),
}

EXIT_USAGE = 2


def _top_parser() -> argparse.ArgumentParser:
    lines = "\n".join(f"  {name:<8} {help_}" for name, (_, help_) in COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="rocm-compat",
        description="pytest-rocm's command line.",
        epilog=f"commands:\n{lines}\n\nrocm-compat COMMAND --help shows a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pytest-rocm {__version__}")
    parser.add_argument("command", metavar="COMMAND", choices=sorted(COMMANDS), help=argparse.SUPPRESS)
    return parser


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose usage error is one line naming the argument and the value
    (``rocm-compat diff: argument --floor: '-1': the floor must be at least 0 (see --help)``),
    exit status 2, like every other bad input of rocm-compat."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_USAGE, f"{self.prog}: {' '.join(message.split())} (see {self.prog} --help)\n")


def parse_command(name: str, rest: Sequence[str]) -> tuple[Any, argparse.Namespace]:
    """Import the command's module and parse its arguments (argparse exits 2 on bad ones)."""
    module_name, help_ = COMMANDS[name]
    module = importlib.import_module(module_name)
    parser = OneLineParser(prog=f"rocm-compat {name}", description=help_)
    module.configure_parser(parser)
    if getattr(module, "PASSES_UNKNOWN_ARGS", False):
        # `rocm-compat run -k matmul -n 8`: what the command does not know goes to pytest
        args, unknown = parser.parse_known_args(list(rest))
        args.passthrough = [a for a in unknown if a != "--"]
    else:
        args = parser.parse_args(list(rest))
    return module, args


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top = _top_parser()
    if not argv or argv[0].startswith("-"):
        top.parse_args(argv or ["--help"])
        return EXIT_USAGE
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        top.error(f"unknown command {name!r} (choose from {', '.join(COMMANDS)})")
    try:
        module, args = parse_command(name, rest)
    except SystemExit as exc:  # argparse printed its one-line usage error (or --help): a status, not an exit
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return int(module.run(args))
    except KeyboardInterrupt:
        print("rocm-compat: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `rocm-compat matrix --emit json | head`: the reader left; not an error worth a traceback.
        # stdout goes to devnull so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # what a shell reports for SIGPIPE
