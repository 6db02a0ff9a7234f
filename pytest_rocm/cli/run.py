"""``rocm-compat run [PYTEST_ARGS]``: the main job.

Runs the bundled suites in this environment with crash and hang isolation on (pytest-xdist
workers replaced when they die, pytest-timeout ending hangs), writes ``reports/<label>.json``
and the table of it (Markdown and HTML), and prints where they are. With no accelerator it says
so loudly and runs the suites on the CPU as a reference baseline; ``--require-gpu`` makes that an
error. Arguments it does not know go to pytest (``-k matmul``, ``-n 8``, ``--timeout 300``).
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_rocm._resources import bundled_suites
from pytest_rocm.env.model import Environment, has_accelerator
from pytest_rocm.plugin import xdist as isolation
from pytest_rocm.report.load import ReportError, load_report
from pytest_rocm.report.records import default_label, sidecar_path, slug

#: pytest exit statuses that still mean "the report is a measurement" (all ran; some failed)
MEASURED = (0, 1)


def detect() -> Environment:
    from pytest_rocm.env.detect import detect_environment

    return detect_environment()


def no_accelerator_banner(env: Environment) -> str:
    why = env.torch_error or (
        f"torch {env.torch} ({env.backend} build) sees no GPU" if env.torch else "torch is not installed"
    )
    kernel = [g.gfx or "unknown gfx" for g in env.system.gpus]
    seen = f"; the kernel reports {len(kernel)} AMD GPU(s): {', '.join(kernel)}" if kernel else ""
    bar = "!" * 78
    return "\n".join(
        [
            bar,
            f"!! NO ACCELERATOR: {why}{seen}.",
            "!! Running the suites on the CPU as a REFERENCE BASELINE (--rocm-device=cpu):",
            "!! these results say nothing about a GPU. `rocm-compat doctor` explains why none was found;",
            "!! `rocm-compat run --require-gpu` makes this an error.",
            bar,
        ]
    )


def pytest_command(suites: Path, report: Path, label: str, on_cpu: bool, user_args: Sequence[str]) -> list[str]:
    have_xdist = importlib.util.find_spec("xdist") is not None
    have_timeout = importlib.util.find_spec("pytest_timeout") is not None
    command = [
        sys.executable,
        "-m",
        "pytest",
        str(suites),
        "--rootdir",
        str(suites),
        "-p",
        "no:cacheprovider",
        "--rocm-report",
        str(report),
        "--rocm-label",
        label,
    ]
    ini = suites / "pytest.ini"
    if ini.is_file():
        command += ["-c", str(ini)]
    command += isolation.isolation_args(user_args, have_xdist, have_timeout)
    if on_cpu and not any(a.startswith("--rocm-device") for a in user_args):
        command.append("--rocm-device=cpu")
    return command + list(user_args)


def write_tables(report_path: Path, document: dict[str, Any]) -> list[Path]:
    from pytest_rocm.report.table import build_table, render, write_output

    table = build_table([document], [str(report_path)])
    written = []
    for fmt, suffix in (("md", ".md"), ("html", ".html")):
        target = report_path.with_suffix(suffix)
        write_output(render(table, fmt), str(target))
        written.append(target)
    return written


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--require-gpu", action="store_true", help="no accelerator is an error (exit 2), not a CPU baseline"
    )
    parser.add_argument("--label", help="the report's column label (default: backend, torch, rocm, gfx)")
    parser.add_argument("--reports-dir", default="reports", metavar="DIR", help="where to write (default: reports)")
    parser.add_argument("--suites", metavar="DIR", help="suites folder (default: the bundled suites)")
    parser.epilog = "Other arguments go to pytest, e.g. `rocm-compat run -k matmul -n 8` (or after --)."
    parser.allow_abbrev = False  # a pytest option must never be taken for an abbreviation of ours


#: cli.py passes arguments this command does not know through as ``args.passthrough``
PASSES_UNKNOWN_ARGS = True


def run(args: argparse.Namespace) -> int:
    user_args: list[str] = list(args.passthrough)
    suites = Path(args.suites) if args.suites else bundled_suites()
    if not suites.is_dir():
        print(f"rocm-compat run: {suites}: no suites folder there", file=sys.stderr)
        return 2
    env = detect()
    on_cpu = not has_accelerator(env)
    if on_cpu and args.require_gpu:
        why = env.torch_error or f"backend {env.backend}, {len(env.devices)} device(s)"
        print(f"rocm-compat run: no accelerator found ({why}) and --require-gpu was given", file=sys.stderr)
        return 2
    if on_cpu:
        print(no_accelerator_banner(env), file=sys.stderr, flush=True)
    label = args.label or default_label(env, "cpu" if on_cpu else None)
    reports_dir = Path(args.reports_dir)
    try:
        reports_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"rocm-compat run: {reports_dir}: cannot create ({exc.strerror})", file=sys.stderr)
        return 2
    report_path = reports_dir / f"{slug(label)}.json"
    command = pytest_command(suites, report_path, label, on_cpu, user_args)
    print("rocm-compat run: " + " ".join(command[2:]), flush=True)
    for stale in (report_path, sidecar_path(report_path)):  # an earlier run's must not pass for this one's
        stale.unlink(missing_ok=True)
    status = subprocess.call(command)
    source = report_path if report_path.exists() else sidecar_path(report_path)
    try:
        document = load_report(source)
        tables = write_tables(report_path, document)
    except ReportError as exc:
        print(f"rocm-compat run: pytest exited {status} without a usable report: {exc}", file=sys.stderr)
        return 2
    summary = document["summary"]
    counts = ", ".join(f"{n} {k}" for k, n in summary.items() if n and k != "total")
    print(f"\nrocm-compat run: {label}: {summary['total']} results ({counts or 'none'})")
    print(f"  report: {source}" + ("  (interrupted run: partial)" if source != report_path else ""))
    for table in tables:
        print(f"  table:  {table}")
    print(f"  merge with others: rocm-compat table {reports_dir}/*.json -o table.html")
    if status in MEASURED:
        return status
    print(f"rocm-compat run: pytest exited {status} (interrupted or a usage error)", file=sys.stderr)
    return 2
