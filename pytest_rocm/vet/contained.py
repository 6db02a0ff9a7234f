"""Run a command of the live check as a contained child: its own session, a time limit that ends
everything it started, output kept in files (a daemon holding a pipe open can neither hang vet nor
make a finished import look like a timeout), and a sandbox: bubblewrap (``bwrap``, what Flatpak
uses), where nothing outside the child's own folder is writable, the user's home, ``/tmp`` and
``/run`` are hidden (an empty tmpfs: no file there, no unix socket such as ``$SSH_AUTH_SOCK``),
and the network is a namespace of its own with only loopback.

On Linux the command runs under the package's supervisor (:mod:`pytest_rocm._supervisor`), a
*child subreaper* (``PR_SET_CHILD_SUBREAPER``): every process the command forks, even one that starts its own
session the way daemons do, is re-parented to the supervisor, which kills them all when the
command ends or its time is up; in the sandbox the child also has its own process namespace,
which ends with it. Without a sandbox (``--unsafe-run``) the child's process group is ended
elsewhere, which reaches everything that did not start a session of its own, and ``unshare -rn``
(a new user and network namespace, only loopback) cuts the network when it works here.
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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pytest_rocm._supervisor import contained_ending, supervised, supervisor_folder

#: the name of the sandbox a contained command runs in (the live record says it)
SANDBOX = "bubblewrap"

#: the memory a contained command may allocate (RLIMIT_DATA: its heap and private writable
#: mappings; ``vet --memory-limit`` changes it). Not RLIMIT_AS: that would count the shared
#: libraries a GPU build of torch maps (GBs) and the address space a GPU runtime reserves, and
#: fail a healthy import; what a runaway import grows is its data.
DEFAULT_MEMORY_GIB = 8.0

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


def sandbox_problem() -> str | None:
    """Why no sandbox can run here (None: bubblewrap works); one phrase, for the refusal line."""
    return _sandbox_problem()


@functools.cache
def _sandbox_problem() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"the sandbox (bubblewrap) needs Linux, this is {sys.platform}"
    tool = shutil.which("bwrap")
    if tool is None:
        return "bwrap is not installed (Debian/Ubuntu: apt install bubblewrap)"
    probe = [tool, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    try:
        done = subprocess.run([*probe, "--unshare-all", "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap does not start ({exc})"
    if done.returncode != 0:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        return f"bwrap cannot make its namespaces here ({last[:160]}; are user namespaces allowed?)"
    return None


def _homes() -> list[str]:
    """The user's home, as ``$HOME`` and the password database say (code may ask either)."""
    found = {os.environ.get("HOME", "")}
    with contextlib.suppress(ImportError, KeyError, OSError):
        import pwd

        found.add(pwd.getpwuid(os.getuid()).pw_dir)
    return sorted({os.path.realpath(h) for h in found if h and os.path.isdir(h)} - {"/"})


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def sandbox_argv(work: str, readable: Iterable[str], offline: bool) -> list[str]:
    """The ``bwrap`` command line for a child whose only writable folder is ``work``.

    The whole file system is bound read-only; the home, ``/tmp``, ``/var/tmp`` and ``/run`` are
    then covered with empty tmpfs (their files and sockets are gone, writes there vanish with the
    sandbox); ``readable`` (the Python installation, the vetted folder, pytest-rocm) is bound back
    read-only on top, except a folder that would show a home again; ``work`` last, writable.
    GPU device nodes are passed through: the run needs them.
    """
    homes = _homes()
    argv = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session", "--unshare-all"]
    if not offline:
        argv.append("--share-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for node in ("/dev/kfd", "/dev/dri", *sorted(str(p) for p in Path("/dev").glob("nvidia*"))):
        argv += ["--dev-bind-try", node, node]
    for hidden in ("/tmp", "/var/tmp", "/run", *homes):
        if os.path.isdir(hidden):
            argv += ["--tmpfs", hidden]
    work = os.path.realpath(work)
    shown: set[str] = set()
    for path in sorted({os.path.realpath(p) for p in readable if p and os.path.isdir(p)}, key=len):
        reveals_home = any(_inside(home, path) for home in homes)  # a home, or a folder above one
        if reveals_home or _inside(work, path) or any(_inside(path, s) for s in shown) or path == "/":
            continue
        shown.add(path)
        argv += ["--ro-bind", path, path]
    return [*argv, "--bind", work, work, "--chdir", work, "--"]


def _tail(stream: IO[bytes]) -> str:
    stream.seek(0, os.SEEK_END)
    size = stream.tell()
    stream.seek(max(0, size - _KEEP))
    return stream.read().decode("utf-8", "replace")


def _python_folders() -> list[str]:
    """What this Python needs to start in the sandbox: its installation and its import path."""
    here = os.getcwd()  # the folder vet was started from is no part of Python: not shown
    found = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable), *sys.path]
    return [p for p in found if p and os.path.abspath(p) != here]


def _end_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pid, signal.SIGKILL)


def memory_bytes(gib: float) -> int:
    return int(gib * 1024**3)


def _limit_data(memory: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))


def run_contained(
    command: list[str],
    *,
    timeout: float,
    cwd: str,
    env: dict[str, str],
    offline: bool = True,
    sandbox: bool = True,
    readable: Iterable[str] = (),
    memory: int = memory_bytes(DEFAULT_MEMORY_GIB),
) -> Finished:
    """Run ``command`` contained (module docstring); never raises for what the command does.
    With ``sandbox`` (the default) in bubblewrap, ``cwd`` its only writable folder and
    ``readable`` the folders it may read that the sandbox hides: the caller checks
    :func:`sandbox_problem` first. ``memory``: the bytes the command may allocate (RLIMIT_DATA,
    set in its own process: an allocation past it fails there, MemoryError in Python)."""
    linux = sys.platform.startswith("linux") and os.path.isdir("/proc")
    argv = supervised(command, timeout=timeout, memory=memory) if linux else list(command)
    if sandbox:
        argv = [*sandbox_argv(cwd, [*readable, *_python_folders(), supervisor_folder()], offline), *argv]
    elif offline:
        argv = [*_offline_prefix(), *argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # without the supervisor (not Linux) the limit is set in the command's own process here
        limit = None if linux or os.name != "posix" else functools.partial(_limit_data, memory)
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=limit,  # only a setrlimit, in the child
        )
        try:
            code: int | None = proc.wait(timeout + (15 if linux else 0))  # the supervisor keeps time
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _end_group(proc.pid)  # whatever is left in its session, supervisor included
            proc.wait()
        stderr = _tail(err)
        if linux and code is not None:
            code, stderr = contained_ending(code, stderr)
        return Finished(code, _tail(out), stderr)
