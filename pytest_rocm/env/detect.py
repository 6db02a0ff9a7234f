"""Detect the Environment of this machine: the kernel's view (KFD, DRM, /dev/kfd) and torch's.

Every read goes through a :class:`~pytest_rocm.env.seam.Seam`. ``detect_environment`` never raises:
each probe is wrapped, an unreadable file is recorded in ``system.errors`` (``path: reason``)
and detection goes on with what it has. Unknown hardware degrades to the raw ``gfxNNNN`` name,
a GPU node without ``gfx_target_version`` (old kernels) to ``gfx: null``.

How a torch device is tied to its KFD node (``hardware_gfx``): HIP enumerates the GPU agents in
KFD node order, so after dropping CPU nodes and applying ROCR_VISIBLE_DEVICES, then
HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES, which HIP also honours) as index lists, torch
device i is the i-th remaining node. When that cannot be done (UUIDs in a visibility list, a
count that disagrees with torch's) and no HSA_OVERRIDE_GFX_VERSION (nor a per-node
HSA_OVERRIDE_GFX_VERSION_<node>) is set, the runtime reports the silicon as it is, so hardware_gfx =
gfx; under an override it stays null (unknown).

Variables: the names of ``VARIABLES``, and ``HSA_OVERRIDE_GFX_VERSION_<node>`` for each KFD GPU node
where it is set (libhsakmt reads that one first, then the global one: ``env.overrides``).
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any, TypeVar

from pytest_rocm.env import arch, overrides
from pytest_rocm.env.model import (
    LIBRARIES,
    VARIABLES,
    Device,
    Environment,
    SystemGpu,
    torch_backend,
)
from pytest_rocm.env.seam import Seam, SysrootError
from pytest_rocm.env.system import _probe, _reason, detect_system

T = TypeVar("T")

#: distributions that provide a library under another name (ROCm wheels ship triton as these)
LIBRARY_ALIASES: dict[str, tuple[str, ...]] = {
    "triton": ("triton", "pytorch-triton-rocm", "pytorch-triton"),
    # the PyPI (CUDA) triton alone: next to a ROCm torch it breaks torch.compile (doctor: triton)
    "triton-pypi": ("triton",),
    "flash_attn": ("flash_attn", "flash-attn"),
}
_ROCM_LOCAL_RE = re.compile(r"rocm([0-9]+(?:\.[0-9]+)*)")


# -- torch layer ------------------------------------------------------------------------------
def rocm_from_torch(torch_version: str | None, hip: str | None) -> str | None:
    """The ROCm version of a torch build: from ``+rocm6.2.4`` (also ``.dev...+rocm6.3``,
    ``+rocm6.4.1.git1ded221d``, ``+rocm7.10.0a20251120`` -> 7.10.0), else major.minor of
    ``torch.version.hip`` (``6.2.41133-dd7f95766`` -> 6.2); None for non-ROCm builds."""
    if torch_version and "+" in torch_version:
        m = _ROCM_LOCAL_RE.match(torch_version.split("+", 1)[1])
        if m:
            return m.group(1)
    if hip:
        m = re.match(r"([0-9]+)\.([0-9]+)", hip)
        if m:
            return f"{m.group(1)}.{m.group(2)}"
    return None


def in_build(arch_name: str, arch_list: list[str]) -> bool | None:
    """Whether a torch build with ``arch_list`` has kernels for ``arch_name``; None if unknown.

    gfx: the base name must be listed. sm_XY: a cubin for sm_XZ with Z <= Y runs (same major), and
    a PTX ``compute_NN`` with NN <= XY is compiled for it at load time.
    """
    if not arch_list or not arch_name or arch_name == "unknown":
        return None
    base, _ = arch.split_arch(arch_name)
    listed = {arch.split_arch(a)[0] for a in arch_list}
    m = re.match(r"^sm_([0-9])([0-9]+)", base)
    if not m:
        return base in listed
    major, minor = int(m.group(1)), int(m.group(2))
    for entry in listed:
        e = re.match(r"^(sm|compute)_([0-9])([0-9]+)", entry)
        if not e:
            continue
        e_major, e_minor = int(e.group(2)), int(e.group(3))
        if e.group(1) == "sm" and e_major == major and e_minor <= minor:
            return True
        if e.group(1) == "compute" and (e_major, e_minor) <= (major, minor):
            return True
    return False


def _visible(value: str | None, items: list[T]) -> list[T] | None:
    """Apply a ``*_VISIBLE_DEVICES`` index list; None when it cannot be applied (UUIDs...)."""
    if value is None:
        return items
    tokens = [t.strip() for t in value.split(",") if t.strip()]
    if not all(t.isascii() and t.isdigit() for t in tokens):  # as the runtime: ASCII digits only
        return None
    return [items[int(t)] for t in tokens if int(t) < len(items)]


def visible_kfd_gpus(gpus: list[SystemGpu], variables: dict[str, str | None]) -> list[SystemGpu] | None:
    """The KFD GPU nodes torch enumerates, in torch's order; None when that cannot be told."""
    nodes = _visible(variables.get("ROCR_VISIBLE_DEVICES"), gpus)
    if nodes is None:
        return None
    hip = variables.get("HIP_VISIBLE_DEVICES")
    return _visible(hip if hip is not None else variables.get("CUDA_VISIBLE_DEVICES"), nodes)


