"""The checks of the machine: what the kernel, the device nodes and the variables say, without
torch. These are ``SYSTEM_CHECKS``: the pytest header runs them before any test asked for torch.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from pytest_rocm.doctor import ids
from pytest_rocm.doctor.facts import (
    amd_present,
    amd_seen,
    apu_gfxs,
    built_gfx,
    hardware_gfxs,
    install_line,
    kernel_gpus,
    knowledge,
    nvidia_present,
)
from pytest_rocm.doctor.model import Check, Extras
from pytest_rocm.env import arch, overrides
from pytest_rocm.env.model import Environment


def _dxg_advice(env: Environment) -> str:
    """The HSA_ENABLE_DXG_DETECTION part of the WSL fix: needed from ROCm 7.0 until 7.13 made
    /dev/dxg detection the default."""
    if env.variables.get("HSA_ENABLE_DXG_DETECTION"):
        return ""
    facts = knowledge()["wsl_rocm7"]
    rocm = env.system.rocm_version or env.rocm
    try:
        version = Version(rocm.split("-")[0]) if rocm else None
    except InvalidVersion:
        version = None
    needed, default = facts["needed_from"], facts["default_from"]
    if version is None:
        return f"; with ROCm {needed} up to the release before {default} also export HSA_ENABLE_DXG_DETECTION=1"
    if Version(needed) <= version < Version(default):
        return f"; ROCm {rocm} also needs export HSA_ENABLE_DXG_DETECTION=1 (the default from ROCm {default})"
    return ""


def check_wsl(env: Environment, extras: Extras) -> Check:
    if not env.system.wsl:
        return Check(ids.WSL, "ok", "not running under WSL")
    return Check(
        ids.WSL,
        "warn",
        "running under WSL: there is no /dev/kfd, GPUs are reached through /dev/dxg",
        "WSL needs AMD's WSL stack: the WSL-enabled Adrenalin driver, ROCm for WSL and the torch "
        "wheels AMD lists for WSL (pytorch.org wheels report 'No HIP GPUs are available' there)" + _dxg_advice(env),
    )


def check_accelerator(env: Environment, extras: Extras) -> Check:
    """Whether this machine has a GPU at all, said plainly: on a CPU-only machine every other
    check is "skipped", and "no problems found" alone would hide why no test reaches a GPU."""
    if amd_present(env, extras):
        return Check(ids.ACCELERATOR, "ok", f"AMD GPU: {amd_seen(env, extras).removeprefix('there is ')}")
    if nvidia_present(env, extras):
        where = ", ".join(extras.pci_nvidia_gpus) or "its driver's device files"
        return Check(ids.ACCELERATOR, "ok", f"NVIDIA GPU ({where})")
    nvidia = "no NVIDIA device" if extras.nvidia_driver is not None else "NVIDIA devices not probed"
    torch = f"torch {env.torch} can" if env.torch else "torch (not installed) could"
    return Check(
        ids.ACCELERATOR,
        "warn",
        f"no GPU on this machine: no /dev/kfd and no AMD GPU on the PCI bus, {nvidia}; {torch} only use "
        "the CPU here, so GPU tests skip and `rocm-compat run` measures a CPU reference baseline",
        f"the CPU build is the one for this machine: {install_line(env, extras)}; "
        "to see what would run on a GPU you lack, plan it: pytest --rocm-gfx=gfx942",
    )


def check_driver(env: Environment, extras: Extras) -> Check:
    if env.system.wsl:
        return Check(ids.DRIVER, "skipped", "WSL has no amdgpu kernel driver of its own")
    if not amd_present(env, extras):
        return Check(ids.DRIVER, "skipped", "no AMD GPU on the PCI bus or in the KFD topology")
    if env.system.kfd and env.system.gpus:
        version = env.system.amdgpu_version or "the kernel's own (no DKMS version file)"
        return Check(ids.DRIVER, "ok", f"amdgpu loaded ({version}), {len(env.system.gpus)} GPU node(s) in KFD")
    if env.system.gpus:  # the topology is there (from the host's /sys), the device node is not
        return Check(
            ids.DRIVER,
            "fail",
            f"the KFD topology lists {kernel_gpus(env)} but there is no /dev/kfd: the ROCm runtime cannot reach them",
            "in a container, pass the devices: --device /dev/kfd --device /dev/dri (docker, podman); "
            "on the host, read `sudo dmesg | grep -i kfd` for why the driver did not create it",
        )
    where = ", ".join(extras.pci_amd_gpus) or "the PCI bus"
    return Check(
        ids.DRIVER,
        "fail",
        f"AMD GPU at {where} but no KFD topology or /dev/kfd: the amdgpu driver is not loaded",
        "sudo modprobe amdgpu, then read `sudo dmesg | grep -i -e amdgpu -e kfd`; after a kernel "
        "upgrade rebuild the DKMS module (`sudo dkms autoinstall`, or reinstall amdgpu-dkms, or boot "
        "the previous kernel); with Secure Boot on, enroll the module's MOK key or turn it off",
    )


def check_kfd_access(env: Environment, extras: Extras) -> Check:
    if not env.system.kfd:
        return Check(ids.KFD_ACCESS, "skipped", "/dev/kfd does not exist")
    groups = ", ".join(env.system.groups) or "none"
    if env.system.kfd_access is not False:
        return Check(ids.KFD_ACCESS, "ok", f"/dev/kfd opens read-write (groups: {groups})")
    wanted = knowledge()["kfd_groups"]["list"]
    missing = [g for g in wanted if g not in env.system.groups]
    return Check(
        ids.KFD_ACCESS,
        "fail",
        f"/dev/kfd exists but this user cannot open it read-write (groups: {groups}; missing: {', '.join(missing) or 'none'})",
        "sudo usermod -a -G render,video $USER, then log out and in again; in a container add "
        "--device /dev/kfd --device /dev/dri --group-add render --group-add video",
    )


def _repair_override(value: str) -> str | None:
    """What the user meant: ``9.0.a`` -> ``9.0.10`` (gfx digits instead of numbers), ``11.0.0\\r``
    -> ``11.0.0`` (a CRLF .env file); None when nothing valid is in sight."""
    stripped = value.strip()
    if stripped != value and _valid(stripped):
        return stripped
    parts = stripped.split(".")
    if len(parts) != 3:
        return None
    try:
        repaired = ".".join(str(int(p, 16)) for p in parts)
    except ValueError:
        return None
    return repaired if _valid(repaired) else None


def _valid(value: str) -> bool:
    try:
        arch.parse_override(value)
    except ValueError:
        return False
    return True


def _gpu_nodes(env: Environment) -> list[tuple[int | None, str]]:
    """(KFD node, silicon gfx) of each AMD GPU; node None when only torch's view is known."""
    nodes: list[tuple[int | None, str]] = [(g.node, g.gfx) for g in env.system.gpus if g.gfx]
    return nodes or [(None, g) for g in hardware_gfxs(env)]


