"""Running a command with capture on (``rocm-compat capture -o FILE -- CMD``), stdlib only.

The command runs as given, in a child process whose ``PYTHONPATH`` starts with a folder holding
``bootstrap``'s sitecustomize; its exit status is written into the file afterwards (the child
cannot know it while its atexit handlers run) and passed on as this command's status.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_rocm.workload.bootstrap import OUTPUT_VARIABLE, SITE_VARIABLE, write_site
from pytest_rocm.workload.schema import WorkloadError, load_workload, write_workload


@dataclass
class CaptureOutcome:
    status: int  # the command's exit status (128 + N for signal N)
    document: dict[str, Any] | None  # the capture, None when none was written
    problem: str | None = None  # why there is none


def run_captured(command: Sequence[str], output: Path) -> CaptureOutcome:
    """Run ``command`` with capture on; the workload file is at ``output`` afterwards if it ran."""
    output = output.resolve()
    if output.is_file():  # an earlier capture must not pass for this one
        output.unlink()
    with tempfile.TemporaryDirectory(prefix="rocm-capture-") as site:
        env = dict(os.environ)
        env[OUTPUT_VARIABLE] = str(output)
        env[SITE_VARIABLE] = str(write_site(Path(site)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH", "")) if p)
        try:
            status = subprocess.call(list(command), env=env)
        except OSError as exc:
            return CaptureOutcome(127, None, f"{command[0]}: cannot run ({exc.strerror or exc})")
    if status < 0:
        status = 128 - status
    if not output.is_file():
        why = "killed by a signal" if status > 128 else "it started no Python process that imported the capture"
        return CaptureOutcome(status, None, f"no capture was written ({why})")
    try:
        document = load_workload(output)
    except WorkloadError as exc:
        return CaptureOutcome(status, None, str(exc))
    document["exit_status"] = status
    write_workload(output, document)
    return CaptureOutcome(status, document)


def summary(document: dict[str, Any]) -> tuple[int, int, dict[str, int]]:
    """(signatures, calls, {reason: signatures}) of the not-replayable ones."""
    reasons: dict[str, int] = {}
    for signature in document["signatures"]:
        reason = signature.get("not_replayable")
        if reason:
            reasons[reason] = reasons.get(reason, 0) + 1
    return len(document["signatures"]), int(document.get("calls") or 0), reasons


__all__ = ["CaptureOutcome", "run_captured", "summary"]
