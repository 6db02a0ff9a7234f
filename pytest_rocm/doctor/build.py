"""The checks of torch: whether it imports, whether its build fits this machine's GPUs, which
devices it sees and what they report. They need the torch half of the Environment."""

from __future__ import annotations

from pytest_rocm.doctor import ids
from pytest_rocm.doctor.facts import (
    ROCM_INDEX,
    VISIBILITY,
    amd_present,
    amd_seen,
    apu_gfxs,
    built_gfx,
    hardware_gfxs,
    install_line,
    kernel_gpus,
    reinstall_command,
    torch_rocm_pair,
    wheel_advice,
)
from pytest_rocm.doctor.model import Check, Extras
from pytest_rocm.env import arch, overrides, wheels
from pytest_rocm.env.model import Device, Environment


def check_torch_installed(env: Environment, extras: Extras) -> Check:
    if env.torch_error is None:
        return Check(ids.TORCH, "ok", f"torch {env.torch} imports")
    if amd_present(env, extras):
        return Check(
            ids.TORCH,
            "fail",
            f"{env.torch_error}, but {amd_seen(env, extras)}",
            install_line(env, extras),
        )
    return Check(ids.TORCH, "warn", env.torch_error, install_line(env, extras))


def check_torch_build(env: Environment, extras: Extras) -> Check:
    if env.torch_error is not None:
        return Check(ids.TORCH_BUILD, "skipped", "torch does not import")
    amd = amd_present(env, extras)
    if amd and env.hip is None:
        kind = f"a CUDA build (torch.version.cuda={env.cuda})" if env.cuda else "a CPU-only build"
        return Check(
            ids.TORCH_BUILD,
            "fail",
            f"torch {env.torch} is {kind} but {amd_seen(env, extras)}: it cannot use AMD GPUs "
            "(a plain `pip install torch` installs the CUDA build)",
            reinstall_command(env),
        )
    if env.hip is not None and not amd:
        return Check(
            ids.TORCH_BUILD,
            "fail",
            f"torch {env.torch} is a ROCm build but this machine has no AMD GPU (it reports 'No HIP GPUs are available')",
            install_line(env, extras),
        )
    what = f"ROCm build (HIP {env.hip})" if env.hip else f"{env.backend} build"
    return Check(ids.TORCH_BUILD, "ok", f"torch {env.torch} is a {what}")


def check_torch_devices(env: Environment, extras: Extras) -> Check:
    if env.hip is None:
        return Check(ids.TORCH_DEVICES, "skipped", "not a ROCm build of torch")
    if env.devices:
        return Check(ids.TORCH_DEVICES, "ok", f"torch sees {len(env.devices)} device(s)")
    if not env.system.gpus:
        return Check(ids.TORCH_DEVICES, "skipped", "the kernel reports no AMD GPU either (see driver, torch-build)")
    if not env.system.kfd or env.system.kfd_access is False:
        return Check(ids.TORCH_DEVICES, "skipped", "/dev/kfd is missing or not accessible (see driver, kfd-access)")
    hidden = [f"{v}={env.variables[v]}" for v in VISIBILITY if env.variables.get(v) is not None]
    failed = [e for e in env.system.errors if e.startswith("torch")]
    evidence = f"torch {env.torch} sees no GPU although the kernel reports {kernel_gpus(env)}"
    evidence += f" ({', '.join(hidden)})" if hidden else ""
    evidence += f"; {failed[0]}" if failed else ""
    if hidden:
        fix = f"unset {', '.join(h.split('=')[0] for h in hidden)}, or list GPUs that exist (0 to {len(env.system.gpus) - 1})"
    else:
        fix = (
            "run `rocminfo` (ROCm) to see whether the runtime finds the GPU, and read "
            "`sudo dmesg | grep -i -e amdgpu -e kfd` for a firmware or initialisation error"
        )
    return Check(ids.TORCH_DEVICES, "fail", evidence, fix)


def _not_built(env: Environment, device: Device) -> bool:
    """Whether the build lacks kernels for a device: detection's verdict when it has one."""
    if device.in_build is not None:
        return not device.in_build
    return device.gfx not in built_gfx(env)