def check_override(env: Environment, extras: Extras) -> Check:
    """HSA_OVERRIDE_GFX_VERSION and its per-node form, judged as libhsakmt applies them: the
    per-node variable of a GPU node wins over the global one; a value the runtime rejects fails
    the whole topology; code of another instruction set crashes."""
    set_vars = overrides.set_overrides(env.variables)
    if not set_vars:
        return Check(ids.HSA_OVERRIDE, "ok", "HSA_OVERRIDE_GFX_VERSION is not set")
    nodes = _gpu_nodes(env)
    known_nodes = {n for n, _ in nodes if n is not None}
    # a per-node variable of a node that is no GPU node is never read by the runtime
    stray = [
        k for k in set_vars if k != overrides.GLOBAL and known_nodes and int(k.rsplit("_", 1)[1]) not in known_nodes
    ]
    for name, value in set_vars.items():
        if name in stray:
            continue
        try:
            arch.parse_override(value, variable=name)
        except ValueError as exc:
            repaired = _repair_override(value)
            fix = f"export {name}={repaired}" if repaired else f"unset {name}"
            return Check(ids.HSA_OVERRIDE, "fail", f"{exc}: the runtime rejects it and finds no GPU", fix)
    if not nodes:
        listed = ", ".join(f"{k}={v}" for k, v in set_vars.items())
        return Check(
            ids.HSA_OVERRIDE, "warn", f"{listed} is set but no AMD GPU is visible", f"unset {', '.join(set_vars)}"
        )
    applied: list[tuple[str, str, str, str]] = []  # (variable, value, silicon, target)
    for node, gfx in nodes:
        found = overrides.applying(env.variables, node) if node is not None else None
        if found is None and node is None and overrides.GLOBAL in set_vars:
            found = (overrides.GLOBAL, set_vars[overrides.GLOBAL])
        if found is not None:
            applied.append((found[0], found[1], gfx, arch.parse_override(found[1])))
    # one GPU given code of another instruction set is enough to crash the process
    for name, value, gfx, target in applied:
        if arch.override_kinship(gfx, target) is None:
            usual = arch.override_for(gfx)
            return Check(
                ids.HSA_OVERRIDE,
                "fail",
                f"{name}={value} makes {arch.describe(gfx)} run {arch.describe(target)} code: a different "
                "instruction set (no common family or generic target), which crashes or hangs",
                f"unset {name} and use a torch/ROCm build with native kernels for {gfx}"
                + (f", or the family's usual value {usual}" if usual else ""),
            )
    needing = [(n, v, g, t) for n, v, g, t in applied if not arch.override_unneeded(g, t, built_gfx(env))]
    if stray:
        gpu_nodes = ", ".join(str(n) for n in sorted(known_nodes))
        return Check(
            ids.HSA_OVERRIDE,
            "warn",
            f"{', '.join(stray)} names no KFD GPU node (GPU nodes: {gpu_nodes}; CPU nodes count too): the runtime ignores it",
            f"use HSA_OVERRIDE_GFX_VERSION_<node> with a GPU node: {gpu_nodes}",
        )
    if not needing:
        listed = ", ".join(sorted({g for _, _, g, _ in applied} or {g for _, g in nodes}))
        return Check(
            ids.HSA_OVERRIDE,
            "warn",
            f"{', '.join(f'{k}={v}' for k, v in set_vars.items())} is set but {listed} is itself supported by this "
            "build (or the override names it): it is not needed",
            f"unset {', '.join(set_vars)}",
        )
    said = "; ".join(f"{n}={v}: {g} runs {t} code ({arch.override_kinship(g, t)})" for n, v, g, t in needing)
    return Check(ids.HSA_OVERRIDE, "ok", said)


