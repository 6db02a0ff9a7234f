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

#: linux/prctl.h
_PR_SET_PDEATHSIG = 1
#: what a parent runs as its child's command to start ``command`` dying with it (argv: the
#: parent's pid, then the command). Self-contained, not an import of this module: a failure to find
#: pytest_rocm there (a zipapp, an odd sys.path) must not stop the run, only lose the request.
BOOTSTRAP = f"""\
import ctypes, os, sys
try:
    ctypes.CDLL(None).prctl({_PR_SET_PDEATHSIG}, {int(signal.SIGKILL)}, 0, 0, 0)
except Exception:
    pass
if os.getppid() != int(sys.argv[1]):
    sys.exit({128 + int(signal.SIGKILL)})  # the parent died before the request: as if killed with it
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.exit(f"cannot start {{sys.argv[2]}}: {{exc.strerror}}")
"""


def die_with_parent(parent_pid: int) -> bool:
    """Ask for SIGKILL when the parent dies (on Linux; elsewhere nothing is asked). False when
    ``parent_pid`` is no longer the parent: it died before the request, and the caller should end."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # no libc prctl (musl without it, a sandbox)
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    return os.getppid() == parent_pid


def dying_with_this_process(command: list[str]) -> list[str]:
    """``command`` run so that it ends when this process is killed outright (Linux; elsewhere
    ``command`` as it is). Not a preexec_fn: this process may have threads (torch imported)."""
    if not sys.platform.startswith("linux"):
        return command
    return [sys.executable, "-c", BOOTSTRAP, str(os.getpid()), *command]
