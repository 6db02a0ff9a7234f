"""How a test process died, in words, and the record of a test a dead process never finished.

Two ways a run loses a test to a crash. Under pytest-xdist the worker dies and xdist reports the
test it ran; its exit status (from the worker's process, ``plugin.xdist.worker_exit_status``)
says how: ``...crashed while running 'x.py::t': killed by SIGSEGV (signal 11)``. In a serial run the whole pytest process dies: the
report writer wrote the collected tests in their run order to the sidecar once (a ``collected``
line), so the sidecar's reader names the row afterwards (the first of them without a result) (``crashed_record``), and whoever waited for the
process (``rocm-compat run``) knows the exit status to add.
"""

from __future__ import annotations

import signal

from pytest_rocm.report.records import ResultRecord


def how_it_ended(returncode: int) -> str:
    """``-11`` (subprocess's form of a signal) -> ``killed by SIGSEGV (signal 11)``; ``3`` ->
    ``exit status 3``; the shell's ``128 + N`` stays an exit status (it may be either)."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "an unknown signal"
        return f"killed by {name} (signal {-returncode})"
    return f"exit status {returncode}"


def crashed_record(nodeid: str, feature: str, suite: str, ended: str | None = None) -> ResultRecord:
    """The row of the test a serial run was running when its process died."""
    how = f"the run's process died while this test ran: {ended}" if ended else (
        "the run's process died while this test ran (how is not recorded: a crash, or a kill from outside)"
    )  # fmt: skip
    return {
        "nodeid": nodeid,
        "feature": feature,
        "suite": suite,
        "outcome": "crashed",
        "reason": how,
        "duration": 0.0,
        "parity": [],
        "info": {},
    }
