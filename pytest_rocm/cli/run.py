"""``rocm-compat run [PYTEST_ARGS]``: the main job.

Runs the bundled suites in this environment with crash and hang isolation on (pytest-xdist
workers replaced when they die, pytest-timeout ending hangs), writes ``reports/<label>.json``
and the table of it (Markdown and HTML), and prints where they are. With no accelerator it says
so loudly and runs the suites on the CPU as a reference baseline; ``--require-gpu`` makes that an
error. Arguments it does not know go to pytest (``-k matmul``, ``-n 8``, ``--timeout 300``).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from pytest_rocm._lifetime import dying_with_this_process
from pytest_rocm._resources import bundled_suites
from pytest_rocm.cli.argtypes import label_text, path_text
from pytest_rocm.env.model import Environment, has_accelerator
from pytest_rocm.report.deaths import how_it_ended
from pytest_rocm.report.files import busy, remove_if_regular, sidecar_path
from pytest_rocm.report.load import ReportError, load_report
from pytest_rocm.report.records import ReportDocument, default_label, slug
from pytest_rocm.suite_command import suite_command

#: pytest exit statuses that still mean "the report is a measurement" (all ran; some failed)
MEASURED = (0, 1)
#: seconds pytest gets to write its report after a forwarded signal, before it is terminated
GRACE_S = 60.0
#: a signal this soon after the first is the same stop delivered twice, not a second request: GNU
#: timeout at its limit signals the command and then its whole process group, microseconds apart
SAME_STOP_S = 1.0
#: how often the wait for pytest looks at the signals received (seconds)
_POLL_S = 0.1


def detect() -> Environment:
    from pytest_rocm.env.detect import detect_environment

    return detect_environment()


def install_advice(env: Environment) -> str:
    """The torch install line for this machine, from the doctor's knowledge (the CPU index, a
    CUDA index, or the ROCm index that carries the AMD GPU's gfx)."""
    from pytest_rocm.doctor.facts import install_line
    from pytest_rocm.doctor.render import probe_extras
    from pytest_rocm.env.seam import Seam, SysrootError

    try:
        extras = probe_extras(Seam(), env)
    except SysrootError:
        from pytest_rocm.doctor.model import Extras

        extras = Extras()
    return install_line(env, extras)


def no_torch_line(env: Environment) -> str:
    """One line instead of a run whose every test file fails to import torch (and an empty report)."""
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
    from pytest_rocm.report.formats import render
    from pytest_rocm.report.table import build_table, write_output

    table = build_table([document], [str(report_path)])
    written = []
    for fmt, suffix in (("md", ".md"), ("html", ".html")):
        target = report_path.with_suffix(suffix)
        write_output(render(table, fmt), str(target))
        written.append(target)
    return written


def run_pytest(command: list[str]) -> int:
    """Run pytest and wait; SIGTERM or SIGINT sent to this command (a cancelled CI job, Ctrl-C)
    is passed on as SIGINT, pytest's own "stop and report what finished", so its report is
    written and the table follows. A second signal (more than ``SAME_STOP_S`` after the first),
    or pytest still running ``GRACE_S`` later, ends it with SIGKILL: its sidecar still holds every
    finished result. This command killed outright (``timeout -k``) takes pytest with it.

    pytest runs in its own session so a terminal's Ctrl-C reaches it once, through here (twice
    would cut its report short); the status is the signal's (128 + N) when one came."""
    child = subprocess.Popen(dying_with_this_process(command), start_new_session=True)
    received: list[tuple[int, float]] = []  # (signal, when): the handler only records

    def record(signum: int, _frame: FrameType | None) -> None:
        now = time.monotonic()
        if not received or now - received[0][1] >= SAME_STOP_S:  # else the first one again
            received.append((signum, now))

    previous = {sig: signal.signal(sig, record) for sig in (signal.SIGTERM, signal.SIGINT)}
    forwarded = 0
    try:
        # Polled, not one blocking wait: a wait interrupted by a signal resumes where it was
        # (PEP 475), so the grace period and a second signal would otherwise never be acted on.
        while True:
            try:
                status = child.wait(timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            if len(received) > forwarded:  # forwarded from here, not the handler: pytest unreaped
                forwarded = len(received)
                child.send_signal(signal.SIGINT if forwarded == 1 else signal.SIGKILL)
            elif received and time.monotonic() - received[0][1] > GRACE_S:
                child.kill()  # past the grace period: the sidecar keeps what finished
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        first = received[0][0]
        print(f"rocm-compat run: {signal.Signals(first).name} passed on to pytest", file=sys.stderr)
        return 128 + first
    return status


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
    root, targets = suite_root(suites)
    device = "cpu" if on_cpu else None
    command = suite_command(root, report_path, label, device=device, user_args=user_args, targets=targets)
    print("rocm-compat run: " + " ".join(command[2:]), flush=True)
    other_run = busy(report_path)
    if other_run:
        print(f"rocm-compat run: {other_run}: wait for it, or give this run another --label", file=sys.stderr)
        return 2
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
