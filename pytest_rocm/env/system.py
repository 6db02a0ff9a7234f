"""The kernel's view of this machine: the KFD topology, DRM, /dev/kfd, the installed ROCm.

Every read goes through a :class:`~pytest_rocm.env.seam.Seam`; nothing here raises: each probe is
wrapped and an unreadable file is recorded as ``path: reason`` (``_probe``, shared with the torch
layer in ``env.detect``). A KFD node whose files are corrupt (a value that is not an unsigned
decimal, a ``gfx_target_version`` that names no gfx, a binary file) is dropped with an error
naming its file; the other nodes stay.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from pytest_rocm.env import arch
from pytest_rocm.env.model import SystemGpu, SystemInfo
from pytest_rocm.env.seam import Seam

T = TypeVar("T")

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"


# -- helpers ----------------------------------------------------------------------------------
def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return f"{type(exc).__name__}: {exc}"


def _probe(errors: list[str], what: str, fn: Callable[[], T], default: T) -> T:
    """Run one probe; on any failure record ``what: reason`` and return the default."""
    try:
        return fn()
    except FileNotFoundError:
        return default
    except Exception as exc:
        errors.append(f"{what}: {_reason(exc)}")
        return default


_UNSIGNED_RE = re.compile(r"[0-9]+")


def parse_properties(text: str) -> dict[str, int]:
    """KFD ``properties`` text -> {name: value}; every line is ``name <unsigned decimal>``.

    The kernel prints every property as an unsigned decimal, so anything else (``-1``, ``abc``,
    ``1e5``, ``0x1100``, a NUL byte, a stray line) means a corrupt file: ValueError naming the line.
    Blank lines are skipped.
    """
    if "\x00" in text or "\ufffd" in text:
        raise ValueError("binary data, not a properties file")
    values: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2 or not _UNSIGNED_RE.fullmatch(parts[1]):
            raise ValueError(f"line {number} is not 'name <unsigned decimal>': {line.strip()[:60]!r}")
        values[parts[0]] = int(parts[1])
    return values


def _first_line(seam: Seam, path: str) -> str | None:
    lines = seam.read_text(path).strip().splitlines()
    return lines[0].strip() if lines and lines[0].strip() else None


_VERSION_LINE_RE = re.compile(r"^[0-9]+\.[0-9]+[\w.+~-]*$")


def _version_line(seam: Seam, path: str) -> str | None:
    """A version file's first line (``6.2.4-120``); ValueError when it is no version (a corrupt
    file must not reach the header and the report as garbage)."""
    line = _first_line(seam, path)
    if line is not None and not _VERSION_LINE_RE.match(line):
        raise ValueError(f"not a version: {line[:40]!r}")
    return line


# -- system layer -----------------------------------------------------------------------------
def read_kfd_gpus(seam: Seam, errors: list[str]) -> list[SystemGpu]:
    """The GPU nodes of the KFD topology, in node order (numeric: node 10 after node 2).

    One bad node is dropped with an error naming its file; it never takes the others with it."""
    names: list[str] = _probe(errors, KFD_NODES, lambda: seam.listdir(KFD_NODES), [])
    gpus: list[SystemGpu] = []
    for node in sorted(int(n) for n in names if n.isdecimal() and n.isascii()):
        try:
            gpu = _read_node(seam, node, errors)
        except FileNotFoundError:
            continue
        except _NodeError as exc:
            errors.append(f"{exc.path}: {_reason(exc.cause)}; node {node} dropped")
            continue
        except Exception as exc:  # whatever else: this node only, never the whole topology
            errors.append(f"{KFD_NODES}/{node}: {_reason(exc)}; node {node} dropped")
            continue
        if gpu is not None:
            gpus.append(gpu)
    return gpus


class _NodeError(Exception):
    """A KFD node file that is there but unusable: the node is dropped, the path named."""

    def __init__(self, path: str, cause: BaseException) -> None:
        super().__init__(path)
        self.path = path
        self.cause = cause


def _node_file(path: str, read: Callable[[], T]) -> T:
    try:
        return read()
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise _NodeError(path, exc) from exc


def _read_node(seam: Seam, node: int, errors: list[str]) -> SystemGpu | None:
    base = f"{KFD_NODES}/{node}"
    path = f"{base}/properties"
    props = _node_file(path, lambda: parse_properties(seam.read_text(path)))
    gpu_id = _probe(errors, f"{base}/gpu_id", partial(_read_int, seam, f"{base}/gpu_id"), None)
    simd = props.get("simd_count")
    is_gpu = simd > 0 if simd is not None else bool(gpu_id)
    if not is_gpu:
        return None
    version = props.get("gfx_target_version")
    gfx = _node_file(path, lambda: arch.gfx_from_target_version(version)) if version else None
    minor = props.get("drm_render_minor") or None
    name = _probe(errors, f"{base}/name", partial(_first_line, seam, f"{base}/name"), None)
    return SystemGpu(
        node=node,
        gfx=gfx,
        gfx_target_version=version or None,
        vram=_read_drm_bytes(seam, minor, "mem_info_vram_total", errors),
        render_minor=minor,
        simd_count=simd,
        vendor_id=props.get("vendor_id"),
        device_id=props.get("device_id"),
        unique_id=props.get("unique_id") or None,
        # "ip discovery" is the kernel's placeholder on new ASICs, not a name
        name=name if name and name != "ip discovery" else None,
        gtt=_read_drm_bytes(seam, minor, "mem_info_gtt_total", errors),
    )


def _read_drm_bytes(seam: Seam, minor: int | None, name: str, errors: list[str]) -> int | None:
    """A DRM memory size in bytes (``mem_info_vram_total``, ``mem_info_gtt_total``), joined by
    render minor (never by card index); None when unknown (absent, or not a number: recorded)."""
    if minor is None:
        return None
    path = f"/sys/class/drm/renderD{minor}/device/{name}"
    return _probe(errors, path, lambda: _read_int(seam, path), None)


def _memory_total(seam: Seam) -> int | None:
    for line in seam.read_text("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            value, *unit = line.split(":", 1)[1].split()
            return int(value) * (1024 if unit and unit[0].lower() == "kb" else 1)
    return None


def _rocm_version(seam: Seam) -> str | None:
    rocm_path = seam.getenv("ROCM_PATH")
    for root in ([rocm_path] if rocm_path else []) + ["/opt/rocm"]:
        try:
            return _version_line(seam, f"{root.rstrip('/')}/.info/version")
        except FileNotFoundError:
            continue
    return None


def _is_wsl(seam: Seam) -> bool:
    if seam.exists("/dev/dxg"):
        return True
    return "microsoft" in seam.read_text("/proc/version").lower()


def detect_system(seam: Seam) -> SystemInfo:
    """The kernel's and the OS's view, without torch and without ROCm user space."""
    info = SystemInfo()
    errors = info.errors
    info.kfd = _probe(errors, "/dev/kfd", lambda: seam.exists("/dev/kfd"), False)
    info.kfd_access = _probe(errors, "/dev/kfd", lambda: seam.can_open_rw("/dev/kfd"), None) if info.kfd else None
    info.groups = _probe(errors, "groups", seam.groups, [])
    info.gpus = read_kfd_gpus(seam, errors)
    info.amdgpu_loaded = _probe(errors, "/sys/module/amdgpu", lambda: seam.is_dir("/sys/module/amdgpu"), None)
    # the version file exists only with AMD's DKMS driver: absent is normal, not an error
    info.amdgpu_version = _probe(
        errors, "/sys/module/amdgpu/version", lambda: _version_line(seam, "/sys/module/amdgpu/version"), None
    )
    info.rocm_version = _probe(errors, "rocm version", lambda: _rocm_version(seam), None)
    info.memory_total = _probe(errors, "/proc/meminfo", lambda: _memory_total(seam), None)
    info.wsl = _probe(errors, "/proc/version", lambda: _is_wsl(seam), False)
    return info


def _read_int(seam: Seam, path: str) -> int:
    """An unsigned decimal file (``gpu_id``, ``mem_info_vram_total``); ValueError for anything else."""
    text = seam.read_text(path).strip()
    if not _UNSIGNED_RE.fullmatch(text):
        raise ValueError(f"not an unsigned decimal: {text[:40]!r}")
    return int(text)
