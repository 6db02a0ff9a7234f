"""Child processes that end when their parent is killed outright (Linux), and the supervised
wait of ``rocm-compat run`` for its pytest (``run_supervised``).

A child in a session of its own (``rocm-compat run``'s pytest) or one that ignores Ctrl-C (the
detection child) outlives a SIGKILL of its parent: a pytest still on the GPU and holding the
parent's output pipe open (a ``| tee`` after the command then waits for ever), or a detection hung
in a GPU driver that nobody will ever join. ``prctl(PR_SET_PDEATHSIG)`` has the kernel send the
child SIGKILL when the parent thread that started it ends; the request outlasts ``exec``. The
program that asks for it in front of a command is :mod:`pytest_rocm._supervisor`.

Stdlib only: every layer may import this module.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from types import FrameType

from pytest_rocm._supervisor import supervised

#: seconds pytest gets to write its report after a forwarded signal, before it is terminated
GRACE_S = 60.0
#: a signal this soon after the first is the same stop delivered twice, not a second request: GNU
#: timeout at its limit signals the command and then its whole process group, microseconds apart
SAME_STOP_S = 1.0
#: how often the wait for pytest looks at the signals received (seconds)
_POLL_S = 0.1


def dying_with_this_process(command: list[str]) -> list[str]:
    """``command`` run so that it ends when this process is killed outright (Linux; elsewhere
    ``command`` as it is): under :mod:`pytest_rocm._supervisor`, which asks for it and then becomes
    the command. Not a preexec_fn: this process may have threads (torch imported)."""
    if not sys.platform.startswith("linux"):
        return command
    return supervised(command, parent=os.getpid())


@dataclass(frozen=True)
class Supervised:
    """How a supervised child ended: its exit status (128 + N when a signal came) and that signal."""

    status: int
    signal: int | None


def run_supervised(command: list[str]) -> Supervised:
    """Run ``command`` (pytest) and wait; SIGTERM or SIGINT sent to this command (a cancelled CI job, Ctrl-C)
    is passed on as SIGINT, pytest's own "stop and report what finished", so its report is
    written and the table follows. A second signal (more than ``SAME_STOP_S`` after the first),
    or pytest still running ``GRACE_S`` later, ends it with SIGKILL: its sidecar still holds every
    finished result. This command killed outright (``timeout -k``) takes pytest with it.

    pytest runs in its own session so a terminal's Ctrl-C reaches it once, through here (twice
    would cut its report short); the status is the signal's (128 + N) when one came, and the
    signal is named so the caller can say it."""
    received: list[tuple[int, float]] = []  # (signal, when): the handler only records

    def record(signum: int, _frame: FrameType | None) -> None:
        now = time.monotonic()
        if not received or now - received[0][1] >= SAME_STOP_S:  # else the first one again
            received.append((signum, now))

    # Caught before pytest starts, not after: exec resets a caught signal to its default but keeps
    # an ignored one ignored, and this command may itself start with SIGINT ignored (`cmd &` in a
    # script: a shell without job control ignores it for background jobs; a parent that ignores
    # Ctrl-C). A pytest started so never sees the forwarded stop: killed at the grace, no report.
    previous = {sig: signal.signal(sig, record) for sig in (signal.SIGTERM, signal.SIGINT)}
    forwarded = 0
    try:
        child = subprocess.Popen(dying_with_this_process(command), start_new_session=True)
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
        return Supervised(128 + first, first)
    return Supervised(status, None)
