"""``rocm-compat setup [suites|test|all]``: install the torch build for this machine, then the
extras, into the running interpreter's environment (``sys.executable -m pip``).

A working torch that fits this machine is kept; one that does not fit is named with the fix and
replaced only with ``--replace-torch``. Exit status: 0 done, 1 refused or impossible (said why),
2 bad input. ``--dry-run`` and ``--env`` (a recording of another machine) print the plan: no pip
runs and no index is contacted. The rules: docs/install.md.
"""

from __future__ import annotations

import argparse
import sys

from pytest_rocm.cli.argtypes import path_text
from pytest_rocm.env.model import Environment, EnvironmentFileError
from pytest_rocm.setup.apply import Options, setup
from pytest_rocm.setup.plan import TARGETS


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        nargs="?",
        default="suites",
        choices=sorted(TARGETS),
        help="what to set up: suites (rocm-compat run), test (the plugin's own tests), all (default: suites)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the pip commands: run none, contact no index")
    parser.add_argument(
        "--replace-torch",
        action="store_true",
        help="uninstall a torch that does not fit this machine and install the one that does",
    )
    parser.add_argument(
        "--index-url", metavar="URL", type=_index_url, help="take torch from this index instead of this machine's"
    )
    parser.add_argument(
        "--env",
        metavar="FILE",
        type=path_text,
        help="plan as for a recorded environment (rocm-compat env --json) instead of this machine: "
        "the commands for that machine are printed, none is run here",
    )


def _index_url(text: str) -> str:
    """An http(s) or file URL with nothing hidden in it (a space was an InvalidURL traceback)."""
    from pytest_rocm.matrix.grammar import url_problem

    problem = url_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{text!r} {problem}")
    return text


def say(line: str) -> None:
    print(line, flush=True)  # before pip's own output, which goes straight to the terminal


def run(args: argparse.Namespace, seam: object | None = None) -> int:
    from pytest_rocm.doctor.model import Extras
    from pytest_rocm.doctor.probe import probe_extras
    from pytest_rocm.env.seam import Seam, SysrootError

    try:
        machine = seam if seam is not None else Seam()
        if args.env:
            env = Environment.load(args.env)
        else:
            from pytest_rocm.env.detect import detect_environment

            env = detect_environment(machine)  # type: ignore[arg-type]
    except (EnvironmentFileError, SysrootError) as exc:
        print(f"rocm-compat setup: {exc}", file=sys.stderr)
        return 2
    # a recording describes another machine: its PCI bus and driver files are not this one's
    extras = Extras() if args.env else probe_extras(machine, env)
    options = Options(
        target=args.target,
        dry_run=args.dry_run,
        replace_torch=args.replace_torch,
        index_url=args.index_url,
        python=sys.executable,
        # a recording describes another machine: its companions and torch are not this one's, so
        # what fits it is printed, never installed here
        recorded=bool(args.env),
    )
    return setup(env, extras, options, machine, say)
