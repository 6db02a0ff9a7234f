"""``rocm-compat run [PYTEST_ARGS]``: the main job.

Runs the bundled suites in this environment with crash and hang isolation on (pytest-xdist
workers replaced when they die, pytest-timeout ending hangs), writes ``reports/<label>.json``
and the table of it (Markdown and HTML), and prints where they are. With no accelerator it says
so loudly and runs the suites on the CPU as a reference baseline; ``--require-gpu`` makes that an
error. Arguments it does not know go to pytest (``-k matmul``, ``-n 8``, ``--timeout 300``).
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from pathlib import Path

from pytest_rocm._lifetime import run_supervised
from pytest_rocm._resources import bundled_suites
from pytest_rocm.cli.argtypes import label_text, path_text
from pytest_rocm.env.model import Environment, has_accelerator
from pytest_rocm.report.deaths import how_it_ended
from pytest_rocm.report.files import busy, remove_if_regular, sidecar_path
from pytest_rocm.report.load import ReportError, load_report
from pytest_rocm.report.records import ReportDocument, default_label, slug
from pytest_rocm.suite_command import suite_command
from pytest_rocm.workload.schema import workload_problem

#: pytest exit statuses that still mean "the report is a measurement" (all ran; some failed)
MEASURED = (0, 1)


def detect() -> Environment:
    from pytest_rocm.env.detect import detect_environment

    return detect_environment()


def no_torch_line(env: Environment) -> str:
    """One line instead of a run whose every test file fails to import torch (and an empty report)."""
    from pytest_rocm.doctor.probe import install_advice

    what = env.torch_error or "torch is not installed"
    return f"rocm-compat run: {what}; the build for this machine: {install_advice(env)}"


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
            "!! these results say nothing about a GPU. `rocm-compat doctor` says what this machine has;",
            "!! `rocm-compat run --require-gpu` makes this an error.",
            bar,
        ]
    )


def write_tables(report_path: Path, document: ReportDocument) -> list[Path]:
    from pytest_rocm.cli.table import write_output
    from pytest_rocm.table.boundary_map import coverage_map
    from pytest_rocm.table.formats import render
    from pytest_rocm.table.model import build_table

    table = build_table([document], [str(report_path)])
    written = []
    for fmt, suffix in (("md", ".md"), ("html", ".html")):
        target = report_path.with_suffix(suffix)
        write_output(render(table, fmt, coverage_map([document])), str(target))
        written.append(target)
    return written


def run_pytest(command: list[str]) -> int:
    """Run pytest supervised (``_lifetime.run_supervised``: signals passed on as pytest's own
    stop, a grace period, then SIGKILL); say when a signal came. The status is the signal's
    (128 + N) when one came."""
    done = run_supervised(command)
    if done.signal is not None:
        print(f"rocm-compat run: {signal.Signals(done.signal).name} passed on to pytest", file=sys.stderr)
    return done.status


def earlier_report(report_path: Path) -> str | None:
    """What an earlier run of this label left at ``report_path`` (its report, or the sidecar of an
    interrupted one), in words; None when nothing. A second run with the same label must not
    silently replace it: an upgrade that keeps the label would lose the gate's base."""
    sidecar = sidecar_path(report_path)
    for path in (report_path, sidecar):
        if not path.exists() and not path.is_symlink():
            continue
        what = "an interrupted earlier run of this label left its results" if path == sidecar else "a report exists"
        try:
            document = load_report(path)
        except ReportError:
            return f"{path}: {what} (not a readable report)"
        count = len(document["results"])
        when = document.get("created") or "at an unrecorded time"
        return f"{path}: {what} (created {when}, {count} {'result' if count == 1 else 'results'})"
    return None


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--require-gpu", action="store_true", help="no accelerator is an error (exit 2), not a CPU baseline"
    )
    parser.add_argument(
        "--label", type=label_text, help="the report's column label (default: backend, torch, rocm, gfx)"
    )
    parser.add_argument(
        "--reports-dir", default="reports", metavar="DIR", type=path_text, help="where to write (default: reports)"
    )
    parser.add_argument("--suites", metavar="DIR", type=path_text, help="suites folder (default: the bundled suites)")
    parser.add_argument(
        "--replace",
        action="store_true",
        help="replace the report an earlier run of this label left in --reports-dir (default: refuse, exit 2)",
    )
    parser.add_argument(
        "--workload",
        metavar="FILE",
        type=path_text,
        help="replay this capture (rocm-compat capture) instead of the suites",
    )
    parser.epilog = "Other arguments go to pytest, e.g. `rocm-compat run -k matmul -n 8` (or after --)."
    parser.allow_abbrev = False  # a pytest option must never be taken for an abbreviation of ours


#: cli.py passes arguments this command does not know through as ``args.passthrough``
PASSES_UNKNOWN_ARGS = True


def suite_root(folder: Path) -> tuple[Path, list[Path]]:
    """The rootdir and targets for ``--suites FOLDER``: a folder of suites runs whole; one suite
    (a folder with test files of its own, ``suites/operators``) runs from its parent, so its rows
    are named ``operators/...`` as in a whole run, not after its test files."""
    if any(folder.glob("test_*.py")):
        return folder.parent, [folder]
    return folder, []


def run(args: argparse.Namespace) -> int:
    user_args: list[str] = list(args.passthrough)
    if args.workload and (problem := workload_problem(args.workload)):
        print(f"rocm-compat run: --workload {problem}", file=sys.stderr)
        return 2
    suites = Path(args.suites) if args.suites else bundled_suites()
    if not suites.is_dir():
        print(f"rocm-compat run: {suites}: no suites folder there", file=sys.stderr)
        return 2
    env = detect()
    if env.torch is None:  # the bundled suites all need torch: a run would be import errors only
        print(no_torch_line(env), file=sys.stderr)
        return 2
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
    # before any output but this line: what an earlier run of this label left is never replaced silently
    other_run = busy(report_path)
    if other_run:
        print(f"rocm-compat run: {other_run}: wait for it, or give this run another --label", file=sys.stderr)
        return 2
    earlier = None if args.replace else earlier_report(report_path)
    if earlier:
        print(f"rocm-compat run: {earlier}: --replace replaces it, or give this run another --label", file=sys.stderr)
        return 2
    root, targets = suite_root(suites)
    if args.workload:  # the workload's rows alone: pytest is pointed at a folder with no tests
        root, targets = reports_dir / ".workload-root", []
        root.mkdir(exist_ok=True)
        user_args = [f"--rocm-workload={Path(args.workload).resolve()}", *user_args]
    device = "cpu" if on_cpu else None
    command = suite_command(root, report_path, label, device=device, user_args=user_args, targets=targets)
    # quoted: the line is meant to be pasted into a shell ("--rocm-label 'cpu torch2.13.0'")
    print("rocm-compat run: " + shlex.join(command[2:]), flush=True)
    for stale in (report_path, sidecar_path(report_path)):  # an earlier run's must not pass for this one's
        remove_if_regular(stale)
    status = run_pytest(command)
    source = report_path if report_path.exists() else sidecar_path(report_path)
    try:
        # no report: pytest died; how, for the row of the test it died in (a serial run's)
        document = load_report(source, ended=how_it_ended(status) if source != report_path else None)
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
    if status > 128:  # a signal came: the table of what finished is written, the status says why
        return status
    print(f"rocm-compat run: pytest exited {status} (interrupted or a usage error)", file=sys.stderr)
    return 2