def _torch_devices(torch: Any, backend: str, errors: list[str]) -> list[Device]:
    devices: list[Device] = []
    count = int(torch.cuda.device_count())
    for i in range(count):
        props = torch.cuda.get_device_properties(i)
        if backend == "rocm":
            full = str(getattr(props, "gcnArchName", "") or "unknown")
        else:
            full = f"sm_{props.major}{props.minor}"
        gfx, features = arch.split_arch(full)
        devices.append(
            Device(
                index=i,
                name=str(getattr(props, "name", "") or f"device {i}"),
                arch=full,
                gfx=gfx,
                features=features,
                total_memory=getattr(props, "total_memory", None),
                compute_units=getattr(props, "multi_processor_count", None),
            )
        )
    return devices


def _torch_error(exc: BaseException) -> str:
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "torch":
        return "torch is not installed"
    return f"torch failed to import: {type(exc).__name__}: {exc}"


def detect_torch(env: Environment, seam: Seam) -> None:
    """Fill the torch fields of ``env`` (backend, versions, arch list, devices) in place."""
    errors = env.system.errors
    try:
        torch = seam.load_torch()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        env.torch_error = _torch_error(exc)
        return
    env.torch = str(getattr(torch, "__version__", "") or "") or None
    version = getattr(torch, "version", None)
    env.hip = getattr(version, "hip", None) or None
    env.cuda = getattr(version, "cuda", None) or None
    env.rocm = rocm_from_torch(env.torch, env.hip) if env.hip else None
    build = torch_backend(torch)
    if build == "cpu":
        return
    env.arch_list = _probe(errors, "torch.cuda.get_arch_list()", lambda: list(torch.cuda.get_arch_list()), [])
    available = _probe(errors, "torch.cuda.is_available()", lambda: bool(torch.cuda.is_available()), False)
    if available:
        env.devices = _probe(errors, "torch devices", lambda: _torch_devices(torch, build, errors), [])
    env.backend = build if env.devices else "cpu"


def per_node_variables(seam: Seam, gpus: list[SystemGpu], errors: list[str]) -> dict[str, str | None]:
    """``HSA_OVERRIDE_GFX_VERSION_<node>`` of each GPU node that has it set: {name: value}."""
    found: dict[str, str | None] = {}
    for gpu in gpus:
        name = overrides.per_node_name(gpu.node)
        value = _probe(errors, name, partial(seam.getenv, name), None)
        if value is not None:
            found[name] = value
    return found


def assign_hardware_gfx(env: Environment) -> None:
    """Set each device's hardware_gfx (from KFD, see the module docstring) and in_build."""
    override = overrides.set_overrides(env.variables)
    nodes = visible_kfd_gpus(env.system.gpus, env.variables) if env.backend == "rocm" else None
    tied = nodes is not None and len(nodes) == len(env.devices)
    for i, device in enumerate(env.devices):
        device.in_build = in_build(device.arch, env.arch_list)
        if env.backend != "rocm":
            continue
        if tied and nodes is not None and nodes[i].gfx:
            device.hardware_gfx = nodes[i].gfx
        elif not override:
            device.hardware_gfx = device.gfx


# -- the whole ----------------------------------------------------------------------------------
def detect_environment(seam: Seam | None = None) -> Environment:
    """Detect everything; never raises (failures are in ``system.errors`` / ``torch_error``)."""
    env = Environment()
    if seam is None:
        try:
            seam = Seam()
        except SysrootError as exc:
            # callers that can report a usage error check the sysroot first (seam.check_sysroot)
            env.system.errors.append(str(exc))
            return env
    errors = env.system.errors
    env.variables = {name: _probe(errors, name, partial(seam.getenv, name), None) for name in VARIABLES}
    env.libraries = {name: _probe(errors, name, partial(_library_version, seam, name), None) for name in LIBRARIES}
    env.python = _probe(errors, "python", seam.python_version, "")
    env.platform = _probe(errors, "platform", seam.platform, "")
    try:
        env.system = detect_system(seam)
        env.system.errors[:0] = errors
    except Exception as exc:
        env.system.errors.append(f"system: {_reason(exc)}")
    env.variables.update(per_node_variables(seam, env.system.gpus, env.system.errors))
    try:
        detect_torch(env, seam)
        assign_hardware_gfx(env)
    except Exception as exc:
        env.system.errors.append(f"torch: {_reason(exc)}")
    return env


def detect_system_environment(seam: Seam) -> Environment:
    """What needs no torch: the kernel's view (sysfs) and the variables, HSA_OVERRIDE_GFX_VERSION_<node>
    of each GPU node included (what the runtime applies first). Milliseconds: for the header
    before the environment is detected."""
    env = Environment(system=detect_system(seam), variables={v: seam.getenv(v) for v in VARIABLES})
    env.variables.update(per_node_variables(seam, env.system.gpus, env.system.errors))
    return env


def _library_version(seam: Seam, name: str) -> str | None:
    for dist in LIBRARY_ALIASES.get(name, (name,)):
        version = seam.distribution_version(dist)
        if version:
            return version
    return None
