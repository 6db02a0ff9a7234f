"""The one seam between detection and the machine: every read of the outside world goes here.

Paths are absolute machine paths (``/sys/class/kfd/...``) and are resolved below the root named
by ``PYTEST_ROCM_SYSROOT`` (default ``/``), so tests lay out a fake tree and point the seam at it.
Environment variables, group names, distribution versions and the torch module come through the
same object; tests pass their own (``Seam(sysroot=tmp, environ={...}, torch_loader=...)``) or
subclass it (to make a file raise EPERM, which root cannot get from chmod).

No torch import here: ``load_torch`` imports it when detection asks, never at module import.
"""

from __future__ import annotations

import copy
import errno
import http.client
import os
import platform
import stat
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from types import ModuleType

from pytest_rocm.env.textfile import kind_of

SYSROOT_VARIABLE = "PYTEST_ROCM_SYSROOT"


class SysrootError(ValueError):
    """PYTEST_ROCM_SYSROOT names no usable directory; the message is one line for the user."""


def check_sysroot(value: str | None) -> Path:
    """The sysroot as a Path; raises SysrootError naming the variable and the fault.

    None or an empty string means ``/``.
    """
    if not value:
        return Path("/")
    path = Path(value)
    if not path.exists():
        raise SysrootError(f"{SYSROOT_VARIABLE}={value}: no such directory")
    if not path.is_dir():
        raise SysrootError(f"{SYSROOT_VARIABLE}={value}: not a directory")
    return path


def distribution_version(dist: str) -> str | None:
    """Installed version of a distribution from its metadata (never imports it); None if absent.

    The one reader of distribution versions: detection (through ``Seam``), the ``requires``
    marker, the suites and ``vet --run`` all ask here.
    """
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


