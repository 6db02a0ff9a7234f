"""Child processes that end when their parent is killed outright (Linux).

A child in a session of its own (``rocm-compat run``'s pytest) or one that ignores Ctrl-C (the
detection child) outlives a SIGKILL of its parent: a pytest still on the GPU and holding the
parent's output pipe open (a ``| tee`` after the command then waits for ever), or a detection hung
in a GPU driver that nobody will ever join. ``prctl(PR_SET_PDEATHSIG)`` has the kernel send the
child SIGKILL when the parent thread that started it ends; the request outlasts ``exec``.

Stdlib only: every layer may import this module.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from typing import NoReturn

#: linux/prctl.h
_PR_SET_PDEATHSIG = 1
#: what a parent runs as its child's command to start ``command`` dying with it: the parent's
#: import path (``path``), then this module; argv: the parent's pid, then the command
BOOTSTRAP = (
    "import sys; sys.path[:0] = {path!r}; "
    "from pytest_rocm._lifetime import exec_dying_with_parent; exec_dying_with_parent(sys.argv[1:])"
)


def die_with_parent(parent_pid: int) -> bool:
    """Ask for SIGKILL when the parent dies (on Linux; elsewhere nothing is asked). False when
    ``parent_pid`` is no longer the parent: it died before the request, and the caller should end."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # no libc prctl (musl without it, a sandbox)
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    return os.getppid() == parent_pid


def exec_dying_with_parent(argv: list[str]) -> NoReturn:
    """``argv``: the parent's pid, then a command; become that command, dying with the parent."""
    if not die_with_parent(int(argv[0])):
        os._exit(128 + signal.SIGKILL)  # as if the kernel had sent it
    os.execvp(argv[1], argv[1:])


def dying_with_this_process(command: list[str]) -> list[str]:
    """``command`` run so that it ends when this process is killed outright (Linux; elsewhere
    ``command`` as it is). Not a preexec_fn: this process may have threads (torch imported)."""
    if not sys.platform.startswith("linux"):
        return command
    path = [entry or os.getcwd() for entry in sys.path]
    return [sys.executable, "-c", BOOTSTRAP.format(path=path), str(os.getpid()), *command]
