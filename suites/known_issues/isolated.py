"""Running one case in a child process, for reports that crash the process (segfault, GPU memory fault).

A crash in the pytest process would end the whole run; in a child it is one failed row that names
the report. The parent (:func:`run_isolated`) gives the child a hard timeout: a hang is killed and
reported, never waited on. The child (``python -m known_issues.isolated CASE DTYPE DEVICE SCALE``)
prints one JSON line with the outcome. ``PYTEST_ROCM_KNOWN_ISSUES_PRELOAD=module`` makes the child
import that module first (the plugin's own tests crash a row on purpose with it). The case's ``options["env"]`` (TunableOp's variables) is set
before torch is imported, which is the only way some of them take effect.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

SUITES = Path(__file__).resolve().parents[1]
MARK = "KNOWN-ISSUE-OUTCOME "


def run_child(code: str, argv: list[str], env: dict[str, str], timeout: float) -> tuple[int | None, str, str]:
    """(returncode or None on timeout, stdout, stderr) of ``python -c code argv...``; killed on timeout."""
    child_env = {**os.environ, **env}
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SUITES), child_env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="known-issue-") as cwd:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *argv],
            cwd=cwd,
            env=child_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: a kill takes its helpers too
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return None, out, err
        return proc.returncode, out, err


def _tail(text: str, lines: int = 6) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip())[:600]


def run_isolated(case: Any, dtype: str, device: str, scale: str, timeout: float) -> dict[str, Any]:
    """The child's outcome as a dict (failure, skip, records, info); crashes and hangs become failures."""
    env = {k: str(v) for k, v in case.options.get("env", {}).items()}
    code = "from known_issues.isolated import main; main()"
    rc, out, err = run_child(code, [case.id, dtype, device, scale], env, timeout)
    for line in reversed(out.splitlines()):
        if line.startswith(MARK):
            result: dict[str, Any] = json.loads(line[len(MARK) :])
            result.setdefault("info", {})["isolated"] = {"returncode": rc, "env": env}
            return result
    info = {"isolated": {"returncode": rc, "env": env, "stderr_tail": _tail(err)}}
    hung = rc is None
    if hung:
        what = f"did not finish within {timeout:g} s (a hang; the child process was killed)"
    elif rc < 0:
        what = f"the child process died with {signal.Signals(-rc).name}: {_tail(err, 3) or 'no output'}"
    else:
        what = f"the child process exited with status {rc} before reporting: {_tail(err, 3) or 'no output'}"
    failure = f"{case.url} ({case.kind}) reproduced on {device}: {what}"
    return {"failure": failure, "hung": hung, "records": [], "info": info}


def fail_as_timeout(started: float, detail: str) -> None:
    """End a row whose child hung (already killed) at once, with a ``timeout`` outcome.

    The report reads "Timeout (>Ns) in the known-issue child" as ``timeout``, as it reads
    pytest-timeout's own message: there is no need to wait for pytest-timeout to fire.
    """
    sys.stderr.write(f"known-issue row hung: {detail}\n")
    pytest.fail(f"Timeout (>{time.monotonic() - started:.0f}s) in the known-issue child: {detail}", pytrace=False)


#: a module the child imports before running (the plugin's tests use it to crash a row on purpose)
PRELOAD_VARIABLE = "PYTEST_ROCM_KNOWN_ISSUES_PRELOAD"


def main(argv: list[str] | None = None) -> None:
    case_id, dtype, device, scale = (argv or sys.argv[1:])[:4]
    if os.environ.get(PRELOAD_VARIABLE):
        importlib.import_module(os.environ[PRELOAD_VARIABLE])
    import torch

    from known_issues.cases import BY_ID
    from known_issues.repro import reproduce

    outcome = reproduce(BY_ID[case_id], dtype, torch.device(device), scale)
    payload = {"failure": outcome.failure, "skip": outcome.skip, "records": outcome.records, "info": outcome.info}
    sys.stdout.write(MARK + json.dumps(payload, default=str) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
