"""Detection in a child process: started early, joined when the environment is needed.

Why a child: detection imports torch and initialises the GPU runtime (~1.5-3 s on a 2-core CPU,
and torch's objects then sit in every garbage collection of the run). A pytest run that needs the
environment only for its report (``--rocm-report``) would pay that on its own thread and leave
torch imported in a process whose suite never asked for it: HIP already initialised before a
conftest sets ``HIP_VISIBLE_DEVICES``, forked DataLoader workers after a GPU context. Detecting in
a child runs on another core while the tests run, and leaves the test process as it was.

The child is the same interpreter (``sys.executable``) with the parent's ``sys.path`` and
environment variables at the moment it starts, so it imports the same torch and reads the same
machine (``PYTEST_ROCM_SYSROOT`` included). It runs :func:`pytest_rocm.env.detect.detect_environment`
and writes the Environment's JSON to a temporary file (no pipe: a large output or a chatty torch
import can never block it). A child that fails, prints no valid environment or outlives
``TIMEOUT_S`` gives None and a one-line ``failure``: the caller then detects in-process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import IO

from pytest_rocm._supervisor import die_with_parent
from pytest_rocm.env.model import Environment, EnvironmentFileError

__all__ = ["TIMEOUT_S", "PendingDetection", "main", "start"]

#: how long a join waits for the child (first use of a GPU can compile or load kernels for a while)
TIMEOUT_S = 300.0

#: what the child runs: the parent's import path first, then this module's main (argv: the parent's pid)
_BOOTSTRAP = (
    "import sys; sys.path[:0] = {path!r}; from pytest_rocm.env.background import main; sys.exit(main(int(sys.argv[1])))"
)


class PendingDetection:
    """A detection running in a child process; :meth:`result` joins it (once)."""

    def __init__(self, process: subprocess.Popen[bytes], output: IO[bytes], errors: IO[bytes]) -> None:
        self.process = process
        self._output = output
        self._errors = errors
        #: why the child gave no environment (one line), "" while it has not failed
        self.failure = ""
        self._result: Environment | None = None
        self._joined = False

    def done(self) -> bool:
        """Whether the child has exited (never blocks)."""
        return self._joined or self.process.poll() is not None

    def result(self, timeout: float = TIMEOUT_S) -> Environment | None:
        """The child's Environment, waiting up to ``timeout`` seconds; None (and ``failure``) if it
        failed, printed no valid environment, or ran out of time (it is killed then)."""
        if not self._joined:
            self._joined = True
            try:
                self._result = self._collect(timeout)
            finally:
                self._output.close()
                self._errors.close()
        return self._result

    def cancel(self) -> None:
        """Stop a child whose result nobody will read (a run that ended before it needed it)."""
        if not self._joined:
            self._joined = True
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self._output.close()
            self._errors.close()

    def _collect(self, timeout: float) -> Environment | None:
        try:
            status = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            self.failure = f"detection in a child process ran out of time ({timeout:g} s)"
            return None
        self._output.seek(0)
        text = self._output.read().decode("utf-8", "replace")
        if status != 0:
            self._errors.seek(0)
            lines = self._errors.read().decode("utf-8", "replace").strip().splitlines()
            self.failure = f"detection in a child process exited with status {status}" + (
                f": {lines[-1]}" if lines else ""
            )
            return None
        try:
            # types checked, values not: they are what an in-process detection would have given
            return Environment.from_dict(json.loads(text), "detection in a child process", check=False)
        except (ValueError, EnvironmentFileError) as exc:
            self.failure = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return None


def start() -> PendingDetection:
    """Start detecting this machine in a child process (returns at once)."""
    path = [entry or os.getcwd() for entry in sys.path]  # "" (the working directory) made explicit
    # closed by the PendingDetection when it is joined or cancelled, not here: the child writes on
    output = tempfile.TemporaryFile()  # noqa: SIM115
    errors = tempfile.TemporaryFile()  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-c", _BOOTSTRAP.format(path=path), str(os.getpid())],
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=errors,
    )
    return PendingDetection(process, output, errors)


def main(parent_pid: int | None = None) -> int:
    """The child: detect, and write the Environment's JSON to standard output. With the parent's
    pid, it dies with that parent: a parent killed outright leaves no detection behind (one hung in
    a GPU driver would otherwise stay for ever, its timeout being the parent's)."""
    if parent_pid is not None and not die_with_parent(parent_pid):
        return 1  # the parent is gone already: nobody will read the result
    # A Ctrl-C is for the tests: the child (in the terminal's process group, so that a kill of the
    # whole group still reaches it) finishes, and the interrupted run's report names its environment.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # At the tests' own priority, not below: on a machine whose cores the tests keep busy (xdist
    # workers) a niced child got a tenth of a core, so an interrupted run's report waited for it
    # past the grace a CI job's `timeout -k` gives, and was lost. It is a few seconds of CPU.
    # What torch (or a library it loads) prints while detection runs goes to standard error, so
    # standard output holds the JSON alone: fd 1 is pointed at fd 2 until the result is written.
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        from pytest_rocm.env.detect import detect_environment  # imports torch (through the seam)

        with contextlib.redirect_stdout(sys.stderr):  # and Python's own sys.stdout, wherever it writes
            text = detect_environment().to_json(indent=None)
        sys.stdout.flush()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0
