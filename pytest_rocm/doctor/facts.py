"""Knowledge the checks decide from (``data/doctor.json``) and the small facts they derive from an
Environment. Pure: no I/O beyond reading the bundled data."""

from __future__ import annotations

from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_rocm._resources import load_json
from pytest_rocm.doctor.model import Extras
from pytest_rocm.env import arch
from pytest_rocm.env.model import Environment

ROCM_INDEX = "https://download.pytorch.org/whl/rocm{}"
#: the variables that hide GPUs from HIP (CUDA_VISIBLE_DEVICES is honoured by HIP too)
VISIBILITY = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


def knowledge() -> dict[str, Any]:
    data: dict[str, Any] = load_json("doctor.json")
    return data


def amd_present(env: Environment, extras: Extras) -> bool:
    return bool(env.system.gpus) or bool(extras.pci_amd_gpus)


def hardware_gfxs(env: Environment) -> list[str]:
    """The real silicon of every AMD GPU, in KFD order (the order HIP enumerates them)."""
    gfxs = [g.gfx for g in env.system.gpus if g.gfx]
    if not gfxs:
        gfxs = [d.hardware_gfx or d.gfx for d in env.devices if d.gfx.startswith("gfx")]
    return gfxs


def kernel_gpus(env: Environment) -> str:
    """``1 AMD GPU (gfx90a)``, ``2 AMD GPUs (gfx1030, gfx1036)``: the KFD topology's GPUs."""
    n = len(env.system.gpus)
    names = sorted({g.gfx or "unknown gfx" for g in env.system.gpus})
    return f"{n} AMD GPU{'s' if n != 1 else ''} ({', '.join(names)})"


def amd_seen(env: Environment, extras: Extras) -> str:
    """Where an AMD GPU was seen, to follow "but": ``the kernel reports 1 AMD GPU (gfx90a)``."""
    if env.system.gpus:
        return f"the kernel reports {kernel_gpus(env)}"
    return f"there is an AMD GPU at {', '.join(extras.pci_amd_gpus) or 'the PCI bus'}"


def built_gfx(env: Environment) -> set[str]:
    """The base gfx names of the build's arch list (a source build may list ``gfx90a:xnack-``)."""
    return {arch.split_arch(a)[0] for a in env.arch_list}


def torch_rocm_pair(env: Environment) -> tuple[str, str] | None:
    """(torch minor, ROCm version) of a ROCm wheel from ``2.6.0+rocm6.2.4``; None otherwise."""
    if not env.torch or "+rocm" not in env.torch:
        return None
    public, local = env.torch.split("+", 1)
    rocm = local.removeprefix("rocm").split(".git")[0]
    try:
        release = Version(public).release
    except InvalidVersion:
        return None
    return f"{release[0]}.{release[1]}", rocm


def suggested_index(env: Environment) -> str:
    """The ROCm wheel index to install from: the newest published one for the installed ROCm's
    major.minor, else the newest PyTorch publishes."""
    pairs: dict[str, list[str]] = knowledge()["torch_rocm_wheels"]["pairs"]
    published = sorted({r for rs in pairs.values() for r in rs}, key=Version)
    installed = env.system.rocm_version
    if installed:
        try:
            want = Version(installed).release[:2]
            same = [r for r in published if Version(r).release[:2] == want]
            if same:
                return ROCM_INDEX.format(same[-1])
        except InvalidVersion:
            pass
    return ROCM_INDEX.format(published[-1])


def reinstall_command(env: Environment) -> str:
    return f"pip uninstall -y torch torchvision torchaudio && pip install torch --index-url {suggested_index(env)}"