def check_gfx_in_build(env: Environment, extras: Extras) -> Check:
    if not env.arch_list or (env.hip is None and env.cuda is None):
        return Check(ids.GFX_IN_BUILD, "skipped", "no GPU build of torch with a known arch list")
    built = ", ".join(env.arch_list)
    if env.hip is None:  # CUDA: detection judges sm_XY against cubins and PTX
        missing_cuda = [d for d in env.devices if d.in_build is False]
        if not missing_cuda:
            listed = ", ".join(sorted({d.gfx for d in env.devices})) or "no device"
            return Check(ids.GFX_IN_BUILD, "ok", f"{listed} covered by this build's arch list ({built})")
        d = missing_cuda[0]
        return Check(
            ids.GFX_IN_BUILD,
            "fail",
            f"device {d.index} ({d.name}) is {d.gfx}, not in this torch build's arch list ({built}): "
            "kernels fail with 'no kernel image is available for execution on the device'",
            f"install a torch build whose arch list has {d.gfx} (a wheel for a newer CUDA)",
        )
    # (index, name, reported gfx, silicon) of each device the build has no kernels for
    targets: list[tuple[int, str | None, str, str]] = [
        (d.index, d.name, d.gfx, d.hardware_gfx or d.gfx) for d in env.devices if _not_built(env, d)
    ]
    if not env.devices:  # torch sees no device: judge the kernel's GPUs instead
        targets = [(i, None, g, g) for i, g in enumerate(hardware_gfxs(env)) if g not in built_gfx(env)]
    if not targets:
        gfxs = sorted({d.gfx for d in env.devices} or set(hardware_gfxs(env))) or ["no device"]
        return Check(ids.GFX_IN_BUILD, "ok", f"{', '.join(gfxs)} in this build's arch list ({built})")
    index, name, gfx, hardware = targets[0]
    more = f" (and {len(targets) - 1} more device(s))" if len(targets) > 1 else ""
    evidence = (
        f"device {index}{f' ({name})' if name else ''} is {arch.describe(gfx)}, not in this torch build's "
        f"arch list ({built}){more}: the first kernel fails with hipErrorNoBinaryForGpu / invalid device function"
    )
    override = arch.override_for(hardware)
    if override and arch.parse_override(override) in built_gfx(env):
        fix = f"export HSA_OVERRIDE_GFX_VERSION={override} (runs {arch.parse_override(override)} code, the usual fix for {arch.family_of(hardware)} cards)"
    else:
        wheel_index, note, carried = wheel_advice(env)
        fix = (
            f"no {'usual ' if arch.reported_override(hardware) else ''}override is known to work for {hardware}: "
            + (
                f"pip install torch --index-url {wheel_index} (its wheels carry {hardware}"
                + (f"; {note})" if note else ")")
            )
            if carried
            else f"{note}; or build torch from source with PYTORCH_ROCM_ARCH={hardware}"
        )
        reported = arch.reported_override(hardware)
        if reported and arch.parse_override(reported) in built_gfx(env):
            fix += (
                f"; reported to work as a last resort: export HSA_OVERRIDE_GFX_VERSION={reported} "
                f"(runs {arch.parse_override(reported)} code)"
            )
    return Check(ids.GFX_IN_BUILD, "fail", evidence, fix)


def check_reported_gfx(env: Environment, extras: Extras) -> Check:
    """Whether each device reports its own silicon: under an override (or a per-node one) the
    runtime, its errors and this run's results name another gfx than the chip's."""
    if env.backend != "rocm" or not env.devices:
        return Check(ids.REPORTED_GFX, "skipped", "torch sees no ROCm device")
    spoofed = [d for d in env.devices if d.hardware_gfx and d.hardware_gfx != d.gfx]
    if not spoofed:
        unknown = [str(d.index) for d in env.devices if d.hardware_gfx is None]
        about = f" (silicon of device(s) {', '.join(unknown)} unknown)" if unknown else ""
        return Check(ids.REPORTED_GFX, "ok", f"the devices report their own silicon{about}")
    value = env.variables.get("HSA_OVERRIDE_GFX_VERSION")
    per_node = {k: v for k, v in overrides.set_overrides(env.variables).items() if k != overrides.GLOBAL}
    if not value and per_node:
        d = spoofed[0]
        named = ", ".join(f"{k}={v}" for k, v in per_node.items())
        return Check(
            ids.REPORTED_GFX,
            "warn",
            f"device {d.index} reports {d.gfx} but the kernel says it is {d.hardware_gfx}: a per-node override "
            f"is set ({named}); it runs {d.gfx} kernels, and errors and this run's results name {d.gfx}",
            f"nothing to do if that is intended; to test {d.hardware_gfx} itself, unset {', '.join(per_node)}",
        )
    if not value:
        d = spoofed[0]
        return Check(
            ids.REPORTED_GFX,
            "warn",
            f"device {d.index} reports {d.gfx} but the kernel says it is {d.hardware_gfx} (a per-node "
            "HSA_OVERRIDE_GFX_VERSION_<node>, or a device order this tool misread)",
            "look for HSA_OVERRIDE_GFX_VERSION_<node> variables (env | grep HSA_OVERRIDE) and check the order "
            "HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES give",
        )
    try:
        target = arch.parse_override(value)
    except ValueError:
        return Check(ids.REPORTED_GFX, "skipped", "the override is malformed (see hsa-override)")
    if any(arch.override_kinship(d.hardware_gfx or "", target) is None for d in spoofed):
        return Check(ids.REPORTED_GFX, "skipped", "the override crosses instruction sets (see hsa-override)")
    real = ", ".join(sorted({d.hardware_gfx or "" for d in spoofed}))
    return Check(
        ids.REPORTED_GFX,
        "warn",
        f"HSA_OVERRIDE_GFX_VERSION={value} makes {real} report as {target}: it runs {target} kernels, and "
        f"errors and this run's results name {target}, not the silicon",
        f"nothing to do if that is intended; to test {real} itself, unset HSA_OVERRIDE_GFX_VERSION "
        "(which needs a torch build with its kernels)",
    )


