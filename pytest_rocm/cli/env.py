"""``rocm-compat env``: detect this machine's environment and print it (or its JSON).

    rocm-compat env                 a readable summary, the doctor's problems last
    rocm-compat env --json          the environment JSON (schema pytest-rocm/environment/1)
    rocm-compat env -o FILE         also write the JSON to FILE (for ``pytest --rocm-env FILE``)
    rocm-compat env --env FILE      summarise a recorded environment instead of detecting

Exit status: 0, or 2 for bad input (a bad PYTEST_ROCM_SYSROOT, an unwritable -o path, an
unreadable --env file), reported as one line on stderr.
"""

from __future__ import annotations

import argparse
import sys

from pytest_rocm.cli.argtypes import path_text
from pytest_rocm.env.model import Environment, EnvironmentFileError
from pytest_rocm.env.render import format_summary

EXIT_OK = 0
EXIT_USAGE = 2


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the environment as JSON")
    parser.add_argument("-o", "--output", metavar="FILE", type=path_text, help="write the environment JSON to FILE")
    parser.add_argument(
        "--env",
        metavar="FILE",
        dest="env_file",
        type=path_text,
        help="summarise a recorded environment instead of detecting",
    )


def _fail(message: str) -> int:
    print(f"rocm-compat env: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    # detect lazily: this module is imported for --help too
    from pytest_rocm.doctor.checks import problem_lines
    from pytest_rocm.doctor.probe import diagnose_machine
    from pytest_rocm.env.seam import SysrootError

    try:
        recorded = Environment.load(args.env_file) if args.env_file else None
        diagnosis = diagnose_machine(recorded, recorded=recorded is not None)
    except (EnvironmentFileError, SysrootError) as exc:
        return _fail(str(exc))
    env = diagnosis.env
    text = env.to_json()
    if args.output:
        from pytest_rocm.report.files import UnsafeTarget, write_text_atomic

        try:  # atomically, and only over a regular file: never into a FIFO (a hang) or a device
            write_text_atomic(args.output, text + "\n")
        except UnsafeTarget as exc:
            return _fail(f"cannot write {exc}")
        except OSError as exc:
            return _fail(f"cannot write {args.output}: {exc.strerror or exc}")
    if args.json:
        if not args.output:
            print(text)
    else:
        print(format_summary(env, problem_lines(diagnosis.checks)))
        if args.output:
            print(f"wrote {args.output}")
    return EXIT_OK
