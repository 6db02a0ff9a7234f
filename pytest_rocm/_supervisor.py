"""The program that runs in front of a child's command and holds its lifetime (Linux): one module
for the two jobs the package has for such a program.

- **Dying with the parent** (``--parent PID``): ask the kernel for SIGKILL when the parent dies
  (``PR_SET_PDEATHSIG``; the request outlasts ``exec``), then *become* the command. ``rocm-compat
  run``'s pytest (:func:`pytest_rocm._lifetime.run_supervised`) starts so: it sits in a session of
  its own and would outlive a SIGKILL of ``run``, and the signals ``run`` forwards must reach it
  with nothing in between.
- **Containing** (``--timeout S --memory BYTES``): become a *child subreaper*
  (``PR_SET_CHILD_SUBREAPER``) and stay the command's parent. Every process the command forks, even
  one that starts its own session the way daemons do, is re-parented here and killed when the
  command ends or its time is up; only the command gets the memory limit (RLIMIT_DATA), the
  supervisor keeps the one it inherited. ``vet --run``'s live check (:mod:`pytest_rocm.vet.contained`)
  runs each command so. The exit status is the command's (a signal re-raised on itself, and named on
  stderr too: bubblewrap turns a death by signal N into the status 128 + N), or 124 after the time
  limit, said on stderr as well (a command may exit 124 itself).

A module, not a program in a Python string, so ruff, mypy and the reader see it. The parent builds
its command line with :func:`supervised`: ``python -I -c "... from pytest_rocm._supervisor import
main ..."`` with the folder this package was imported from first on the import path. ``-I``: the
command's ``PYTHONPATH`` (a vetted package's folder, a ``sitecustomize`` in it) and the user's site
never run in the supervisor; they reach the command, whose environment is untouched.

Stdlib only, and cheap to import (the package root is lazy): every layer may import it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

#: linux/prctl.h
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

#: what the supervisor writes last on stderr when the time limit ended the command
TIMEOUT_MARK = "\n@@vet-timeout@@\n"
#: ... and when a signal ended it (``SIGNAL_MARK.format(signal=N)``)
SIGNAL_MARK = "\n@@vet-signal:{signal}@@\n"
_SIGNALLED = re.compile(r"\n@@vet-signal:([0-9]+)@@\n\Z")
#: the exit status after the time limit (GNU timeout's)
TIMEOUT_STATUS = 124

#: the folder this package was imported from (a site-packages, a checkout, a zipapp's archive)
_FOLDER = str(Path(__file__).resolve().parent.parent)
#: the ``-c`` line: this package's folder first, then :func:`main` (the flags and the command follow)
_START = "import sys; sys.path.insert(0, {folder!r}); from pytest_rocm._supervisor import main; sys.exit(main())"


def supervised(
    command: Sequence[str], *, parent: int | None = None, timeout: float | None = None, memory: int | None = None
) -> list[str]:
    """The command line that runs ``command`` under this supervisor, for one job: dying with
    ``parent`` (a pid), or contained with ``timeout`` (seconds) and ``memory`` (bytes)."""
    if (timeout is None) != (memory is None) or (parent is None) == (timeout is None):
        raise ValueError("one job: dying with a parent, or contained (a timeout and a memory limit)")
    flags: list[str] = []
    if parent is not None:
        flags += ["--parent", str(parent)]
    if timeout is not None and memory is not None:
        flags += ["--timeout", repr(float(timeout)), "--memory", str(int(memory))]
    return [sys.executable, "-I", "-c", _START.format(folder=_FOLDER), *flags, "--", *command]


def contained_ending(status: int, stderr: str) -> tuple[int | None, str]:
    """How a contained command ended, read from its supervisor's exit status and stderr: its own
    status, None when the time limit ended it, -N when signal N did (as :mod:`subprocess` says);
    and its stderr without the supervisor's last words."""
    if status == TIMEOUT_STATUS and stderr.endswith(TIMEOUT_MARK):
        return None, stderr.removesuffix(TIMEOUT_MARK)
    signalled = _SIGNALLED.search(stderr) if status else None
    if signalled:
        return -int(signalled.group(1)), stderr[: signalled.start()]
    return status, stderr


def supervisor_folder() -> str:
    """The folder the supervisor is imported from: a sandbox must let the supervisor read it."""
    return _FOLDER


def _prctl(option: int, value: int) -> None:
    """One ``prctl`` call; nothing where there is none (not Linux, a libc without it, a sandbox
    that refuses it): the run goes on without the request."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def die_with_parent(parent_pid: int) -> bool:
    """Ask for SIGKILL when the parent dies (on Linux; elsewhere nothing is asked). False when
    ``parent_pid`` is no longer the parent: it died before the request, and the caller should end."""
    _prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    return os.getppid() == parent_pid


def _become(command: list[str], parent: int) -> int:
    if not die_with_parent(parent):
        return 128 + int(signal.SIGKILL)  # the parent died before the request: as if killed with it
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"cannot start {command[0]}: {exc.strerror}\n")
    return 1


def _descendants() -> set[int]:
    """Every process below this one, read from ``/proc`` (the tree as it is now)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError), open(f"/proc/{entry}/stat", "rb") as stat:
                # the field after the command name, which may itself hold ")" and spaces
                parents[int(entry)] = int(stat.read().rsplit(b")", 1)[1].split()[1])
    found: set[int] = set()
    todo = [os.getpid()]
    while todo:
        above = todo.pop()
        for pid, ppid in parents.items():
            if ppid == above and pid not in found:
                found.add(pid)
                todo.append(pid)
    return found


def _kill_descendants() -> None:
    for _ in range(5):  # a forking process may start another while they are killed: a few rounds
        pids = _descendants()
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        while True:  # reap what was re-parented here
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    break
            except ChildProcessError:
                break


def _contain(command: list[str], timeout: float, memory: int) -> int:
    import resource  # POSIX only: imported where it runs

    _prctl(PR_SET_CHILD_SUBREAPER, 1)

    def limited() -> None:  # in the command's process only
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))

    proc = subprocess.Popen(command, preexec_fn=limited)
    code: int | None
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        code = None
    _kill_descendants()
    if code is None:
        sys.stderr.write(TIMEOUT_MARK)
        return TIMEOUT_STATUS
    if code < 0:
        sys.stderr.write(SIGNAL_MARK.format(signal=-code))
        sys.stderr.flush()
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code  # the signal did not end this process (one that cannot)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """The supervisor: ``--parent PID -- COMMAND...`` or ``--timeout S --memory BYTES -- COMMAND...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    split = args.index("--") if "--" in args else len(args)
    flags, command = dict(zip(args[:split:2], args[1:split:2], strict=False)), args[split + 1 :]
    jobs: list[set[str]] = [{"--parent"}, {"--timeout", "--memory"}]
    if not command or len(flags) * 2 != split or set(flags) not in jobs:
        sys.stderr.write("usage: --parent PID -- COMMAND... | --timeout S --memory BYTES -- COMMAND...\n")
        return 2
    if "--timeout" in flags:
        return _contain(command, float(flags["--timeout"]), int(flags["--memory"]))
    return _become(command, int(flags["--parent"]))