def _silicon_of_devices(env: Environment) -> list[str]:
    """Each device's gfx as the kernel (KFD) reports it, in HIP's order: torch's gfx says what an
    override made of a device (HSA_OVERRIDE_GFX_VERSION=11.0.0 turns a gfx1036 iGPU into
    "gfx1100"), so it cannot tell an iGPU. When a device is not tied to its KFD node, the kernel's
    list of GPU nodes is HIP's order."""
    silicon = [d.hardware_gfx for d in env.devices]
    if silicon and all(silicon):
        return [g for g in silicon if g]
    return hardware_gfxs(env) or [d.gfx for d in env.devices]


def check_igpu(env: Environment, extras: Extras) -> Check:
    apus = apu_gfxs()
    gfxs = _silicon_of_devices(env)
    if len(gfxs) < 2:
        return Check(ids.IGPU, "skipped", f"{len(gfxs)} AMD GPU(s): nothing to hide")
    integrated = [i for i, g in enumerate(gfxs) if g in apus]
    discrete = [i for i, g in enumerate(gfxs) if g not in apus]
    hidden = env.variables.get("HIP_VISIBLE_DEVICES") or env.variables.get("ROCR_VISIBLE_DEVICES")
    if not integrated or not discrete or (hidden and env.devices and len(env.devices) == len(discrete)):
        return Check(ids.IGPU, "ok", f"devices: {', '.join(gfxs)}" + (f" (visible: {hidden})" if hidden else ""))
    igpus = ", ".join(f"{i}:{gfxs[i]}" for i in integrated)
    return Check(
        ids.IGPU,
        "warn",
        f"the integrated GPU ({igpus}) is enumerated next to the discrete card; code that picks device 0 "
        "or spreads over all devices lands on it",
        f"export HIP_VISIBLE_DEVICES={','.join(str(i) for i in discrete)}",
    )


def check_memory(env: Environment, extras: Extras) -> Check:
    """RAM against discrete VRAM: a model that fills the card is loaded through RAM first. An APU's
    VRAM is a BIOS carve-out of that same memory (GTT is its other pool): no such comparison."""
    apus = apu_gfxs()
    gib = 1024**3
    ram = env.system.memory_total
    integrated = [g for g in env.system.gpus if g.gfx in apus]
    discrete = [g for g in env.system.gpus if g.gfx not in apus]
    vram = sum(g.vram or 0 for g in discrete)
    if not env.system.gpus:
        vram = sum(d.total_memory or 0 for d in env.devices if (d.hardware_gfx or d.gfx) not in apus)
    unified = ", ".join(
        f"{g.gfx}: {(g.vram or 0) / gib:.1f} GiB carve-out + {(g.gtt or 0) / gib:.1f} GiB GTT" for g in integrated
    )
    if not vram or not ram:
        if integrated and ram:
            return Check(
                ids.MEMORY, "ok", f"APU ({unified}) shares the system's {ram / gib:.1f} GiB RAM: unified memory"
            )
        return Check(ids.MEMORY, "skipped", "system memory or VRAM unknown")
    about = f"; APU ({unified}) shares system memory" if integrated else ""
    if ram >= vram:
        return Check(ids.MEMORY, "ok", f"{ram / gib:.1f} GiB RAM for {vram / gib:.1f} GiB VRAM{about}")
    return Check(
        ids.MEMORY,
        "warn",
        f"{ram / gib:.1f} GiB RAM is less than the GPUs' {vram / gib:.1f} GiB VRAM: a model that fills the card "
        f"is loaded through RAM first and the process is killed{about}",
        "add RAM or swap, or load weights straight to the device (safetensors, device_map)",
    )


def check_probes(env: Environment, extras: Extras) -> Check:
    errors = env.system.errors
    if not errors:
        return Check(ids.PROBES, "ok", "every file and call detection reads answered")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return Check(
        ids.PROBES,
        "warn",
        f"{len(errors)} probe(s) failed: {errors[0]}{more}; the other checks judged without those facts",
        "`rocm-compat env` lists what could not be read; in a container, run with the host's /sys "
        "and the devices (--device /dev/kfd --device /dev/dri)",
    )
