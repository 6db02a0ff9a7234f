"""Finding an Ollama install and the ROCm runtime it carries, through the doctor's Seam.

Ollama does not use the system's ROCm: its Linux bundle puts its own HIP runtime, hipBLAS and
rocBLAS next to the binary (``/usr/local/bin/ollama`` beside ``/usr/local/lib/ollama/``, newer
bundles in ``lib/ollama/rocm/``), and rocBLAS's kernel files there
(``rocblas/library/TensileLibrary_lazy_gfx1030.dat``, ``Kernels.so-000-gfx1031.hsaco``) say which
gfx it has kernels for. The ROCm release is read from the versioned library names, whose last
number is ROCm's (``libhsa-runtime64.so.1.14.60303``: ROCm 6.3.3, as ollama/ollama#8473 quotes).

Reads: files below the sysroot, ``ollama --version`` and, only when the doctor asks and no log was
given, ``journalctl -u ollama --no-pager -b`` (where this user may read the journal). Every probe
failure means "unknown". Neither torch nor pytest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: where the usual installs put the binary (install.sh: /usr/local; distribution packages: /usr)
BINARY_PLACES = ("/usr/local/bin/ollama", "/usr/bin/ollama")
#: where the libraries live when the binary's own prefix has none (a symlinked binary, a package)
LIBRARY_PLACES = ("/usr/local/lib/ollama", "/usr/lib/ollama")
JOURNAL_COMMAND = ("journalctl", "-u", "ollama", "--no-pager", "-b")
#: ``.so.<major>.<minor>.<ROCm as MMmmpp>``: libamdhip64.so.6.3.60303, libhsa-runtime64.so.1.14.60303
_ROCM_BUILD = re.compile(r"\.so\.\d+\.\d+\.(\d)(\d\d)(\d\d)$")
_ROCM_LIBRARY = re.compile(r"^lib(amdhip64|hipblas|rocblas|hsa-runtime64)\.so")
_GFX = re.compile(r"gfx[0-9a-f]+")
_VERSION = re.compile(r"version is (\S+)")


@dataclass
class OllamaInstall:
    binary: str
    #: what ``ollama --version`` said (None: it could not be run, or said no version)
    version: str | None = None
    #: the folder of the bundled ROCm libraries (None: Ollama carries no ROCm: it runs on CPU/CUDA)
    rocm_dir: str | None = None
    rocm_libraries: list[str] = field(default_factory=list)
    #: the bundled ROCm release, from the versioned library names (None: no name says it)
    rocm_version: str | None = None
    #: the gfx the bundled rocBLAS has kernel files for (empty: none found)
    rocblas_gfx: list[str] = field(default_factory=list)


def _candidates(seam: Any) -> list[str]:
    on_path = [f"{d.rstrip('/')}/ollama" for d in (seam.getenv("PATH") or "").split(":") if d.startswith("/")]
    return list(dict.fromkeys([*on_path, *BINARY_PLACES]))


def find_binary(seam: Any) -> str | None:
    for path in _candidates(seam):
        try:
            if seam.exists(path) and not seam.is_dir(path):
                return path
        except OSError:
            continue
    return None


def _listdir(seam: Any, path: str) -> list[str]:
    try:
        return sorted(seam.listdir(path))
    except OSError:
        return []


def _rocm_dir(seam: Any, binary: str) -> str | None:
    """The bundle's ROCm folder: ``lib/ollama/rocm`` (or a versioned ``rocm_v7_1``), else ``lib/ollama``."""
    prefix = binary.rsplit("/", 2)[0] if binary.count("/") >= 2 else ""
    for base in dict.fromkeys([f"{prefix}/lib/ollama", *LIBRARY_PLACES]):
        versioned = sorted((n for n in _listdir(seam, base) if n.startswith("rocm")), reverse=True)
        for folder in (*(f"{base}/{n}" for n in versioned), base):
            if any(_ROCM_LIBRARY.match(n) for n in _listdir(seam, folder)):
                return folder
    return None


def rocm_version_of(names: list[str]) -> str | None:
    """The ROCm release a bundle's versioned library names carry (``6.3.3``); None when none does."""
    for name in names:
        if m := _ROCM_BUILD.search(name):
            return f"{int(m.group(1))}.{int(m.group(2))}.{int(m.group(3))}"
    return None


def rocblas_gfx_of(names: list[str]) -> list[str]:
    """The gfx named by rocBLAS's kernel files (``TensileLibrary_lazy_gfx1030.dat``)."""
    found = {m for n in names for m in _GFX.findall(n)}
    return sorted(found, key=lambda g: (len(g), g))


def version_of(output: str) -> str | None:
    """``ollama version is 0.5.4`` (or ``Warning: client version is 0.5.12``) -> ``0.5.4``."""
    m = _VERSION.search(output)
    return m.group(1) if m else None


def find_install(seam: Any) -> OllamaInstall | None:
    """This machine's Ollama, its version and its bundled ROCm; None when none is installed."""
    binary = find_binary(seam)
    if binary is None:
        return None
    install = OllamaInstall(binary)
    try:
        code, out = seam.capture([str(seam.path(binary)), "--version"])
        install.version = version_of(out) if code == 0 else None
    except OSError:
        install.version = None
    folder = _rocm_dir(seam, binary)
    if folder is not None:
        names = _listdir(seam, folder)
        install.rocm_dir = folder
        install.rocm_libraries = [n for n in names if _ROCM_LIBRARY.match(n)]
        install.rocm_version = rocm_version_of(names)
        install.rocblas_gfx = rocblas_gfx_of(_listdir(seam, f"{folder}/rocblas/library"))
    return install


def read_journal(seam: Any) -> str | None:
    """Ollama's service log of this boot, where this user may read it; None otherwise."""
    try:
        code, out = seam.capture(list(JOURNAL_COMMAND))
    except OSError:
        return None
    return out if code == 0 and "msg=" in out else None
