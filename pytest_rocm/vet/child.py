"""Run a command of the live check as a contained child: its own session, a time limit that ends
everything it started, output kept in files (a daemon holding a pipe open can neither hang vet nor
make a finished import look like a timeout), and no network where the platform allows it.

On Linux the command runs under a small supervisor that is a *child subreaper*
(``PR_SET_CHILD_SUBREAPER``): every process the command forks, even one that starts its own
session the way daemons do, is re-parented to the supervisor, which kills them all when the
command ends or its time is up. Elsewhere the child's process group is ended, which reaches
everything that did not start a session of its own. ``unshare -rn`` (a new user and network
namespace, only loopback) cuts the network when it works here; otherwise the child has the
network this process has.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import IO

#: the supervisor: argv = timeout, command...; exit status: the command's (a signal re-raised
#: on itself), or 124 after a timeout
_SUPERVISOR = r"""
import ctypes, os, signal, subprocess, sys
timeout, command = float(sys.argv[1]), sys.argv[2:]
try:
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
except (OSError, AttributeError):
    pass
proc = subprocess.Popen(command)
try:
    code = proc.wait(timeout)
except subprocess.TimeoutExpired:
    code = None
def descendants():
    me, found, ppids = os.getpid(), set(), {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    ppids[int(entry)] = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    todo = [me]
    while todo:
        parent = todo.pop()
        for pid, ppid in ppids.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                todo.append(pid)
    return found
for _ in range(5):  # a forking process may start another while we kill: a few rounds
    pids = descendants()
    if not pids:
        break
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                break
        except ChildProcessError:
            break
if code is None:
    sys.stderr.write("\n@@vet-timeout@@\n")
    sys.exit(124)
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""
_KEEP = 64 * 1024  # bytes of each output stream kept (the end, where errors and facts are)


@dataclass
class Finished:
    returncode: int | None  # None: the time limit ended it
    stdout: str
    stderr: str


@functools.cache
def _offline_prefix() -> tuple[str, ...]:
    """``unshare -rn`` when it works here (user namespaces allowed), else nothing."""
    tool = shutil.which("unshare")
    if tool is None or not sys.platform.startswith("linux"):
        return ()
    try:
        ok = subprocess.run([tool, "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return (tool, "-rn") if ok else ()


def _tail(stream: IO[bytes]) -> str:
    stream.seek(0, os.SEEK_END)
    size = stream.tell()
    stream.seek(max(0, size - _KEEP))
    return stream.read().decode("utf-8", "replace")


def _end_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pid, signal.SIGKILL)


def run_contained(
    command: list[str], *, timeout: float, cwd: str, env: dict[str, str], offline: bool = True
) -> Finished:
    """Run ``command`` contained (module docstring); never raises for what the command does."""
    linux = sys.platform.startswith("linux") and os.path.isdir("/proc")
    argv = [sys.executable, "-c", _SUPERVISOR, str(timeout), *command] if linux else list(command)
    if offline:
        argv = [*_offline_prefix(), *argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
        try:
            code: int | None = proc.wait(timeout + (15 if linux else 0))  # the supervisor keeps time
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _end_group(proc.pid)  # whatever is left in its session, supervisor included
            proc.wait()
        stderr = _tail(err)
        if linux and code == 124 and stderr.endswith("@@vet-timeout@@\n"):
            code, stderr = None, stderr.removesuffix("\n@@vet-timeout@@\n")
        return Finished(code, _tail(out), stderr)
