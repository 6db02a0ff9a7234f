"""The one pytest command line that runs the bundled suites, with crash and hang isolation.

Three callers run the suites in a pytest subprocess: ``rocm-compat run`` (``cli/run``), each
matrix session of ``noxfile.py``, and ``vet --run`` (``vet/live``, one library suite). They all
build the command here, so a report is written the same way whoever ran it, and the isolation
defaults (:data:`DEFAULT_TIMEOUT_S`, :data:`DEFAULT_MAX_WORKER_RESTART`) exist once.

Why a module of its own, at the top of the package: it only builds a list of strings, so it
needs neither pytest (``plugin/`` would bring it: noxfile imports this module from nox's own
interpreter, where pytest may not be installed) nor torch, and it is not about reports
(``report/``) or the machine (``env/``); ``cli/`` cannot hold it, since nothing outside ``cli/``
may import from there. It imports only the standard library.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

#: pytest-timeout's ``--timeout`` (seconds per test) unless the user passes their own
DEFAULT_TIMEOUT_S = 900
#: pytest-xdist's ``--max-worker-restart``: a crashed worker is replaced (its test: ``crashed``)
DEFAULT_MAX_WORKER_RESTART = 1000


def _given(user_args: Sequence[str], *names: str) -> bool:
    """Whether the user passed one of these options (``-n 4``, ``-n4``, ``--timeout=60``)."""
    for arg in user_args:
        for name in names:
            if arg == name or arg.startswith(name + "="):
                return True
            if len(name) == 2 and arg.startswith(name) and len(arg) > 2:  # -n4
                return True
    return False


def isolation_args(user_args: Sequence[str], have_xdist: bool, have_timeout: bool) -> list[str]:
    """The pytest options added for crash and hang isolation, each unless the user gave it.

    With pytest-xdist: ``-n auto --max-worker-restart N`` (a crash takes one worker, not the
    run); with pytest-timeout: ``--timeout S``, and under xdist ``--timeout-method thread`` (it
    ends even a hang inside a GPU runtime call, where no Python signal handler runs; the worker is
    replaced and the report records ``timeout``). ``-p no:xdist`` turns the xdist part off.
    """
    no_xdist = any(a in ("no:xdist", "-pno:xdist") for a in user_args)
    xdist = have_xdist and not no_xdist
    args: list[str] = []
    if xdist:
        if not _given(user_args, "-n", "--numprocesses"):
            args += ["-n", "auto"]
        if not _given(user_args, "--max-worker-restart", "--maxworkerrestart"):
            args += ["--max-worker-restart", str(DEFAULT_MAX_WORKER_RESTART)]
    if have_timeout:
        if not _given(user_args, "--timeout"):
            args += ["--timeout", str(DEFAULT_TIMEOUT_S)]
        if xdist and not _given(user_args, "--timeout-method", "--timeout_method"):
            args += ["--timeout-method", "thread"]
    return args


def installed(module: str) -> bool:
    """Whether ``module`` (``xdist``, ``pytest_timeout``) is importable by this interpreter."""
    return importlib.util.find_spec(module) is not None


def suite_command(
    suites: Path,
    report: Path,
    label: str | None,
    *,
    device: str | None = None,
    user_args: Sequence[str] = (),
    targets: Sequence[Path] = (),
    isolation: bool = True,
    have_xdist: bool | None = None,
    have_timeout: bool | None = None,
    python: str = sys.executable,
) -> list[str]:
    """``python -m pytest SUITES --rootdir SUITES ... --rocm-report REPORT --rocm-label LABEL ...``

    ``suites``: the suites folder (the rootdir; its ``pytest.ini`` when it has one); ``targets``:
    what to run inside it (default: all of it). ``device``: ``--rocm-device`` (``"cpu"`` for the
    CPU baseline; None: the plugin picks), unless ``user_args`` name one. ``isolation``: add
    :func:`isolation_args`; ``have_xdist``/``have_timeout`` say whether the interpreter that runs
    the command has those plugins (None: whether this one has them; a nox session that installs
    them says True). ``user_args`` come last, so they win over anything before them. ``label``:
    ``--rocm-label``; None: the plugin labels the column itself, with ``report.records.default_label``
    (the one default label scheme: ``rocm-compat run`` and nox name one machine's column alike).
    """
    command = [python, "-m", "pytest", *(str(t) for t in targets or [suites])]
    command += ["--rootdir", str(suites), "-p", "no:cacheprovider"]
    command += ["--rocm-report", str(report), *(["--rocm-label", label] if label else [])]
    ini = suites / "pytest.ini"
    if ini.is_file():
        command += ["-c", str(ini)]
    if isolation:
        xdist = installed("xdist") if have_xdist is None else have_xdist
        timeout = installed("pytest_timeout") if have_timeout is None else have_timeout
        command += isolation_args(user_args, xdist, timeout)
    if device and not any(a.startswith("--rocm-device") for a in user_args):
        command.append(f"--rocm-device={device}")
    return command + list(user_args)


__all__ = ["DEFAULT_MAX_WORKER_RESTART", "DEFAULT_TIMEOUT_S", "installed", "isolation_args", "suite_command"]
