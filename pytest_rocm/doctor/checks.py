"""The checks of ``rocm-compat doctor``: pure functions of an Environment and a few extra facts.

Each check answers one question a new AMD user spends a day on, with the evidence it saw and the
fix as a command or a sentence. Knowledge (published PyTorch/ROCm pairs, APU targets, override
values) comes from data files (``data/doctor.json``, ``data/gfx.json``), never from code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_rocm._resources import load_json
from pytest_rocm.env import arch
from pytest_rocm.env.model import Environment

STATUSES = ("ok", "warn", "fail", "skipped")
ROCM_INDEX = "https://download.pytorch.org/whl/rocm{}"


@dataclass
class Check:
    id: str
    status: str
    evidence: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Extras:
    """Facts doctor needs beyond the Environment (probed through the same seam)."""

    #: PCI addresses of AMD display/accelerator devices, seen even when no driver is loaded
    pci_amd_gpus: list[str] = field(default_factory=list)
    #: the MIOpen user database folder and whether this user can write there (None: not probed)
    miopen_path: str | None = None
    miopen_writable: bool | None = None


def knowledge() -> dict[str, Any]:
    data: dict[str, Any] = load_json("doctor.json")
    return data


# -- small facts derived from the environment ---------------------------------------------
def amd_present(env: Environment, extras: Extras) -> bool:
    return bool(env.system.gpus) or bool(extras.pci_amd_gpus)


def hardware_gfxs(env: Environment) -> list[str]:
    """The real silicon of every AMD GPU, in KFD order (the order HIP enumerates them)."""
    gfxs = [g.gfx for g in env.system.gpus if g.gfx]
    if not gfxs:
        gfxs = [d.hardware_gfx or d.gfx for d in env.devices if d.gfx.startswith("gfx")]
    return gfxs


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


# -- the checks ----------------------------------------------------------------------------
def check_wsl(env: Environment, extras: Extras) -> Check:
    if not env.system.wsl:
        return Check("wsl", "ok", "not running under WSL")
    return Check(
        "wsl",
        "warn",
        "running under WSL: there is no /dev/kfd, GPUs are reached through /dev/dxg",
        "WSL needs AMD's WSL stack: the WSL-enabled Adrenalin driver, ROCm for WSL and the torch "
        "wheels AMD lists for WSL (pytorch.org wheels report 'No HIP GPUs are available' there)",
    )


def check_driver(env: Environment, extras: Extras) -> Check:
    if env.system.wsl:
        return Check("driver", "skipped", "WSL has no amdgpu kernel driver of its own")
    if not amd_present(env, extras):
        return Check("driver", "skipped", "no AMD GPU on the PCI bus or in the KFD topology")
    if env.system.kfd and env.system.gpus:
        version = env.system.amdgpu_version or "the kernel's own (no DKMS version file)"
        return Check("driver", "ok", f"amdgpu loaded ({version}), {len(env.system.gpus)} GPU node(s) in KFD")
    where = ", ".join(extras.pci_amd_gpus) or "the PCI bus"
    return Check(
        "driver",
        "fail",
        f"AMD GPU at {where} but no KFD topology or /dev/kfd: the amdgpu driver is not loaded",
        "sudo modprobe amdgpu, then read `sudo dmesg | grep -i -e amdgpu -e kfd`; after a kernel "
        "upgrade rebuild the DKMS module (`sudo dkms autoinstall`, or reinstall amdgpu-dkms, or boot "
        "the previous kernel); with Secure Boot on, enroll the module's MOK key or turn it off",
    )


def check_kfd_access(env: Environment, extras: Extras) -> Check:
    if not env.system.kfd:
        return Check("kfd-access", "skipped", "/dev/kfd does not exist")
    groups = ", ".join(env.system.groups) or "none"
    if env.system.kfd_access is not False:
        return Check("kfd-access", "ok", f"/dev/kfd opens read-write (groups: {groups})")
    wanted = knowledge()["kfd_groups"]["list"]
    missing = [g for g in wanted if g not in env.system.groups]
    return Check(
        "kfd-access",
        "fail",
        f"/dev/kfd exists but this user cannot open it read-write (groups: {groups}; missing: {', '.join(missing) or 'none'})",
        "sudo usermod -a -G render,video $USER, then log out and in again; in a container add "
        "--device /dev/kfd --device /dev/dri --group-add render --group-add video",
    )


def check_torch_installed(env: Environment, extras: Extras) -> Check:
    if env.torch_error is None:
        return Check("torch", "ok", f"torch {env.torch} imports")
    if amd_present(env, extras):
        return Check(
            "torch",
            "fail",
            f"AMD GPU present but {env.torch_error}",
            f"pip install torch --index-url {suggested_index(env)}",
        )
    return Check("torch", "warn", env.torch_error, "install the torch build for your platform (pip install torch)")


def check_torch_build(env: Environment, extras: Extras) -> Check:
    if env.torch_error is not None:
        return Check("torch-build", "skipped", "torch does not import")
    amd = amd_present(env, extras)
    if amd and env.hip is None:
        kind = f"a CUDA build (torch.version.cuda={env.cuda})" if env.cuda else "a CPU-only build"
        gfx = ", ".join(hardware_gfxs(env)) or "an AMD GPU"
        return Check(
            "torch-build",
            "fail",
            f"torch {env.torch} is {kind} but the kernel reports {gfx}: it cannot use AMD GPUs "
            "(a plain `pip install torch` installs the CUDA build)",
            reinstall_command(env),
        )
    if env.hip is not None and not amd:
        return Check(
            "torch-build",
            "fail",
            f"torch {env.torch} is a ROCm build but this machine has no AMD GPU (it reports 'No HIP GPUs are available')",
            "install the build for this machine's GPU (the CUDA build on NVIDIA: pip install torch)",
        )
    what = f"ROCm build (HIP {env.hip})" if env.hip else f"{env.backend} build"
    return Check("torch-build", "ok", f"torch {env.torch} is a {what}")


def check_gfx_in_build(env: Environment, extras: Extras) -> Check:
    if env.hip is None or not env.arch_list:
        return Check("gfx-in-build", "skipped", "no ROCm torch build with a known arch list")
    targets = [(d.index, d.gfx, d.hardware_gfx or d.gfx) for d in env.devices]
    if not targets:  # torch sees no device: judge the kernel's GPUs instead
        targets = [(i, g, g) for i, g in enumerate(hardware_gfxs(env))]
    built_set = built_gfx(env)
    missing = [(i, g, hw) for i, g, hw in targets if g not in built_set]
    built = ", ".join(env.arch_list)
    if not missing:
        listed = ", ".join(sorted({g for _, g, _ in targets})) or "no device"
        return Check("gfx-in-build", "ok", f"{listed} in this build's arch list ({built})")
    index, gfx, hardware = missing[0]
    evidence = (
        f"device {index} is {arch.describe(gfx)}, not in this torch build's arch list ({built}): "
        "the first kernel fails with hipErrorNoBinaryForGpu / invalid device function"
    )
    override = arch.override_for(hardware)
    if override and arch.parse_override(override) in built_set:
        fix = f"export HSA_OVERRIDE_GFX_VERSION={override} (runs {arch.parse_override(override)} code, the usual fix for {arch.family_of(hardware)} cards)"
    else:
        fix = (
            f"no override is known to work for {gfx}: use a torch/ROCm release built for it, or build "
            f"torch from source with PYTORCH_ROCM_ARCH={gfx}"
        )
    return Check("gfx-in-build", "fail", evidence, fix)


def _repair_override(value: str) -> str | None:
    """``9.0.a`` -> ``9.0.10``: what the user meant when they wrote gfx digits instead of numbers."""
    parts = value.strip().split(".")
    if len(parts) != 3:
        return None
    try:
        return ".".join(str(int(p, 16)) for p in parts)
    except ValueError:
        return None


def check_override(env: Environment, extras: Extras) -> Check:
    value = env.variables.get("HSA_OVERRIDE_GFX_VERSION")
    if not value:
        return Check("hsa-override", "ok", "HSA_OVERRIDE_GFX_VERSION is not set")
    try:
        target = arch.parse_override(value)
    except ValueError as exc:
        repaired = _repair_override(value)
        fix = f"export HSA_OVERRIDE_GFX_VERSION={repaired}" if repaired else "unset HSA_OVERRIDE_GFX_VERSION"
        return Check("hsa-override", "fail", f"{exc}: the runtime rejects it", fix)
    hardware = hardware_gfxs(env)
    if not hardware:
        return Check(
            "hsa-override",
            "warn",
            f"HSA_OVERRIDE_GFX_VERSION={value} is set but no AMD GPU is visible",
            "unset HSA_OVERRIDE_GFX_VERSION",
        )
    # Judge every GPU the override applies to: an iGPU next to a supported card may need it
    # while the card does not, and one GPU of another family is enough to crash the process.
    foreign = [g for g in hardware if arch.family_of(g) != arch.family_of(target)]
    if foreign:
        real = foreign[0]
        return Check(
            "hsa-override",
            "fail",
            f"HSA_OVERRIDE_GFX_VERSION={value} makes {arch.describe(real)} run {arch.describe(target)} "
            "code: a different instruction set, which crashes or hangs",
            "unset HSA_OVERRIDE_GFX_VERSION and use a torch/ROCm build with native kernels for "
            f"{real}" + (f", or the family's usual value {arch.override_for(real)}" if arch.override_for(real) else ""),
        )
    needing = [g for g in hardware if g != target and g not in built_gfx(env)]
    if not needing:
        listed = ", ".join(sorted(set(hardware)))
        return Check(
            "hsa-override",
            "warn",
            f"HSA_OVERRIDE_GFX_VERSION={value} is set but {listed} is itself supported by this build: it is not needed",
            "unset HSA_OVERRIDE_GFX_VERSION",
        )
    return Check(
        "hsa-override",
        "ok",
        f"HSA_OVERRIDE_GFX_VERSION={value}: {', '.join(needing)} runs {target} code (same family {arch.family_of(target)})",
    )


def check_igpu(env: Environment, extras: Extras) -> Check:
    apus = set(knowledge()["apu_gfx"]["list"])
    gfxs = [d.gfx for d in env.devices] or hardware_gfxs(env)
    if len(gfxs) < 2:
        return Check("igpu", "skipped", f"{len(gfxs)} AMD GPU(s): nothing to hide")
    integrated = [i for i, g in enumerate(gfxs) if g in apus]
    discrete = [i for i, g in enumerate(gfxs) if g not in apus]
    hidden = env.variables.get("HIP_VISIBLE_DEVICES") or env.variables.get("ROCR_VISIBLE_DEVICES")
    if not integrated or not discrete or (hidden and env.devices and len(env.devices) == len(discrete)):
        return Check("igpu", "ok", f"devices: {', '.join(gfxs)}" + (f" (visible: {hidden})" if hidden else ""))
    igpus = ", ".join(f"{i}:{gfxs[i]}" for i in integrated)
    return Check(
        "igpu",
        "warn",
        f"the integrated GPU ({igpus}) is enumerated next to the discrete card; code that picks device 0 "
        "or spreads over all devices lands on it",
        f"export HIP_VISIBLE_DEVICES={','.join(str(i) for i in discrete)}",
    )


def check_pair(env: Environment, extras: Extras) -> Check:
    pair = torch_rocm_pair(env)
    if pair is None:
        return Check("torch-rocm-pair", "skipped", "not a ROCm wheel with a +rocmX.Y version")
    minor, rocm = pair
    if ".dev" in (env.torch or "") or "git" in (env.torch or "") or "a0" in (env.torch or ""):
        return Check("torch-rocm-pair", "ok", f"{env.torch} is a nightly or AMD-built wheel: paired at build time")
    published = knowledge()["torch_rocm_wheels"]["pairs"].get(minor)
    if published is None:
        return Check("torch-rocm-pair", "skipped", f"no data on the ROCm wheels of torch {minor}")
    if any(rocm == p or rocm.startswith(p + ".") or p.startswith(rocm + ".") for p in published):
        return Check("torch-rocm-pair", "ok", f"torch {minor} was published for ROCm {rocm}")
    return Check(
        "torch-rocm-pair",
        "warn",
        f"torch {minor} was never published for ROCm {rocm} (published: {', '.join(published)})",
        f"pip install torch=={minor}.* --index-url {ROCM_INDEX.format(published[-1])}",
    )


def check_miopen(env: Environment, extras: Extras) -> Check:
    if env.backend != "rocm" or extras.miopen_writable is None:
        return Check("miopen-cache", "skipped", "not a ROCm setup, or the cache folder was not probed")
    if extras.miopen_writable:
        return Check("miopen-cache", "ok", f"MIOpen can write its kernel cache at {extras.miopen_path}")
    return Check(
        "miopen-cache",
        "warn",
        f"MIOpen cannot write its kernel cache at {extras.miopen_path}: every run recompiles kernels, some fail",
        "export MIOPEN_USER_DB_PATH=/tmp/miopen-$USER (or fix the folder's owner); deleting a broken cache fixes some MIOpen errors",
    )


def check_memory(env: Environment, extras: Extras) -> Check:
    vram = sum(g.vram or 0 for g in env.system.gpus) or sum(d.total_memory or 0 for d in env.devices)
    ram = env.system.memory_total
    if not vram or not ram:
        return Check("memory", "skipped", "system memory or VRAM unknown")
    gib = 1024**3
    if ram >= vram:
        return Check("memory", "ok", f"{ram / gib:.1f} GiB RAM for {vram / gib:.1f} GiB VRAM")
    return Check(
        "memory",
        "warn",
        f"{ram / gib:.1f} GiB RAM is less than the GPUs' {vram / gib:.1f} GiB VRAM: a model that fills the card "
        "is loaded through RAM first and the process is killed",
        "add RAM or swap, or load weights straight to the device (safetensors, device_map)",
    )


CHECKS: tuple[Callable[[Environment, Extras], Check], ...] = (
    check_wsl,
    check_driver,
    check_kfd_access,
    check_torch_installed,
    check_torch_build,
    check_gfx_in_build,
    check_override,
    check_igpu,
    check_pair,
    check_miopen,
    check_memory,
)


def diagnose(env: Environment, extras: Extras | None = None) -> list[Check]:
    extras = extras or Extras()
    return [check(env, extras) for check in CHECKS]


def problems(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.status in ("warn", "fail")]


#: the checks that need no torch: what the pytest header can afford before any test asked for torch
SYSTEM_CHECKS: tuple[Callable[[Environment, Extras], Check], ...] = (
    check_wsl,
    check_driver,
    check_kfd_access,
    check_override,
    check_igpu,
    check_memory,
)


def diagnose_system(env: Environment, extras: Extras | None = None) -> list[Check]:
    extras = extras or Extras()
    return [check(env, extras) for check in SYSTEM_CHECKS]