class Seam:
    """All I/O detection needs. Each method may raise OSError; detection catches and records."""

    def __init__(
        self,
        sysroot: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
        torch_loader: Callable[[], ModuleType] | None = None,
        groups: Sequence[str] | None = None,
        distributions: Mapping[str, str | None] | None = None,
        python: str | None = None,
        platform_name: str | None = None,
    ) -> None:
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        if sysroot is None:
            sysroot = check_sysroot(self.environ.get(SYSROOT_VARIABLE))
        self.root = Path(sysroot)
        self._torch_loader = torch_loader
        self._groups = None if groups is None else list(groups)
        self._distributions = distributions
        self._python = python
        self._platform = platform_name

    # -- files below the sysroot ------------------------------------------------------------
    def path(self, path: str) -> Path:
        """The real location of the machine path ``path`` (``/sys/...``) under the sysroot."""
        return self.root / path.lstrip("/")

    def read_text(self, path: str) -> str:
        """A regular file's text. Anything else (a FIFO, a device node, a folder) raises OSError
        without blocking: the file is opened non-blocking and checked before it is read."""
        real = self.path(path)
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK)
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise OSError(errno.EINVAL, f"not a regular file ({kind_of(mode)})", str(real))
            with os.fdopen(fd, "rb", closefd=False) as stream:
                data = stream.read()
        finally:
            os.close(fd)
        return data.decode("utf-8", errors="replace")

    def exists(self, path: str) -> bool:
        return self.path(path).exists()

    def is_dir(self, path: str) -> bool:
        return self.path(path).is_dir()

    def listdir(self, path: str) -> list[str]:
        return os.listdir(self.path(path))

    def can_open_rw(self, path: str) -> bool:
        """Whether this process can open ``path`` read-write (how rocminfo tests /dev/kfd)."""
        try:
            fd = os.open(self.path(path), os.O_RDWR)
        except OSError:
            return False
        os.close(fd)
        return True

    # -- the process ------------------------------------------------------------------------
    def getenv(self, name: str) -> str | None:
        return self.environ.get(name)

    def groups(self) -> list[str]:
        """Names of this process's groups (supplementary and primary)."""
        if self._groups is not None:
            return list(self._groups)
        import grp  # POSIX only; imported here so the module imports everywhere

        names: list[str] = []
        for gid in sorted({*os.getgroups(), os.getgid()}):
            try:
                name = grp.getgrgid(gid).gr_name
            except KeyError:
                name = str(gid)
            if name not in names:
                names.append(name)
        return names

    def distribution_version(self, name: str) -> str | None:
        """Installed version of a distribution from its metadata (never imported); None if absent."""
        if self._distributions is not None:
            return self._distributions.get(name)
        return distribution_version(name)

    def requirements(self, name: str) -> list[str] | None:
        """The ``Requires-Dist`` lines of an installed distribution; None if it is not installed."""
        try:
            return list(metadata.requires(name) or [])
        except metadata.PackageNotFoundError:
            return None

    def with_torch_loader(self, loader: Callable[[], ModuleType]) -> Seam:
        """This seam (same root, variables, groups...) with ``loader`` for ``load_torch``."""
        other = copy.copy(self)
        other._torch_loader = loader
        return other

    def torch_version_text(self) -> str | None:
        """The text of the ``torch/version.py`` that ``import torch`` would read, never importing
        torch: "" when nothing would be imported (torch not installed); None when it cannot be told
        that way (a fake torch given to this seam, a torch without that file, a namespace folder)."""
        if self._torch_loader is not None:
            return None
        import importlib.util

        try:
            spec = importlib.util.find_spec("torch")
        except (ImportError, ValueError):
            return None
        if spec is None:
            return ""
        if not spec.origin or not spec.origin.endswith("__init__.py"):
            return None
        try:
            with open(os.path.join(os.path.dirname(spec.origin), "version.py"), encoding="utf-8") as stream:
                return stream.read(1 << 16)
        except (OSError, UnicodeDecodeError):
            return None

    def load_torch(self) -> ModuleType:
        """Import torch (or the test's fake). Raises whatever the import raises."""
        if self._torch_loader is not None:
            return self._torch_loader()
        import torch

        return torch

    # -- commands and the network (rocm-compat setup) ---------------------------------------
    def run(self, argv: Sequence[str]) -> int:
        """Run a command with this process's stdout and stderr (pip's progress passes through);
        its exit status. Raises OSError when it cannot be started."""
        return subprocess.call(list(argv))

    def capture(self, argv: Sequence[str]) -> tuple[int, str]:
        """Run a command and return its exit status and its stdout; its stderr (pip's warnings
        about an experimental command) is kept only when it failed, appended to that."""
        done = subprocess.run(list(argv), capture_output=True, text=True, check=False)
        return done.returncode, done.stdout + (done.stderr if done.returncode else "")

    def url_error(self, url: str, timeout_s: float = 15.0) -> str | None:
        """Why ``url`` cannot be fetched (``<urlopen error [Errno -2] Name or service not known>``),
        or None when it answers. Honours the proxy variables, as pip does."""
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as response:
                response.read(1)
        except urllib.error.HTTPError as exc:
            return None if exc.code == 404 else f"HTTP {exc.code} {exc.reason}"
        except (OSError, ValueError, http.client.HTTPException) as exc:  # InvalidURL: a space in it
            return str(getattr(exc, "reason", None) or exc)
        return None

    def module_dir(self, name: str) -> str | None:
        """The folder a top-level module would be imported from (never importing it); None if absent."""
        import importlib.util

        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
            return None
        return os.path.dirname(spec.origin)

    def python_prefix(self) -> str:
        """The running interpreter's environment (a virtual environment's folder, or the installation's)."""
        import sys

        return sys.prefix

    def python_version(self) -> str:
        return self._python if self._python is not None else platform.python_version()

    def platform(self) -> str:
        return self._platform if self._platform is not None else platform.platform()


__all__ = ["SYSROOT_VARIABLE", "Seam", "SysrootError", "check_sysroot", "distribution_version"]
