"""``rocm-compat vet TARGET``: scan a library for CUDA-only code, judge it, optionally check it live.
``rocm-compat vet --installed`` / ``-r FILE [--wheels DIR]``: the same for a whole stack, as one table."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_rocm.cli.argtypes import non_negative_int, positive_float
from pytest_rocm.vet import BadTarget, vet
from pytest_rocm.vet.contained import DEFAULT_MEMORY_GIB

if TYPE_CHECKING:
    from pytest_rocm.report.records import ResultRecord

EXIT_OK, EXIT_CLASS_4, EXIT_USAGE = 0, 1, 2
#: a stack with a row that could not be vetted ("?"): incomplete, not safe (``--allow-unvetted``)
EXIT_INCOMPLETE = 3


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="TARGET",
        nargs="?",
        help="an installed distribution name, a wheel, an sdist (.tar.gz/.zip) or a source folder",
    )
    stack = parser.add_argument_group(
        "a whole stack (one table; exit 1 when any package is class 4, 3 when a package could not be vetted)"
    )
    stack.add_argument("--installed", action="store_true", help="vet every distribution installed here")
    stack.add_argument(
        "-r",
        "--requirements",
        metavar="FILE",
        help="vet every dependency of a requirements.txt, pyproject.toml, uv.lock or pylock.toml",
    )
    stack.add_argument("--wheels", metavar="DIR", help="with -r: take a dependency's wheel from this folder")
    stack.add_argument(
        "--allow-unvetted",
        action="store_true",
        help="exit 0, not 3, when some packages could not be vetted (no wheel, not installed, refused)",
    )
    stack.add_argument("--gpu", action="append", metavar="GFX", help="compare with this gfx, not this machine's GPUs")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--markdown", action="store_true", help="print the stack table as Markdown")
    parser.add_argument(
        "--run",
        action="store_true",
        help="also run the live check here: import in a separate process, then the "
        "library suite when pytest-rocm has one",
    )
    parser.add_argument(
        "--unsafe-run",
        action="store_true",
        help="with --run where no sandbox (bubblewrap) can run: run TARGET's code without one, "
        "with your files, home and environment",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float("the time limit in seconds"),
        default=120.0,
        metavar="S",
        help="seconds the import may take before it counts as a hang (default 120)",
    )
    parser.add_argument(
        "--suite-timeout",
        type=positive_float("the time limit in seconds"),
        default=1800.0,
        metavar="S",
        help="seconds the library suite may take (default 1800)",
    )
    parser.add_argument(
        "--memory-limit",
        type=positive_float("the memory limit in GiB"),
        default=DEFAULT_MEMORY_GIB,
        metavar="GIB",
        help=f"with --run: the memory each child process may allocate (RLIMIT_DATA; default {DEFAULT_MEMORY_GIB:g} GiB)",
    )
    parser.add_argument(
        "--device", metavar="DEV", help="--rocm-device for the library suite (default: cpu when no accelerator)"
    )
    parser.add_argument(
        "--allow-network", action="store_true", help="with --run: leave the network on for the child processes"
    )
    parser.add_argument(
        "--report", metavar="FILE", help="with --run: write the live records as a pytest-rocm/report/1 file"
    )
    parser.add_argument(
        "--show",
        type=non_negative_int("the count"),
        default=3,
        metavar="N",
        help="examples shown per rule in the text output (default 3)",
    )


def _write_report(path: str, records: list[ResultRecord]) -> None:
    from pytest_rocm.env.detect import detect_environment
    from pytest_rocm.report.files import write_json
    from pytest_rocm.report.fleet import machine_record, tool_record
    from pytest_rocm.report.records import assemble, default_label

    env = detect_environment()
    environment = env.to_dict()
    # which machine and which pytest-rocm, as the plugin's reports say: a fleet's atlas or table
    # then warns of mixed tool versions only where the versions differ
    document = assemble(
        default_label(env), environment, records, machine=machine_record(environment), tool=tool_record()
    )
    # write_json refuses anything but a regular file and renames a unique temporary file into
    # place: a FIFO, a device or FILE.tmp/FILE.probe next to it are never replaced or deleted
    write_json(Path(path), document)


def _problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the options, said before any work (a live check may take half an hour)."""
    stack = args.installed or args.requirements
    if args.wheels and not args.requirements:
        return "--wheels DIR needs -r FILE (the dependencies to look for in it)"
    if stack and args.target is not None:
        return "give a TARGET or --installed / -r FILE, not both"
    if not stack and args.target is None:
        return "give a TARGET (a distribution, a wheel, an sdist or a folder), --installed or -r FILE"
    if args.unsafe_run and not args.run:
        return "--unsafe-run needs --run (it is how the live check runs)"
    if args.allow_unvetted and not stack:
        return "--allow-unvetted is for a stack (--installed / -r FILE)"
    if stack and (args.run or args.report):
        return "--run and --report vet one TARGET at a time"
    if args.run and not args.unsafe_run:
        from pytest_rocm.vet import contained

        why = contained.sandbox_problem()
        if why:
            return (
                f"--run runs TARGET's code in a sandbox, and none can run here: {why}; --unsafe-run runs it without one"
            )
    if not args.report:
        return None
    if not args.run:
        return f"--report {args.report} needs --run (the report holds the live check's records)"
    from pytest_rocm.report.files import unwritable

    why = unwritable(Path(args.report))
    return f"{args.report}: cannot write ({why})" if why else None