def check_mixed_gfx(env: Environment, extras: Extras) -> Check:
    """Devices of different architectures in one process (two cards of different generations)."""
    if env.backend != "rocm" or len(env.devices) < 2:
        return Check(ids.MIXED_GFX, "skipped", "fewer than two ROCm devices")
    gfxs = sorted({d.gfx for d in env.devices})
    if len(gfxs) == 1:
        return Check(ids.MIXED_GFX, "ok", f"{len(env.devices)} devices, all {gfxs[0]}")
    apus = apu_gfxs()
    if any(g in apus for g in gfxs):
        return Check(ids.MIXED_GFX, "skipped", f"devices {', '.join(gfxs)}: an integrated GPU (see igpu)")
    first = env.devices[0].gfx
    same = ",".join(str(d.index) for d in env.devices if d.gfx == first)
    return Check(
        ids.MIXED_GFX,
        "warn",
        f"torch sees devices of different architectures ({', '.join(f'{d.index}:{d.gfx}' for d in env.devices)}): "
        f"a run tests device 0 ({first}) only, and code spread over all devices mixes them",
        f"export HIP_VISIBLE_DEVICES={same} (or pick one with pytest --rocm-gfx)",
    )


def check_pair(env: Environment, extras: Extras) -> Check:
    """Whether PyTorch published this torch build for this ROCm: asked of PyTorch's index when
    ``rocm-compat doctor`` could reach it, else from the bundled snapshot (the line says which)."""
    origin = wheels.build_origin(env.torch)
    pair = torch_rocm_pair(env)
    if origin is None or pair is None:
        return Check(ids.TORCH_ROCM_PAIR, "skipped", "not a ROCm wheel with a +rocmX.Y version")
    answer = extras.torch_on_index
    if answer is not None and answer.published:
        return Check(ids.TORCH_ROCM_PAIR, "ok", f"{env.torch} is on {answer.said_by()}")
    if origin.kind == "amd":
        return Check(
            ids.TORCH_ROCM_PAIR, "ok", f"{env.torch} is one of {origin.what}: paired with its ROCm at build time"
        )
    if origin.kind == "pytorch-nightly":
        return Check(ids.TORCH_ROCM_PAIR, "ok", f"{env.torch} is a PyTorch nightly: paired at build time")
    if origin.kind == "other":
        return Check(ids.TORCH_ROCM_PAIR, "ok", f"{env.torch} is {origin.what}: PyTorch's published pairs do not apply")
    minor, rocm = pair
    published = wheels.published_pairs().get(minor)
    fix = f"pip install torch=={minor}.* --index-url {ROCM_INDEX.format(published[-1])}" if published else None
    if answer is not None:
        return Check(
            ids.TORCH_ROCM_PAIR, "warn", f"{env.torch} is not on {answer.said_by()}: PyTorch never published it", fix
        )
    said = f"the bundled snapshot of {wheels.snapshot_date()}" + (f"; {extras.index_note}" if extras.index_note else "")
    if published is None:
        return Check(ids.TORCH_ROCM_PAIR, "skipped", f"no data on the ROCm wheels of torch {minor} ({said})")
    if any(rocm == p or rocm.startswith(p + ".") or p.startswith(rocm + ".") for p in published):
        return Check(ids.TORCH_ROCM_PAIR, "ok", f"torch {minor} was published for ROCm {rocm} ({said})")
    return Check(
        ids.TORCH_ROCM_PAIR,
        "warn",
        f"torch {minor} was never published for ROCm {rocm} (published: {', '.join(published)}; {said})",
        fix,
    )


def check_miopen(env: Environment, extras: Extras) -> Check:
    if env.backend != "rocm" or extras.miopen_writable is None:
        return Check(ids.MIOPEN_CACHE, "skipped", "not a ROCm setup, or the cache folder was not probed")
    if extras.miopen_writable:
        return Check(ids.MIOPEN_CACHE, "ok", f"MIOpen can write its kernel cache at {extras.miopen_path}")
    return Check(
        ids.MIOPEN_CACHE,
        "warn",
        f"MIOpen cannot write its kernel cache at {extras.miopen_path}: every run recompiles kernels, some fail",
        "export MIOPEN_USER_DB_PATH=/tmp/miopen-$USER (or fix the folder's owner); deleting a broken cache fixes some MIOpen errors",
    )
