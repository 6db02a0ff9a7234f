"""The checks of the machine: what the kernel, the device nodes and the variables say, without
torch. These are ``SYSTEM_CHECKS``: the pytest header runs them before any test asked for torch.
"""

from __future__ import annotations

from pytest_rocm.doctor.facts import amd_present, built_gfx, hardware_gfxs, kernel_gpus, knowledge
from pytest_rocm.doctor.model import Check, Extras
from pytest_rocm.env import arch
from pytest_rocm.env.model import Environment


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
    if env.system.gpus:  # the topology is there (from the host's /sys), the device node is not
        return Check(
            "driver",
            "fail",
            f"the KFD topology lists {kernel_gpus(env)} but there is no /dev/kfd: the ROCm runtime cannot reach them",
            "in a container, pass the devices: --device /dev/kfd --device /dev/dri (docker, podman); "
            "on the host, read `sudo dmesg | grep -i kfd` for why the driver did not create it",
        )
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


def check_probes(env: Environment, extras: Extras) -> Check:
    errors = env.system.errors
    if not errors:
        return Check("probes", "ok", "every file and call detection reads answered")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return Check(
        "probes",
        "warn",
        f"{len(errors)} probe(s) failed: {errors[0]}{more}; the other checks judged without those facts",
        "`rocm-compat env` lists what could not be read; in a container, run with the host's /sys "
        "and the devices (--device /dev/kfd --device /dev/dri)",
    )
