"""``rocm-compat doctor``: diagnose a broken ROCm/PyTorch setup and say how to fix it.

Exit status: 0 no failing check, 1 a failing check, 2 bad input. ``--knowledge-age``: 1 when a
bundled fact names no source. ``--explain``/``--explain-file``: 0 when a known error was found,
1 when none was.
"""

from __future__ import annotations

import argparse
import json
import sys

from pytest_rocm.cli.argtypes import path_text
from pytest_rocm.doctor.render import errors_table, render_text
from pytest_rocm.env.model import Environment, EnvironmentFileError
from pytest_rocm.report.escape import terminal_line


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.add_argument(
        "--env",
        metavar="FILE",
        type=path_text,
        help="diagnose a recorded environment (rocm-compat env --json) instead of this machine",
    )
    parser.add_argument(
        "--ollama-log",
        metavar="FILE",
        type=path_text,
        help="read Ollama's server log (journalctl -u ollama, ~/.ollama/logs/server.log) for its GPU discovery",
    )
    parser.add_argument(
        "--knowledge-age",
        action="store_true",
        help="list the bundled facts last dated more than a year ago, the undated ones and any without a source",
    )
    parser.add_argument(
        "--errors-table",
        action="store_true",
        help="print the table of known errors and the check that catches each (Markdown)",
    )
    parser.add_argument(
        "--explain",
        metavar="TEXT",
        help="say which known error a pasted line (or lines) is: its cause and the fixes for its gfx and ROCm",
    )
    parser.add_argument(
        "--explain-file",
        metavar="LOG",
        type=path_text,
        help="the same for every line of a log file (a traceback, journalctl output, a server log)",
    )
    parser.add_argument(
        "--gfx", metavar="GFX", help="with --explain: the GPU's gfx, when the text does not name it (gfx1031)"
    )
    parser.add_argument(
        "--rocm", metavar="X.Y", help="with --explain: the ROCm release, when the text does not name it (6.2)"
    )


class LogFileError(ValueError):
    """An --ollama-log that cannot be read as text."""


def read_log(path: str) -> str:
    """The text of an Ollama server log (a regular UTF-8 file: a FIFO never blocks the doctor);
    LogFileError names the option, the file and what is wrong."""
    from pytest_rocm.env.textfile import UserFileError, read_text

    try:
        text = read_text(path, "server log")
    except UserFileError as exc:
        raise LogFileError(f"--ollama-log {exc}") from None
    if "\0" in text:
        raise LogFileError(f"--ollama-log {path}: not a text file (a NUL byte at offset {text.index(chr(0))})")
    return text


def _explain(args: argparse.Namespace) -> int:
    from packaging.version import InvalidVersion, Version

    from pytest_rocm.doctor.explain import explain, rocm_in
    from pytest_rocm.doctor.explain_render import render, to_dicts
    from pytest_rocm.env import arch
    from pytest_rocm.env.textfile import UserFileError, read_text

    try:
        if args.gfx is not None and not arch.is_gfx(args.gfx.strip().lower()):
            raise ValueError(f"--gfx {args.gfx!r} is not a gfx name (gfx1031, gfx90a)")
        if args.rocm is not None:
            Version(args.rocm)
        # a log from Windows need not be UTF-8: a byte that is not is replaced, the lines still read
        text = read_text(args.explain_file, "log", errors="replace") if args.explain_file else args.explain
    except (ValueError, InvalidVersion, UserFileError) as exc:
        message = f"--rocm {args.rocm!r} is not a version (6.2)" if isinstance(exc, InvalidVersion) else str(exc)
        print(f"rocm-compat doctor: {terminal_line(message)}", file=sys.stderr)
        return 2
    gfx = args.gfx.strip().lower() if args.gfx else None
    rocm = args.rocm or rocm_in(text)
    findings = explain(text, gfx=gfx, rocm=rocm)
    lines = len(text.splitlines())
    if args.json:
        print(json.dumps({"lines": lines, "explained": to_dicts(findings, rocm)}, indent=2))
    else:
        print(render(findings, lines, rocm))
    return 0 if findings else 1


def run(args: argparse.Namespace) -> int:
    if args.explain is not None or args.explain_file is not None:
        return _explain(args)
    if args.gfx is not None or args.rocm is not None:
        print("rocm-compat doctor: --gfx and --rocm go with --explain or --explain-file", file=sys.stderr)
        return 2
    if args.errors_table:
        print(errors_table())
        return 0
    if args.knowledge_age:
        import datetime as dt

        from pytest_rocm.doctor.sources import audit, render_age

        entries, unsourced = audit()
        print(render_age(entries, unsourced, dt.datetime.now(dt.timezone.utc).date()))
        return 1 if unsourced else 0
    from pytest_rocm.doctor.probe import diagnose_machine
    from pytest_rocm.env.seam import Seam, SysrootError

    try:
        seam = Seam()  # checks PYTEST_ROCM_SYSROOT: a bad one is bad input, with --env too
        recorded = Environment.load(args.env) if args.env else None
        log = (read_log(args.ollama_log), str(args.ollama_log)) if args.ollama_log else None
        # was this torch build published: PyTorch's index answers when it can be reached (here
        # only: the pytest header never waits on a network), the bundled snapshot when not
        checks = diagnose_machine(
            recorded, recorded=recorded is not None, seam=seam, ask_index=True, ollama=recorded is None, ollama_log=log
        ).checks
    except (EnvironmentFileError, SysrootError, LogFileError) as exc:
        print(f"rocm-compat doctor: {terminal_line(str(exc))}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"checks": [c.to_dict() for c in checks]}, indent=2))
    else:
        print(render_text(checks, str(args.env) if args.env else None))
    return 1 if any(c.status == "fail" for c in checks) else 0