def _print(text: str) -> None:
    from pytest_rocm.report.escape import terminal

    try:  # the vetted package's own output (its error lines, names) never drives the terminal
        print(terminal(text), flush=True)
    except BrokenPipeError:  # `rocm-compat vet X | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _sandbox_works() -> bool:
    """With ``--unsafe-run``: the sandbox is still used when it can run (the option allows its absence)."""
    from pytest_rocm.vet import contained

    return contained.sandbox_problem() is None


def _vet_document(spec: str) -> dict[str, Any]:
    from pytest_rocm.vet.render import document

    target, result, verdict = vet(spec)
    return document(target, result, verdict, None)


def _run_stack(args: argparse.Namespace) -> int:
    from pytest_rocm.vet.gpu_fit import torch_rocm
    from pytest_rocm.vet.render import stack_table
    from pytest_rocm.vet.stack import installed_pins, machine_gpus, read_stack, vet_stack, wheel_index

    pins, skipped = (installed_pins(), []) if args.installed else read_stack(Path(args.requirements))
    wheels = wheel_index(Path(args.wheels) if args.wheels else None)
    gpus = sorted(set(args.gpu)) if args.gpu else machine_gpus()
    gpus_from = "--gpu" if args.gpu else "this machine"
    doc = vet_stack(pins, wheels, _vet_document, gpus, torch_rocm(), skipped, gpus_from)
    _print(json.dumps(doc, indent=2) if args.json else stack_table(doc, markdown=args.markdown))
    return _stack_status(doc, args.allow_unvetted)


def _stack_status(doc: dict[str, Any], allow_unvetted: bool) -> int:
    """1 on a class-4 package; else 3 when a row was not vetted or vetted from a partial read,
    or no row at all (said on stderr), unless allowed."""
    from pytest_rocm.vet.stack import unvetted_summary

    if doc["class_4"]:
        return EXIT_CLASS_4
    incomplete = unvetted_summary(doc)
    if incomplete is None:
        return EXIT_OK
    if allow_unvetted:
        print(f"rocm-compat vet: {incomplete} (allowed: --allow-unvetted)", file=sys.stderr)
        return EXIT_OK
    print(f"rocm-compat vet: incomplete, exit 3: {incomplete} (--allow-unvetted to accept)", file=sys.stderr)
    return EXIT_INCOMPLETE


def run(args: argparse.Namespace) -> int:
    from pytest_rocm.vet.live import live_check
    from pytest_rocm.vet.render import document, text

    problem = _problem(args)
    if problem:
        print(f"rocm-compat vet: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.installed or args.requirements:
            return _run_stack(args)
        target, result, verdict = vet(args.target)
    except BadTarget as exc:
        print(f"rocm-compat vet: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"rocm-compat vet: {args.target}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    live = None
    if args.run:
        folder = Path(target.root) if target.origin == "folder" else None
        live = live_check(
            target.name,
            target.top_level,
            timeout=args.timeout,
            suite_timeout=args.suite_timeout,
            device=args.device,
            source=folder,
            source_version=target.version,
            offline=not args.allow_network,
            sandbox=not args.unsafe_run or _sandbox_works(),
            memory_gib=args.memory_limit,
        )
        if args.report:
            try:
                _write_report(args.report, live["records"])
            except OSError as exc:  # UnsafeTarget (a FIFO appeared meanwhile) says why in its text
                print(f"rocm-compat vet: {args.report}: cannot write ({exc.strerror or exc})", file=sys.stderr)
                return EXIT_USAGE
    doc = document(target, result, verdict, live)
    _print(json.dumps(doc, indent=2) if args.json else text(doc, args.show))
    return EXIT_OK
